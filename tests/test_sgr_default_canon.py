"""Default canonicalization of legacy columns (section 3.4): kinds inferred from references."""

from __future__ import annotations

import pytest

from sgrgym.sgr.default_canon import ColumnKind, DefaultCanon, column_canons, infer_kind


@pytest.mark.parametrize(
    ("column", "values", "kind", "unit"),
    [
        ("complaints", ["1,234", "56"], ColumnKind.integer, None),
        ("share", ["3%", "12.5%"], ColumnKind.decimal, "%"),
        ("price", ["$3.50", "$12"], ColumnKind.decimal, "$"),
        ("received", ["2021-03-09", "9 March 2021"], ColumnKind.date, None),
        ("year", ["1890", "1902"], ColumnKind.integer, None),
        ("cwe", ["CWE-79", "CWE-89"], ColumnKind.identifier, None),
        ("arxiv_id", ["2011.08019", "2101.01097"], ColumnKind.identifier, None),
        ("version", ["3.10", "3.9"], ColumnKind.identifier, None),
        ("station", ["007", "012"], ColumnKind.identifier, None),
        ("length", ["3 km", "5 m"], ColumnKind.text, None),  # mixed units: not one number
        ("value", ["1999.5", "2000.25"], ColumnKind.decimal, None),
        ("city", ["St. Louis", "Boise"], ColumnKind.text, None),
        ("count", ["12", "n/a", ""], ColumnKind.integer, None),
    ],
)
def test_kind_inferred_from_reference_values(
    column: str, values: list[str], kind: ColumnKind, unit: str | None
) -> None:
    assert infer_kind(column, values) == (kind, unit)


@pytest.mark.parametrize(
    ("kind", "unit", "same", "different"),
    [
        (ColumnKind.integer, None, ["1234", "1,234", "1234.0", "+1234", " 1 234 "], ["1235"]),
        (ColumnKind.decimal, "%", ["3", "3%", "3.0", "3.00 %"], ["0.03", "3 km"]),
        (ColumnKind.decimal, None, ["−2.5", "-2.50"], ["2.5"]),
        (ColumnKind.date, None, ["2021-03-09", "9 March 2021", "March 9, 2021"], ["2021-09-03"]),
        (
            ColumnKind.identifier,
            None,
            ["CWE-79", "cwe-79", "`CWE-79`", "CWE-79."],
            ["CWE79", "CWE-790"],
        ),
        (ColumnKind.identifier, None, ["2011.08010"], ["2011.0801"]),
        (
            ColumnKind.text,
            None,
            ["Mt. St. Helens", "mount saint helens", "Mount St Helens"],
            ["Mount Hood"],
        ),
        (ColumnKind.text, None, ["U.S. Dept. of Energy", "US Department of Energy"], []),
        (ColumnKind.text, None, ["“Path Traversal”", '"path traversal"', "Path Traversal"], []),
        (ColumnKind.text, None, ["Co"], ["Company"]),  # one word: no abbreviation expansion
        (ColumnKind.strict, None, ["Acme  Corp", "**Acme Corp**"], ["acme corp"]),
    ],
)
def test_forms(kind: ColumnKind, unit: str | None, same: list[str], different: list[str]) -> None:
    canon = DefaultCanon(kind, unit)
    forms = {canon(v) for v in same}
    assert len(forms) == 1, forms
    assert all(canon(v) not in forms for v in different)


def test_a_value_not_of_the_column_kind_falls_back_to_text() -> None:
    canon = DefaultCanon(ColumnKind.integer)
    assert canon("N/A") == canon("n/a") == "n/a"
    assert canon("about 12") != canon("12")


def test_columns_whose_defaults_would_merge_references_are_strict() -> None:
    chosen = column_canons(["symbol", "n"], [["Co", "1"], ["CO", "2"]])
    assert [c.kind for c in chosen] == [ColumnKind.strict, ColumnKind.integer]
    assert chosen[0].note is not None and "'Co' and 'CO'" in chosen[0].note
    # "3.1" and "3.10" are one number: as a decimal column they would merge, so strict.
    assert column_canons(["x"], [["3.1"], ["3.10"]])[0].kind is ColumnKind.strict
    assert all(c.kind is ColumnKind.strict for c in column_canons(["a"], [["x"]], strict=True))


def test_a_note_asking_for_exact_comparison_keeps_the_column_strict() -> None:
    notes = {"symbol": "case-sensitive chemical symbol", "name": "English name"}
    chosen = column_canons(["symbol", "name"], [["He", "Helium"]], notes=notes)
    assert [c.kind for c in chosen] == [ColumnKind.strict, ColumnKind.text]
    assert chosen[0].note is not None and "case-sensitive chemical symbol" in chosen[0].note
