"""Hand-worked scorer cases on agent output seen in the wild (appendix A, section 3.4).

Reference used unless stated: schema (name, count, tag), rows a|1|x, b|2|y, c|3|z, row key
``name``. N_gold = 9 field slots, |R_gold| = 3.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sgr_helpers import load_one, task_record

from sgrgym.sgr.score import score_answer
from sgrgym.sgr.tasks import ScoringTask, load_tasks

GOLD = "a|1|x\nb|2|y\nc|3|z"


def _task(tmp_path: Path, **kw: Any) -> ScoringTask:
    kw.setdefault("answer", GOLD)
    kw.setdefault("row_key", ["name"])
    return load_one(tmp_path, task_record(**kw))


def metrics(task: ScoringTask, answer: str) -> tuple[float, float, float]:
    s = score_answer(task, answer)
    return s.item_f1, s.row_f1, s.poa


# 1. A header naming the columns in another order remaps the rows.


@pytest.mark.parametrize(
    "answer",
    [
        "| tag | name | count |\n|---|---|---|\n| x | a | 1 |\n| y | b | 2 |\n| z | c | 3 |",
        "count,tag,name\n1,x,a\n2,y,b\n3,z,c",
        "Tag|Name|Count\nx|a|1\ny|b|2\nz|c|3",
        "tag\tname\tcount\nx\ta\t1\ny\tb\t2\nz\tc\t3",
    ],
)
def test_header_in_another_order_remaps_rows(tmp_path: Path, answer: str) -> None:
    # Read by position this scores 0/0/0 (no key aligns); remapped, every field is right.
    assert metrics(_task(tmp_path), answer) == (1.0, 1.0, 1.0)


def test_header_naming_a_subset_leaves_the_rest_missing(tmp_path: Path) -> None:
    # Each row has name and tag right, count missing: C_item = 6, N_pred = 3 rows x 3 slots.
    # Item-F1 = 12 / 18; no row complete; order kept.
    answer = "| tag | name |\n|---|---|\n| x | a |\n| y | b |\n| z | c |"
    assert metrics(_task(tmp_path), answer) == pytest.approx((2 / 3, 0.0, 1.0))


def test_header_with_an_extra_column(tmp_path: Path) -> None:
    # "#" is an extra column: 4 slots per row, 3 right each. C_item = 9, N_pred = 12:
    # Item-F1 = 18 / 21; a row with an extra field gets no Row-F1 credit.
    answer = "| # | name | count | tag |\n|--|--|--|--|\n| 1 | a | 1 | x |\n| 2 | b | 2 | y |\n"
    answer += "| 3 | c | 3 | z |"
    assert metrics(_task(tmp_path), answer) == pytest.approx((18 / 21, 0.0, 1.0))


# 2. A line is a row only when it fits the schema.


@pytest.mark.parametrize(
    "preamble",
    [
        "Here is the table | as requested",
        "Format: name|count|tag, one row per item",
        "name|count|...",
    ],
)
def test_prose_holding_the_separator_is_not_a_row(tmp_path: Path, preamble: str) -> None:
    assert metrics(_task(tmp_path), f"{preamble}\n{GOLD}\nHope this helps | cheers") == (
        1.0,
        1.0,
        1.0,
    )


def test_echoed_format_line_is_not_a_row(tmp_path: Path) -> None:
    columns = ("cwe_id", "name", "abstraction", "submitted")
    gold = "CWE-20|Improper Input Validation|Class|2006-07-19"
    task = _task(tmp_path, answer=gold, columns=columns, row_key=["cwe_id"])
    answer = f"The answer uses cwe_id|name|abstraction|submitted as asked:\n{gold}"
    s = score_answer(task, answer)
    assert (s.item_f1, s.row_f1, s.n_pred_rows) == (1.0, 1.0, 1)


# 3. Reference NONE: an unreadable prediction is not a correct "no rows".


def test_none_reference_with_unparseable_prediction_scores_zero(tmp_path: Path) -> None:
    task = _task(tmp_path, answer="NONE", row_key=None)
    s = score_answer(task, "I searched the site but the page did not load.")
    assert (s.item_f1, s.row_f1, s.poa, s.parse_failure) == (0.0, 0.0, 0.0, True)
    # An explicit NONE is right: both empty (the F1 convention of metrics.f1).
    s = score_answer(task, "NONE")
    assert (s.item_f1, s.row_f1, s.parse_failure) == (1.0, 1.0, False)


# 5. Default canonicalization for legacy rubrics; --strict; typed rubrics keep their rules.

LEGACY_COLUMNS = ("company", "complaints", "share", "received", "state")
LEGACY_GOLD = (
    "Acme Corp.|1,234|3%|2021-03-09|Pennsylvania\nMt. Hood Credit Union|56|12.5%|2021-11-30|Oregon"
)
LEGACY_PRED = (
    "ACME CORP|1234|3.0|9 March 2021|pennsylvania\n"
    "Mount Hood Credit Union|56.0|12.50 %|November 30, 2021|OREGON"
)


def _legacy(tmp_path: Path, strict: bool = False) -> ScoringTask:
    record = task_record(answer=LEGACY_GOLD, columns=LEGACY_COLUMNS, typed=False)
    path = tmp_path / "legacy.jsonl"
    path.write_text(__import__("json").dumps(record) + "\n")
    (task,) = load_tasks([path], strict=strict)
    return task


def test_default_canonicalization_of_legacy_rubrics(tmp_path: Path) -> None:
    task = _legacy(tmp_path)
    assert task.canonicalization == "default"
    assert task.column_kinds == ("text", "integer", "decimal", "date", "text")
    s = score_answer(task, LEGACY_PRED)
    assert (s.item_f1, s.row_f1, s.poa, s.canonicalization) == (1.0, 1.0, 1.0, "default")


def test_strict_turns_the_defaults_off(tmp_path: Path) -> None:
    task = _legacy(tmp_path, strict=True)
    assert task.canonicalization == "strict"
    # Keys (company) differ in case / abbreviation: nothing aligns strictly.
    assert metrics(task, LEGACY_PRED) == (0.0, 0.0, 0.0)
    # With the company written as in the reference, only "56" matches among the rest:
    # C_item = 2 + 1 = 3 of N_gold = N_pred = 10 -> 6/20.
    pred = LEGACY_PRED.replace("ACME CORP", "Acme Corp.").replace("Mount Hood", "Mt. Hood")
    pred = pred.replace("56.0", "56")
    assert metrics(task, pred) == pytest.approx((6 / 20, 0.0, 1.0))


def test_default_canonicalization_never_merges_distinct_values(tmp_path: Path) -> None:
    columns = ("formula", "mass", "length")
    gold = "Co|58.93|3 km\nCO|28.01|5 km"
    task = load_one(tmp_path, task_record(answer=gold, columns=columns, typed=False))
    # "Co" (cobalt) and "CO" (carbon monoxide) would be equal without case: that column is
    # compared strictly, and the loader says so.
    assert task.column_kinds[0] == "strict"
    assert any("'Co' and 'CO'" in n for n in task.notes)
    assert task.key_names == ["formula"]
    # Row Co: "co" does not align. Row CO: mass right, "5 m" is not "5 km" (a different unit
    # is not formatting). C_item = 2, N_pred = 6 -> 4/12.
    assert metrics(task, "co|58.93|3 km\nCO|28.010|5 m")[0] == pytest.approx(4 / 12)


def test_typed_rubric_keeps_declared_rules(tmp_path: Path) -> None:
    task = _task(tmp_path, fields={"count": {"type": "integer"}})
    assert task.canonicalization == "typed"
    # A typed string column is not case-folded: "X" is not "x".
    assert metrics(task, "a|1|X\nb|2|y\nc|3|z")[0] == pytest.approx(16 / 18)


# 6. Two tables in one answer: the last complete one is scored, and flagged.

DRAFT = "| name | count | tag |\n|---|---|---|\n| a | 9 | q |"
FINAL = "| name | count | tag |\n|---|---|---|\n| a | 1 | x |\n| b | 2 | y |\n| c | 3 | z |"


def test_two_tables_score_the_last_and_flag_it(tmp_path: Path) -> None:
    task = _task(tmp_path)
    s = score_answer(task, f"Draft:\n{DRAFT}\n\nChecked again, final:\n{FINAL}")
    assert (s.item_f1, s.row_f1, s.poa, s.flags) == (1.0, 1.0, 1.0, ["multiple_tables"])
    s = score_answer(task, f"```\n{DRAFT}\n```\nFinal:\n```\n{FINAL}\n```")
    assert (s.item_f1, s.flags) == (1.0, ["multiple_tables"])
    assert score_answer(task, FINAL).flags == []


def test_a_cut_short_last_table_is_not_complete(tmp_path: Path) -> None:
    # The final table stops mid-row ("| c | 3"): the last *complete* table (the draft) is
    # scored: row a, 1 of 3 fields right. C_item = 1, N_pred = 3 -> 2/12.
    task = _task(tmp_path)
    cut = FINAL.rsplit("|", 2)[0]
    s = score_answer(task, f"{DRAFT}\n\n{cut}")
    assert (s.item_f1, s.flags) == (pytest.approx(2 / 12), ["multiple_tables"])


# Typed comparison rules (rubric.fields.<column>.comparison).


def test_exact_and_trim_comparison(tmp_path: Path) -> None:
    exact = _task(tmp_path, fields={"tag": {"comparison": "exact"}})
    trim = _task(tmp_path, fields={"tag": {"comparison": "exact_after_outer_whitespace_trim"}})
    canonical = _task(tmp_path)
    answer = '[["a", "1", "x\\u00a0"], ["b", "2", "**y**"], ["c", "3", "z"]]'
    # x+NBSP: exact no, trimmed yes, canonical yes. **y**: only canonical strips decoration.
    assert metrics(exact, answer)[0] == pytest.approx(2 * 7 / 18)
    assert metrics(trim, answer)[0] == pytest.approx(2 * 8 / 18)
    assert metrics(canonical, answer)[0] == 1.0


def test_case_insensitive_and_numeric_tolerance(tmp_path: Path) -> None:
    fields = {
        "tag": {"comparison": "case_insensitive"},
        "count": {"type": "decimal", "comparison": "numeric_tolerance", "tolerance": "0.5"},
    }
    task = _task(tmp_path, fields=fields)
    # X = x; 1.4 within 0.5 of 1; 2.6 is not within 0.5 of 2; "3" exact.
    assert metrics(task, "a|1.4|X\nb|2.6|y\nc|3|Z")[0] == pytest.approx(2 * 8 / 18)
    relative = _task(
        tmp_path,
        answer="a|10|x\nb|200|y",
        fields={
            "count": {
                "type": "integer",
                "comparison": "numeric_tolerance",
                "relative_tolerance": 0.1,
            }
        },
    )
    # 10.9 within 10% of 10; 221 not within 10% of 200.
    assert metrics(relative, "a|10.9|x\nb|221|y")[0] == pytest.approx(2 * 5 / 12)
