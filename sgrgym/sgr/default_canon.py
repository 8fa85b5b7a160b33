"""Default canonicalization for legacy rubrics (SGR-Bench section 3.4).

Published (legacy) rubrics declare no per-field rules, only free-text notes. Section 3.4 says
the reviewers' canonicalization covers "whitespace and punctuation differences, date and unit
formatting, capitalization, abbreviation variants" and never merges "entities that are
distinct in the target source". This module does exactly that, per column, with the column's
kind inferred from its reference values:

- ``integer`` / ``decimal``: every reference value is a number, all with the same unit (or
  none): thousands separators, a leading ``+``, trailing zeros and the column's unit (its
  reference unit, and ``%``) are formatting, so ``1,234`` = ``1234`` and ``3%`` = ``3.0``;
  a different unit (``3 km`` against ``3 m``) is not stripped, so it stays different;
- ``date``: every reference value is a date (ISO, or with a month name) and at least one has
  a month: dates compare as ISO ``YYYY[-MM[-DD]]`` (``9 March 2021`` = ``2021-03-09``);
  all-numeric dates other than ISO (``03/09/2021``) are ambiguous and are not read;
- ``identifier``: single tokens holding a digit (``CWE-79``, ``PMC6464331``), and numbers
  that are codes (a zero-padded number, or a column named like ``*_id``/``version``/
  ``code``): compared without case and without punctuation at the token's edges, never
  reformatted as numbers (``2011.08010`` stays distinct from ``2011.0801``);
- ``text``: without case, with quotes and dashes unified, punctuation at word edges dropped
  (``St. Louis`` = ``St Louis``), dotted initialisms joined (``U.S.`` = ``US``) and, in
  values of two or more words, the abbreviation variants of :data:`ABBREVIATIONS` expanded
  (``Mt. Hood`` = ``Mount Hood``, ``&`` = ``and``).

Every value first gets the text rules of :func:`~sgrgym.sgr.canon.clean_text` (Unicode NFKC,
whitespace, Markdown decoration). A prediction value that does not read as the column's kind
gets the ``text`` canonical form, so it only equals a reference value written the same way.

Distinct entities are never merged: when the default form of a column would make two
different reference values equal (``Co`` and ``CO``), that column is compared strictly
(text rules only) and the reason is reported. A column whose legacy note
(``normalization.<column>``) asks for case-sensitive, exact or verbatim comparison is
compared strictly too. ``--strict`` turns the defaults off for every column.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from sgrgym.sgr.canon import _MINUS, _canon_date, _number_text, _parse_number, clean_text

ABBREVIATIONS = {
    "&": "and",
    "assn": "association",
    "assoc": "association",
    "co": "company",
    "corp": "corporation",
    "dept": "department",
    "ft": "fort",
    "inc": "incorporated",
    "intl": "international",
    "ltd": "limited",
    "mt": "mount",
    "natl": "national",
    "no": "number",
    "st": "saint",
    "univ": "university",
    "vs": "versus",
}
_NULLS = frozenset({"", "-", "n/a", "na", "none", "null", "nan", "unknown"})
_ID_NAME = re.compile(r"(?:^|[_\s-])(id|ids|code|version|release|accession|doi|pmid|pmcid|no)$")
_QUOTES = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u2010": "-",
        "\u2011": "-",
    }
)
_LEAD_PUNCT = re.compile(r"(?:^|(?<=\s))[\"'(\[{¿¡]+")
_TRAIL_PUNCT = re.compile(r"[\"')\]},.;:!?]+(?=\s|$)")
_INITIALISM = re.compile(r"(?<![\w.])(?:[^\W\d_]\.){2,}")
_NUMBER = re.compile(
    r"^(?P<pre>[$€£¥])?\s*(?P<num>[+-]?(?:\d[\d,' ]*(?:\.\d+)?|\.\d+))\s*"
    r"(?P<unit>%|[^\W\d_][\w/°²³]*)?$"
)
_ISO_OUT = re.compile(r"^\d{4}(?:-\d\d(?:-\d\d)?)?$")


class ColumnKind(str, Enum):
    integer = "integer"
    decimal = "decimal"
    date = "date"
    identifier = "identifier"
    text = "text"
    strict = "strict"  # text rules only: --strict, or the defaults would merge references


def _text_form(text: str) -> str:
    text = text.translate(_QUOTES).translate(_MINUS)
    text = _INITIALISM.sub(lambda m: m.group(0).replace(".", ""), text)
    words = _TRAIL_PUNCT.sub("", _LEAD_PUNCT.sub("", text)).casefold().split()
    if len(words) < 2:  # a lone "Co" is a symbol more likely than "Company"
        return " ".join(words)
    return " ".join(ABBREVIATIONS.get(word, word) for word in words)


def _identifier_form(text: str) -> str:
    text = text.translate(_QUOTES).translate(_MINUS)
    return _TRAIL_PUNCT.sub("", _LEAD_PUNCT.sub("", text)).casefold()


def _number_parts(text: str) -> tuple[str, str | None] | None:
    """``(number text, unit)`` of a number written with an optional unit, else ``None``."""
    match = _NUMBER.match(text.translate(_MINUS))
    if match is None:
        return None
    number = match.group("num").strip()
    if _parse_number(number) is None:
        return None
    return number, match.group("pre") or match.group("unit")


def _date_form(text: str) -> str | None:
    iso = _canon_date(text, None)
    return iso if _ISO_OUT.match(iso) else None


class DefaultCanon:
    """Canonicalizer of one legacy column: ``DefaultCanon(kind, unit)(raw) -> canonical text``.

    Same interface as :class:`~sgrgym.sgr.canon.FieldCanon` (memoized ``__call__``,
    ``matches``, ``exact_match``).
    """

    __slots__ = ("_cache", "exact_match", "kind", "unit")

    def __init__(self, kind: ColumnKind, unit: str | None = None) -> None:
        self.kind = kind
        self.unit = unit
        self.exact_match = True
        self._cache: dict[str, str] = {}

    def matches(self, pred: str, gold: str) -> bool:
        return pred == gold

    def __call__(self, value: str) -> str:
        cached = self._cache.get(value)
        if cached is None:
            cached = self._canonical(clean_text(value))
            if len(self._cache) < 65536:
                self._cache[value] = cached
        return cached

    def _canonical(self, text: str) -> str:
        kind = self.kind
        if kind is ColumnKind.strict:
            return text
        if kind is ColumnKind.identifier:
            return _identifier_form(text)
        if kind in (ColumnKind.integer, ColumnKind.decimal):
            parts = _number_parts(text)
            if parts is not None and parts[1] in (None, "%", self.unit):
                number = _parse_number(parts[0])
                if number is not None and abs(number.adjusted()) <= 30:
                    return _number_text(number)
        elif kind is ColumnKind.date:
            iso = _date_form(text.casefold())
            if iso is not None:
                return iso
        return _text_form(text)


@dataclass(frozen=True)
class ColumnCanon:
    """The default canonicalization chosen for one column, and why."""

    column: str
    kind: ColumnKind
    unit: str | None = None
    note: str | None = None  # set when the defaults were turned off for this column

    def canon(self) -> DefaultCanon:
        return DefaultCanon(self.kind, self.unit)


def infer_kind(column: str, values: Sequence[str]) -> tuple[ColumnKind, str | None]:
    """The kind (and unit) of a column from its reference values (module docstring)."""
    present = [v for v in (clean_text(v) for v in values) if v.casefold() not in _NULLS]
    if not present:
        return ColumnKind.text, None
    parts = [_number_parts(v) for v in present]
    dates = [_date_form(v.casefold()) for v in present]
    # A date column: every value a date, and at least one with a month that is not also a
    # plain number (``1999.5`` reads as a decimal, not as May 1999).
    if all(d is not None for d in dates) and any(
        d is not None and len(d) > 4 and p is None for d, p in zip(dates, parts, strict=True)
    ):
        return ColumnKind.date, None
    if all(p is not None for p in parts):
        numbers = [p for p in parts if p is not None]
        units = {unit for _, unit in numbers if unit is not None}
        padded = any(len(n) > 1 and n.lstrip("+-")[:1] == "0" and "." not in n for n, _ in numbers)
        if len(units) <= 1 and not padded and not _ID_NAME.search(column.casefold()):
            unit = next(iter(units), None)
            if all("." not in n for n, _ in numbers):
                return ColumnKind.integer, unit
            return ColumnKind.decimal, unit
        if not units:
            return ColumnKind.identifier, None
    if all(" " not in v and any(c.isdigit() for c in v) for v in present):
        return ColumnKind.identifier, None
    return ColumnKind.text, None


_STRICT_NOTE = re.compile(r"case[- ]?sensitive|\bexact(?:ly)?\b|\bverbatim\b|\bas written\b", re.I)


def column_canons(
    columns: Sequence[str],
    gold_rows: Sequence[Sequence[str]],
    strict: bool = False,
    notes: Mapping[str, object] | None = None,
) -> tuple[ColumnCanon, ...]:
    """Choose each column's canonicalization; turn it off where it would merge references.

    ``notes`` are the legacy per-column notes (``normalization.<column>``): a column whose
    note asks for case-sensitive, exact or verbatim comparison is compared strictly.
    """
    out = []
    for i, column in enumerate(columns):
        if strict:
            out.append(ColumnCanon(column, ColumnKind.strict))
            continue
        note = (notes or {}).get(column)
        if isinstance(note, str) and _STRICT_NOTE.search(note):
            reason = f"normalization note {note!r} asks for exact comparison; compared strictly"
            out.append(ColumnCanon(column, ColumnKind.strict, None, reason))
            continue
        values = [row[i] for row in gold_rows]
        kind, unit = infer_kind(column, values)
        chosen = ColumnCanon(column, kind, unit)
        canon = chosen.canon()
        seen: dict[str, str] = {}
        for value in values:
            text, form = clean_text(value), canon(value)
            other = seen.setdefault(form, text)
            if other != text:
                note = (
                    f"{kind.value} canonicalization would make reference values {other!r} and "
                    f"{text!r} equal; compared strictly"
                )
                chosen = ColumnCanon(column, ColumnKind.strict, None, note)
                break
        out.append(chosen)
    return tuple(out)
