"""Rubric models: the legacy ``normalization`` block and the typed rubric.

Published SGR-Bench records carry ``rubric.normalization`` (separators, ``schema``, a
free-text ``dedup_key`` and per-column notes). Newer exports, and sgrgym's own task files,
carry a typed rubric: ``columns``, ``row_key`` and per-field rules. See
``specs/sgr-task-format.md`` in the project documentation and ``docs/sgr-bench.md``
("SGR-Bench task files").
"""

from __future__ import annotations

from decimal import Decimal
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


def _unescape_separator(value: str) -> str:
    """Read a separator written as an escape sequence (``"\\n"``) as the character."""
    return {"\\n": "\n", "\\t": "\t", "\\r\\n": "\n"}.get(value, value)


class FieldType(str, Enum):
    """How a field's values are compared after text canonicalization."""

    string = "string"
    integer = "integer"
    decimal = "decimal"
    id_list = "id_list"
    date = "date"


class Comparison(str, Enum):
    """How a typed field's prediction is compared with the reference (``fields.<c>.comparison``).

    ``exact`` and ``exact_after_outer_whitespace_trim`` are the rule names published typed
    rubrics use; the others are variants a task may declare.

    - ``canonical`` (the default): the text rules, then the declared type rule, then equality;
    - ``exact``: the value as written (only the spaces padding a cell in a table are not part
      of it), after the declared ``aliases`` and ``uppercase``; no text or type rules;
    - ``exact_after_outer_whitespace_trim``: ``exact`` after trimming leading and trailing
      whitespace of any kind (tabs, newlines, no-break spaces);
    - ``case_insensitive``: ``canonical``, then compared without regard to case;
    - ``numeric_tolerance``: a number (``integer``/``decimal`` type) within ``tolerance``
      (absolute) or ``relative_tolerance`` (share of the reference value) of the reference;
      not allowed on row-key columns (alignment needs one canonical value per key).
    """

    canonical = "canonical"
    exact = "exact"
    exact_after_outer_whitespace_trim = "exact_after_outer_whitespace_trim"
    case_insensitive = "case_insensitive"
    numeric_tolerance = "numeric_tolerance"


COMPARISONS = tuple(c.value for c in Comparison)


class FieldRule(BaseModel):
    """Declared comparison rule for one column (typed rubric ``fields.<column>``).

    - ``aliases``: variant text → canonical text, applied after text canonicalization
      (and after ``uppercase``); for ``id_list`` applied to each item.
    - ``uppercase``: compare in upper case.
    - ``unit``: unit text that may surround the number (``"%"``, ``"$"``, ``"mg/L"``); stripped.
    - ``units``: other unit texts with their multiplier into ``unit`` (``{"km": 1000}``).
    - ``scale`` / ``offset``: canonical = number × scale + offset (after ``units``).
    - ``precision``: decimal places kept (ROUND_HALF_UP) before comparing.
    - ``format``: a ``strptime`` pattern for dates that are not ISO or month-name dates.
    - ``comparison``: see :class:`Comparison`; ``tolerance`` / ``relative_tolerance`` go with
      ``numeric_tolerance``.
    - ``fold_diacritics``: a ``string`` field compared without accents and other combining
      marks (``São Paulo`` = ``Sao Paulo``), as a reviewer reading a name would.
    - ``ignore_punctuation``: a ``string`` field compared with punctuation removed and the
      space it leaves collapsed (``Gas Station ('Fuel')`` = ``Gas Station Fuel``).

    Every key here changes scoring, so an unknown key is an error (never ignored).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: FieldType = FieldType.string
    aliases: dict[str, str] = Field(default_factory=dict)
    uppercase: bool = False
    unit: str | None = None
    units: dict[str, Decimal] = Field(default_factory=dict)
    scale: Decimal = Decimal(1)
    offset: Decimal = Decimal(0)
    precision: int | None = Field(default=None, ge=0, le=30)
    format: str | None = None
    description: str | None = None
    comparison: Comparison = Comparison.canonical
    tolerance: Decimal | None = Field(default=None, ge=0)
    relative_tolerance: Decimal | None = Field(default=None, ge=0)
    fold_diacritics: bool = False
    ignore_punctuation: bool = False

    @field_validator("comparison", mode="before")
    @classmethod
    def _known_comparison(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in COMPARISONS:
            return value.strip().lower()
        raise ValueError(
            f"unknown comparison rule {value!r}; known rules: {', '.join(COMPARISONS)}"
        )

    @model_validator(mode="after")
    def _tolerance_goes_with_numbers(self) -> FieldRule:
        has_tolerance = self.tolerance is not None or self.relative_tolerance is not None
        if self.comparison is Comparison.numeric_tolerance:
            if self.type not in (FieldType.integer, FieldType.decimal):
                raise ValueError(
                    f"comparison 'numeric_tolerance' needs type integer or decimal, "
                    f"not {self.type.value}"
                )
            if not has_tolerance:
                raise ValueError(
                    "comparison 'numeric_tolerance' needs 'tolerance' or 'relative_tolerance'"
                )
        elif has_tolerance:
            raise ValueError(
                "'tolerance'/'relative_tolerance' apply only with comparison "
                f"'numeric_tolerance' (this field's comparison is {self.comparison.value!r})"
            )
        folds = [k for k in ("fold_diacritics", "ignore_punctuation") if getattr(self, k)]
        if folds and self.type is not FieldType.string:
            raise ValueError(f"'{folds[0]}' applies only to type string, not {self.type.value}")
        if folds and self.comparison in (
            Comparison.exact,
            Comparison.exact_after_outer_whitespace_trim,
        ):
            raise ValueError(f"'{folds[0]}' cannot go with comparison {self.comparison.value!r}")
        return self


class Normalization(BaseModel):
    """Legacy ``rubric.normalization``; per-column notes are kept as extra keys."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    field_separator: str = "|"
    record_separator: str = "\n"
    columns: list[str] = Field(alias="schema", min_length=1)
    dedup_key: str | list[str] | None = None
    sorting_or_selection: Any = None

    @field_validator("columns", mode="before")
    @classmethod
    def _schema_as_text(cls, value: Any, info: Any) -> Any:
        # Some exports write the schema as one string joined by the field separator.
        if isinstance(value, str):
            sep = (info.data or {}).get("field_separator", "|")
            return [part.strip() for part in value.split(sep)]
        return value

    @field_validator("field_separator", "record_separator")
    @classmethod
    def _separator(cls, value: str) -> str:
        value = _unescape_separator(value)
        if not value:
            raise ValueError("separator must not be empty")
        return value


