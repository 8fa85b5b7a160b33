"""Property tests: invariants of the metrics, and a scorer that never raises."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from sgr_helpers import task_record

from sgrgym.sgr.canon import clean_text
from sgrgym.sgr.score import score_answer
from sgrgym.sgr.tasks import ScoringTask, build_task

VALUE = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9 .,/-]{0,6}[A-Za-z0-9])?", fullmatch=True)


@st.composite
def gold_tables(draw: st.DrawFn) -> tuple[ScoringTask, list[tuple[str, ...]]]:
    width = draw(st.integers(2, 5))
    rows = draw(
        st.lists(
            st.tuples(*[VALUE] * width),
            min_size=1,
            max_size=12,
            unique_by=lambda r: clean_text(r[0]),
        )
    )
    columns = tuple(f"col_{i}" for i in range(width))
    answer = "\n".join("|".join(r) for r in rows)
    return build_task(task_record(answer=answer, columns=columns)), rows


def concordant_fraction(order: list[int]) -> float:
    n = len(order)
    if n < 2:
        return 0.0
    good = sum(1 for i in range(n) for j in range(i + 1, n) if order[i] < order[j])
    return good / (n * (n - 1) / 2)


@settings(max_examples=300)
@given(data=st.data(), table=gold_tables())
def test_any_permutation_keeps_f1_and_gives_concordant_poa(
    data: st.DataObject, table: tuple[ScoringTask, list[tuple[str, ...]]]
) -> None:
    task, rows = table
    order = data.draw(st.permutations(range(len(rows))))
    answer = "\n".join("|".join(rows[i]) for i in order)
    s = score_answer(task, answer)
    assert s.item_f1 == 1.0 and s.row_f1 == 1.0
    assert s.poa == concordant_fraction(list(order))


def _mutate(text: str, ops: list[tuple[int, int, str]]) -> str:
    for kind, pos, chunk in ops:
        pos = pos % (len(text) + 1)
        if kind == 0:
            text = text[:pos] + chunk + text[pos:]
        elif kind == 1:
            text = text[:pos] + text[pos + len(chunk) :]
        else:
            text = text[:pos] + chunk + text[pos + len(chunk) :]
    return text


DANGER = st.text(alphabet="|\n\r\t,;`*[](){}\"'\\-:NONE0123456789. #~é０", max_size=6)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=12,
)

TASKS = [
    build_task(
        task_record(
            answer="a|1,200|P1; P2|2021-03-05|1.5\nb|3|Q9|March 2020|2.25",
            columns=("name", "count", "ids", "when", "value"),
            fields={
                "count": {"type": "integer"},
                "ids": {"type": "id_list", "uppercase": True},
                "when": {"type": "date"},
                "value": {"type": "decimal", "unit": "%", "precision": 1},
            },
        )
    ),
    build_task(
        task_record(
            answer="48|42|62|child|2160/3531|583,137|197|210|child|6934/16904|1135",
            columns=("a", "b", "c", "rel", "ratio", "n"),
            record_separator=",",
            typed=False,
        )
    ),
    build_task(task_record(answer="x;y;z", columns=("only",), record_separator=";")),
]
GOLD_TEXTS = [t.task.oracle_answer for t in TASKS]


@st.composite
def predictions(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return draw(st.text(max_size=60))
    if kind == 1:
        return json.dumps(draw(JSON))
    base = draw(st.sampled_from(GOLD_TEXTS))
    if kind == 3:
        fence = draw(st.sampled_from(["```", "```json\n", "~~~", "| a | b |\n|---|---|\n"]))
        base = fence + base + draw(st.sampled_from(["```", "", "\n```\n", "~~~"]))
    ops = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 200), DANGER), max_size=6))
    return _mutate(base, ops)


@settings(max_examples=10_000)
@given(answer=predictions())
def test_random_and_mutated_predictions_never_raise(answer: str) -> None:
    for task in TASKS:
        s = score_answer(task, answer)
        for value in (s.item_f1, s.row_f1, s.poa):
            assert 0.0 <= value <= 1.0
        if s.parse_failure:
            assert s.item_f1 == s.row_f1 == s.poa == 0.0
