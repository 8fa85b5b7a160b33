"""Hand-worked examples of SGR-Bench appendix A (Item-F1, Row-F1, P.O.A.)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sgr_helpers import load_one, task_record

from sgrgym.sgr.metrics import f1, pairwise_order_accuracy
from sgrgym.sgr.score import score_answer

GOLD = "a|1|x\nb|2|y\nc|3|z"


def scores(tmp_path: Path, answer: str | None, gold: str = GOLD, **kw: object) -> tuple:
    task = load_one(tmp_path, task_record(answer=gold, **kw))  # type: ignore[arg-type]
    s = score_answer(task, answer)
    return s.item_f1, s.row_f1, s.poa


def test_perfect(tmp_path: Path) -> None:
    assert scores(tmp_path, GOLD) == (1.0, 1.0, 1.0)


def test_same_rows_reversed(tmp_path: Path) -> None:
    assert scores(tmp_path, "c|3|z\nb|2|y\na|1|x") == (1.0, 1.0, 0.0)


def test_one_of_three_rows_dropped(tmp_path: Path) -> None:
    # C_item = 6, N_gold = 9, N_pred = 6 -> 12/15; C_row = 2 -> 4/5; 2 shared keys in order.
    assert scores(tmp_path, "a|1|x\nc|3|z") == pytest.approx((0.8, 0.8, 1.0))


def test_one_wrong_non_key_field(tmp_path: Path) -> None:
    # C_item = 8 of 9 + 9 slots -> 16/18 = 8/9; C_row = 2 -> 4/6 = 2/3.
    item, row, poa = scores(tmp_path, "a|1|x\nb|5|y\nc|3|z")
    assert (item, row, poa) == pytest.approx((8 / 9, 2 / 3, 1.0))


@pytest.mark.parametrize("answer", ["", "NONE", "  none \n", "`NONE`", None])
def test_empty_answer(tmp_path: Path, answer: str | None) -> None:
    assert scores(tmp_path, answer) == (0.0, 0.0, 0.0)


def test_comma_separated_reference(tmp_path: Path) -> None:
    gold = "48|42|62|child|2160/3531|583,137|197|210|child|6934/16904|1135"
    columns = ("a", "b", "c", "relation", "ratio", "total")
    task = load_one(
        tmp_path, task_record(answer=gold, columns=columns, record_separator=",", cardinality=2)
    )
    assert task.gold_rows == (
        ("48", "42", "62", "child", "2160/3531", "583"),
        ("137", "197", "210", "child", "6934/16904", "1135"),
    )
    # The agent answers in the same one-line format: read with the same splitter.
    assert score_answer(task, gold).item_f1 == 1.0
    # ... or as lines, with one wrong field: C_item = 11 -> 22/24, C_row = 1 -> 2/4.
    s = score_answer(task, "48|42|62|child|2160/3531|583\n137|197|210|child|6934/16904|1136")
    assert (s.item_f1, s.row_f1, s.poa) == pytest.approx((22 / 24, 0.5, 1.0))


def test_duplicate_predicted_key_first_occurrence_scored(tmp_path: Path) -> None:
    # Rows: a (correct), a (copy, wrong), b, c. N_pred = 12 slots, |R_pred| = 4.
    item, row, poa = scores(tmp_path, "a|1|x\na|9|q\nb|2|y\nc|3|z")
    assert (item, row, poa) == pytest.approx((18 / 21, 6 / 7, 1.0))
    # When the first copy is the wrong one, it is the one scored.
    item, row, _ = scores(tmp_path, "a|9|q\na|1|x\nb|2|y\nc|3|z")
    assert (item, row) == pytest.approx((2 * 7 / 21, 4 / 7))


def test_missing_and_extra_columns(tmp_path: Path) -> None:
    # JSON rows: row a lacks a column (counts 3 slots, scores 2); row b has an extra one
    # (4 slots, all 3 schema fields right but no Row-F1 credit).
    answer = (
        '[{"name": "a", "count": "1"}, {"name": "b", "count": "2", "tag": "y", "note": "n"},'
        ' {"name": "c", "count": "3", "tag": "z"}]'
    )
    item, row, _ = scores(tmp_path, answer)
    assert item == pytest.approx(2 * (2 + 3 + 3) / (9 + 10))
    assert row == pytest.approx(2 * 1 / 6)


def test_pipe_lines_that_do_not_fit_the_schema_are_not_rows(tmp_path: Path) -> None:
    # "a|1" (2 cells) and "b|2|y|extra" (4 cells) do not fit 3 columns: only c is a row.
    # C_item = 3, N_gold = 9, N_pred = 3 -> 6/12; C_row = 1 -> 2/4.
    item, row, _ = scores(tmp_path, "a|1\nb|2|y|extra\nc|3|z")
    assert (item, row) == pytest.approx((0.5, 0.5))


def test_poa_needs_two_shared_keys(tmp_path: Path) -> None:
    assert scores(tmp_path, "a|1|x")[2] == 0.0
    assert scores(tmp_path, "a|1|x\nzz|0|0")[2] == 0.0


def test_poa_counts_concordant_pairs() -> None:
    gold = ["a", "b", "c", "d"]
    # pred order b, a, c, d: pairs (a,b) discordant; 5 of 6 kept.
    assert pairwise_order_accuracy(gold, {"b": 0, "a": 1, "c": 2, "d": 3}) == 5 / 6
    # Keys absent from the prediction are not in S.
    assert pairwise_order_accuracy(gold, {"d": 0, "a": 5}) == 0.0
    assert pairwise_order_accuracy(gold, {"a": 0, "d": 5, "zz": 1}) == 1.0


def test_f1_edges() -> None:
    assert f1(0, 0, 0) == 1.0
    assert f1(3, 3, 3) == 1.0
    assert f1(0, 3, 0) == 0.0


def test_typed_fields_compare_canonically(tmp_path: Path) -> None:
    fields = {
        "count": {"type": "integer"},
        "tag": {"type": "id_list", "uppercase": True},
    }
    gold = "a|1,200|P1; P2\nb|3|Q9"
    task = load_one(tmp_path, task_record(answer=gold, fields=fields))
    s = score_answer(
        task, "| name | count | tag |\n|--|--|--|\n| **a** | 1200 | p2,p1 |\n| b | 3 | q9 |"
    )
    assert (s.item_f1, s.row_f1, s.poa) == (1.0, 1.0, 1.0)
    # No undeclared fuzziness: the name column is a plain case-sensitive string.
    s = score_answer(task, "A|1200|P1;P2\nb|3|Q9")
    assert s.item_f1 == pytest.approx(2 * 3 / 12)  # row A does not align; row b does
