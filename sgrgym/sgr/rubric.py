"""Rubric models: the legacy ``normalization`` block and the typed rubric.

Published SGR-Bench records carry ``rubric.normalization`` (separators, ``schema``, a
free-text ``dedup_key`` and per-column notes). Newer exports, and sgrgym's own task files,
carry a typed rubric: ``columns``, ``row_key`` and per-field rules. See
``specs/sgr-task-format.md`` in the project documentation and the README section
"SGR-Bench task files".
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


class Rubric(BaseModel):
    """A task's rubric: legacy ``normalization`` and/or the typed ``columns``/``fields``."""

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

    def rule_for(self, column: str) -> FieldRule:
        """The declared rule of ``column``; a plain string rule when none is declared."""
        return self.fields.get(column, _STRING_RULE)


_STRING_RULE = FieldRule()
