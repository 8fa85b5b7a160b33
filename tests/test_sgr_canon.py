"""Field canonicalization: text rules for every field, then the declared typed rule."""

from __future__ import annotations

import pytest

from sgrgym.sgr.canon import canonical_value, clean_text
from sgrgym.sgr.rubric import FieldRule


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  Homo   sapiens ", "Homo sapiens"),
        ("**Bold**", "Bold"),
        ("`code`", "code"),
        ("*`both`*", "both"),
        ("[CWE-89](https://cwe.example/89)", "CWE-89"),
        ("ﬁve", "five"),  # NFKC ligature
        ("１２３", "123"),  # full-width digits
        ("a\\|b", "a|b"),
        ("5*", "5*"),  # a one-sided star is content, not decoration
    ],
)
def test_text_rules(raw: str, expected: str) -> None:
    assert clean_text(raw) == expected


def test_strings_are_exact_unless_declared() -> None:
    plain = FieldRule()
    assert canonical_value("Python", plain) != canonical_value("python", plain)
    upper = FieldRule(uppercase=True)
    assert canonical_value("python", upper) == canonical_value("PYTHON", upper) == "PYTHON"
    aliased = FieldRule(aliases={"PA": "Pennsylvania"})
    assert canonical_value(" PA ", aliased) == "Pennsylvania"
    assert canonical_value("pa", aliased) == "pa"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1,234", "1234"),
        ("1 234", "1234"),
        ("+7", "7"),
        ("−3", "-3"),
        ("42.0", "42"),
        ("4.5", "4.5"),
        ("12,34", "12,34"),
        ("1 2", "1 2"),
        ("n/a", "n/a"),
    ],
)
def test_integers(raw: str, expected: str) -> None:
    assert canonical_value(raw, FieldRule(type="integer")) == expected


def test_decimals_exact_after_units_and_precision() -> None:
    exact = FieldRule(type="decimal")
    assert canonical_value("1.50", exact) == canonical_value("1.5", exact) == "1.5"
    assert canonical_value("1.51", exact) != canonical_value("1.5", exact)
    pct = FieldRule(type="decimal", unit="%", precision=1)
    assert canonical_value("12.35 %", pct) == "12.4"  # ROUND_HALF_UP
    assert canonical_value("12.3%", pct) == canonical_value("12.30", pct) == "12.3"
    metres = FieldRule(type="decimal", unit="m", units={"km": "1000"})
    assert canonical_value("1.2 km", metres) == canonical_value("1200 m", metres) == "1200"
    scaled = FieldRule(type="decimal", scale="100", precision=0)
    assert canonical_value("0.256", scaled) == "26"


def test_id_lists_split_dedupe_sort() -> None:
    ids = FieldRule(type="id_list", uppercase=True, aliases={"CWE89": "CWE-89"})
    assert canonical_value("cwe-79; cwe89, CWE-79  CWE-20", ids) == "CWE-20;CWE-79;CWE-89"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2021-03-05", "2021-03-05"),
        ("2021/3/5", "2021-03-05"),
        ("March 5, 2021", "2021-03-05"),
        ("5 Mar 2021", "2021-03-05"),
        ("Sept. 2020", "2020-09"),
        ("2020", "2020"),
        ("2021-02-30", "2021-02-30"),
        ("05/03/2021", "05/03/2021"),
    ],
)
def test_dates(raw: str, expected: str) -> None:
    assert canonical_value(raw, FieldRule(type="date")) == expected


def test_declared_date_format() -> None:
    rule = FieldRule(type="date", format="%d/%m/%Y")
    assert canonical_value("05/03/2021", rule) == "2021-03-05"


def test_declared_folds_of_diacritics_and_punctuation() -> None:
    reviewer = FieldRule(comparison="case_insensitive", fold_diacritics=True)
    assert canonical_value("São José dos Campos", reviewer) == "sao jose dos campos"
    assert canonical_value("SAO JOSE DOS CAMPOS", reviewer) == "sao jose dos campos"
    plain = FieldRule(ignore_punctuation=True)
    assert canonical_value("Path Traversal: '/dir/../filename'", plain) == (
        "Path Traversal dir filename"
    )
    assert canonical_value("São", FieldRule()) == "São"  # nothing folds unless declared
    with pytest.raises(ValueError, match="applies only to type string"):
        FieldRule(type="integer", fold_diacritics=True)
    with pytest.raises(ValueError, match="cannot go with comparison 'exact'"):
        FieldRule(comparison="exact", ignore_punctuation=True)


def test_demo_rubrics_declare_a_reviewers_canonicalization() -> None:
    """Every string column of the demo tasks is compared as a reviewer would (section 3.4):
    a lower-cased or unaccented key column still scores."""
    from sgrgym.sgr.make import demo_task_files
    from sgrgym.sgr.score import score_answer
    from sgrgym.sgr.tasks import load_tasks

    tasks = {t.task.task_id: t for t in load_tasks(demo_task_files())}
    for task in tasks.values():
        for column in task.task.rubric.schema_columns:
            rule = task.task.rubric.rule_for(column)
            if rule.type.value == "string":
                assert rule.comparison.value == "case_insensitive", (task.task.task_id, column)
                assert rule.fold_diacritics and rule.ignore_punctuation, task.task.task_id
    places = tasks["places_001"]
    gold = places.task.oracle_answer
    folded = gold.lower().replace("ã", "a").replace("é", "e")
    assert folded != gold
    assert score_answer(places, folded).item_f1 == 1.0