# Rubric-level keys that would change scoring if they were honoured; sgrgym reads scoring
# rules only per field (``fields.<column>``), so these are errors rather than kept as notes.
SCORING_KEYS = frozenset(
    {
        "comparison",
        "tolerance",
        "relative_tolerance",
        "aliases",
        "uppercase",
        "case_sensitive",
        "canonicalization",
        "weights",
        "scoring",
        "metric",
        "metrics",
        "precision",
    }
)


class Rubric(BaseModel):
    """A task's rubric: legacy ``normalization`` and/or the typed ``columns``/``fields``.

    Unknown keys are kept (forward compatibility), except the :data:`SCORING_KEYS`, which
    would change scoring and are therefore errors.
    """

    model_config = ConfigDict(extra="allow")

    inclusion_conditions: list[str] = Field(default_factory=list)
    exclusion_conditions: list[str] = Field(default_factory=list)
    normalization: Normalization | None = None
    columns: list[str] | None = Field(default=None, min_length=1)
    row_key: list[str] | None = Field(default=None, min_length=1)
    fields: dict[str, FieldRule] = Field(default_factory=dict)
    field_separator: str | None = None
    record_separator: str | None = None

    @field_validator("inclusion_conditions", "exclusion_conditions", mode="before")
    @classmethod
    def _conditions(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [value]
        return [] if value is None else value

    @field_validator("field_separator", "record_separator")
    @classmethod
    def _separator(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = _unescape_separator(value)
        if not value:
            raise ValueError("separator must not be empty")
        return value

    @model_validator(mode="after")
    def _check_columns(self) -> Rubric:
        scoring = sorted(SCORING_KEYS & set(self.model_extra or {}))
        if scoring:
            raise ValueError(
                f"rubric key {scoring[0]!r} would change scoring but is not read at the rubric "
                "level; declare it per column in rubric.fields.<column>"
            )
        columns = self.schema_columns
        if not columns:
            raise ValueError("rubric needs 'columns' (typed) or 'normalization.schema' (legacy)")
        folded = [c.casefold() for c in columns]
        if len(set(folded)) != len(folded):
            raise ValueError(f"duplicate column names in schema {columns}")
        for name in self.fields:
            if name not in columns:
                raise ValueError(f"fields.{name}: not a column of the schema {columns}")
        for name in self.row_key or []:
            if name not in columns:
                raise ValueError(f"row_key: {name!r} is not a column of the schema {columns}")
            if self.rule_for(name).comparison is Comparison.numeric_tolerance:
                raise ValueError(
                    f"fields.{name}: comparison 'numeric_tolerance' cannot apply to a row-key "
                    "column (rows are aligned by one canonical key value)"
                )
        if self.field_sep == self.record_sep:
            raise ValueError("field and record separators must differ")
        return self

    @property
    def schema_columns(self) -> list[str]:
        """Column names in answer order (typed ``columns`` win over the legacy ``schema``)."""
        if self.columns:
            return list(self.columns)
        return list(self.normalization.columns) if self.normalization else []

    @property
    def field_sep(self) -> str:
        if self.field_separator is not None:
            return self.field_separator
        return self.normalization.field_separator if self.normalization else "|"

    @property
    def record_sep(self) -> str:
        if self.record_separator is not None:
            return self.record_separator
        return self.normalization.record_separator if self.normalization else "\n"

    @property
    def typed(self) -> bool:
        """True for the typed export style (``columns``/``fields``), False for legacy."""
        return bool(self.columns) or bool(self.fields)

    def rule_for(self, column: str) -> FieldRule:
        """The declared rule of ``column``; a plain string rule when none is declared."""
        return self.fields.get(column, _STRING_RULE)


_STRING_RULE = FieldRule()
