"""Answer canonicalization (SGR-Bench section 3.4, "reviewer-defined answer canonicalization").

Every field value, reference or prediction, goes through the same two steps:

1. text rules (all fields): Unicode NFKC, Markdown links reduced to their text, ``\\|``
   unescaped, whitespace trimmed and collapsed, surrounding ``*`` / backticks stripped;
2. the field's declared rule (:class:`~sgrgym.sgr.rubric.FieldRule`): ``uppercase``,
   ``aliases``, then the type — integers and decimals compared as exact numbers (after declared
   units, scale, offset and precision), id lists split on ``;``/``,``/whitespace, deduplicated
   and sorted, dates written as ISO ``YYYY[-MM[-DD]]``.

Nothing else is matched loosely: no case folding, no edit distance, unless the task declares it
(``case_insensitive``, ``fold_diacritics``, ``ignore_punctuation``).
A value that does not parse as its declared type keeps its canonical text, so it can only
equal a reference value that is the same text. A field's declared ``comparison`` rule
(:class:`~sgrgym.sgr.rubric.Comparison`) can replace both steps (``exact``,
``exact_after_outer_whitespace_trim``), add case folding (``case_insensitive``) or compare
numbers within a tolerance (``numeric_tolerance``, :meth:`FieldCanon.matches`).

Legacy rubrics, which declare no rules, get the default canonicalization of
:mod:`sgrgym.sgr.default_canon` instead of step 2.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import lru_cache

from sgrgym.sgr.rubric import Comparison, FieldRule, FieldType

_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_SPACE = re.compile(r"\s+")
_WRAP = "*`"
_MINUS = str.maketrans({"\u2212": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-"})
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(?:[, ']\d{3})+(?:\.\d+)?$")
_ID_SPLIT = re.compile(r"[;,\s]+")
_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for name in names
}
_ISO_DATE = re.compile(r"^(\d{4})(?:[-/.](\d{1,2})(?:[-/.](\d{1,2})(?:[T ].*)?)?)?$")
_MONTH_FIRST = re.compile(r"^([a-z]+)\.?\s+(?:(\d{1,2})(?:st|nd|rd|th)?,?\s+)?(\d{4})$")
_DAY_FIRST = re.compile(r"^(\d{1,2})(?:st|nd|rd|th)?\s+([a-z]+)\.?,?\s+(\d{4})$")


@lru_cache(maxsize=65536)
def clean_text(value: str) -> str:
    """Apply the text rules shared by every field (step 1 above)."""
    text = unicodedata.normalize("NFKC", value)
    text = _LINK.sub(r"\1", text)
    text = text.replace("\\|", "|")
    text = _SPACE.sub(" ", text).strip()
    while len(text) >= 2 and text[0] in _WRAP and text[-1] in _WRAP:
        text = text.strip(_WRAP).strip()
    return text


def fold_text(text: str, diacritics: bool, punctuation: bool) -> str:
    """``text`` without combining marks (``diacritics``) and/or punctuation (``punctuation``:
    every Unicode punctuation character becomes a space, then spaces are collapsed)."""
    if diacritics:
        decomposed = unicodedata.normalize("NFKD", text)
        text = unicodedata.normalize(
            "NFC", "".join(c for c in decomposed if not unicodedata.combining(c))
        )
    if punctuation:
        text = "".join(" " if unicodedata.category(c).startswith("P") else c for c in text)
        text = _SPACE.sub(" ", text).strip()
    return text


def _parse_number(text: str) -> Decimal | None:
    text = text.translate(_MINUS)
    if _THOUSANDS.match(text):
        text = re.sub(r"[, ']", "", text)
    if not text or not re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", text):
        return None
    try:
        return Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern above admits only valid text
        return None


def _number_text(value: Decimal) -> str:
    if value == 0:
        return "0"
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _iso(year: int, month: int | None = None, day: int | None = None) -> str | None:
    try:
        if day is not None and month is not None:
            return date(year, month, day).isoformat()
        if month is not None:
            return date(year, month, 1).isoformat()[:7]
        return f"{year:04d}"
    except ValueError:
        return None


def _canon_date(text: str, pattern: str | None) -> str:
    if pattern:
        try:
            return datetime.strptime(text, pattern).date().isoformat()
        except ValueError:
            pass
    lowered = text.lower()
    match = _ISO_DATE.match(lowered)
    if match:
        y, m, d = match.groups()
        iso = _iso(int(y), int(m) if m else None, int(d) if d else None)
        return iso or text
    match = _MONTH_FIRST.match(lowered)
    if match and match.group(1) in _MONTHS:
        day = match.group(2)
        iso = _iso(int(match.group(3)), _MONTHS[match.group(1)], int(day) if day else None)
        return iso or text
    match = _DAY_FIRST.match(lowered)
    if match and match.group(2) in _MONTHS:
        iso = _iso(int(match.group(3)), _MONTHS[match.group(2)], int(match.group(1)))
        return iso or text
    return text


class FieldCanon:
    """Canonicalizer of one column: ``FieldCanon(rule)(raw) -> canonical text``.

    Built once per task column; results are memoized because reference and prediction
    values repeat heavily across a run.
    """

    __slots__ = ("_aliases", "_cache", "_units", "exact_match", "rule")

    def __init__(self, rule: FieldRule) -> None:
        self.rule = rule
        aliases: dict[str, str] = {}
        as_written = rule.comparison in (
            Comparison.exact,
            Comparison.exact_after_outer_whitespace_trim,
        )
        for variant, canonical in rule.aliases.items():
            key, value = (
                (variant, canonical) if as_written else (clean_text(variant), clean_text(canonical))
            )
            if rule.uppercase:
                key, value = key.upper(), value.upper()
            aliases[key] = value
        self._aliases = aliases
        units = [(clean_text(u), m) for u, m in rule.units.items()]
        if rule.unit:
            units.append((clean_text(rule.unit), Decimal(1)))
        # Longest unit first so that "mg/L" wins over "g".
        self._units = sorted((u for u in units if u[0]), key=lambda u: -len(u[0]))
        self._cache: dict[str, str] = {}
        # Whether two canonical values match exactly when they are equal (every rule but
        # numeric_tolerance): the scorer then compares strings and skips :meth:`matches`.
        self.exact_match = rule.comparison is not Comparison.numeric_tolerance

    def matches(self, pred: str, gold: str) -> bool:
        """Whether a canonical predicted value counts as the canonical reference value."""
        if pred == gold or self.exact_match:
            return pred == gold
        a, b = _parse_number(pred), _parse_number(gold)
        if a is None or b is None:
            return False
        allowed = max(self.rule.tolerance or 0, (self.rule.relative_tolerance or 0) * abs(b))
        return abs(a - b) <= allowed

    def __call__(self, value: str) -> str:
        cached = self._cache.get(value)
        if cached is None:
            cached = self._canonical(value)
            if len(self._cache) < 65536:
                self._cache[value] = cached
        return cached

    def _canonical(self, value: str) -> str:
        rule = self.rule
        if rule.comparison in (Comparison.exact, Comparison.exact_after_outer_whitespace_trim):
            text = value if rule.comparison is Comparison.exact else value.strip()
            if rule.uppercase:
                text = text.upper()
            return self._aliases.get(text, text)
        text = clean_text(value)
        if rule.comparison is Comparison.case_insensitive:
            return self._typed(text).casefold()
        return self._typed(text)

    def _typed(self, text: str) -> str:
        rule = self.rule
        if rule.type is FieldType.id_list:
            return self._id_list(text)
        if rule.uppercase:
            text = text.upper()
        text = self._aliases.get(text, text)
        if rule.type in (FieldType.integer, FieldType.decimal):
            return self._number(text)
        if rule.type is FieldType.date:
            return _canon_date(text, rule.format)
        return fold_text(text, rule.fold_diacritics, rule.ignore_punctuation)

    def _id_list(self, text: str) -> str:
        items = set()
        for item in _ID_SPLIT.split(text):
            if not item:
                continue
            if self.rule.uppercase:
                item = item.upper()
            items.add(self._aliases.get(item, item))
        return ";".join(sorted(items))

    def _number(self, text: str) -> str:
        number_text, multiplier = text, Decimal(1)
        for unit, unit_multiplier in self._units:
            if text.endswith(unit):
                number_text, multiplier = text[: -len(unit)].strip(), unit_multiplier
                break
            if text.startswith(unit):
                number_text, multiplier = text[len(unit) :].strip(), unit_multiplier
                break
        number = _parse_number(number_text)
        if number is None or abs(number.adjusted()) > 30:
            return text
        rule = self.rule
        value = number * multiplier * rule.scale + rule.offset
        if rule.type is FieldType.integer:
            if value != value.to_integral_value():
                return text
            return str(int(value))
        if rule.precision is not None:
            value = value.quantize(Decimal(1).scaleb(-rule.precision), rounding=ROUND_HALF_UP)
        return _number_text(value)


def canonical_value(value: str, rule: FieldRule) -> str:
    """Canonical text of one field value under ``rule`` (both steps of the module doc)."""
    return FieldCanon(rule)(value)
