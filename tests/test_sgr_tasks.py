"""Loading published and typed task files; row-key rules; errors that name the problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sgr_helpers import load_one, task_record, write_jsonl

from sgrgym.core.errors import TaskFileError, UserError
from sgrgym.sgr.tasks import load_row_keys, load_tasks

EXAMPLES = Path(__file__).resolve().parent.parent / "tasks" / "examples"


def test_example_files_load_as_pairs() -> None:
    tasks = load_tasks([EXAMPLES / "constraint.jsonl", EXAMPLES / "goal.jsonl"])
    assert [t.variant for t in tasks] == ["CG"] * 3 + ["GO"] * 3
    assert {t.task.pair_id for t in tasks} == {"elements_001", "states_001", "python_001"}
    by_id = {t.task_id: t for t in tasks}
    assert by_id["elements_001"].key_rule == "normalization.dedup_key"
    assert by_id["elements_001"].key_names == ["symbol"]
    assert by_id["python_001"].gold_rows[2] == ("3.10", "2021-10-04", "619")
    assert by_id["python_001"].task.metadata.inter_chain is True  # JSON-encoded metadata


@pytest.mark.parametrize("encode", [False, True])
def test_metadata_and_rubric_as_objects_or_json_strings(tmp_path: Path, encode: bool) -> None:
    task = load_one(tmp_path, task_record(encode=encode, typed=False))
    assert task.columns == ("name", "count", "tag")
    assert task.task.metadata.dependency_type == "Control"


def test_legacy_separators_and_text_schema(tmp_path: Path) -> None:
    record = task_record(answer="a|1|x;b|2|y", typed=False, record_separator=";")
    record["rubric"]["normalization"]["schema"] = "name | count | tag"
    task = load_one(tmp_path, record)
    assert task.columns == ("name", "count", "tag")
    assert task.gold_rows == (("a", "1", "x"), ("b", "2", "y"))


def test_escaped_newline_record_separator(tmp_path: Path) -> None:
    record = task_record(typed=False)
    record["rubric"]["normalization"]["record_separator"] = "\\n"
    assert len(load_one(tmp_path, record).gold_rows) == 3


def test_row_key_rules(tmp_path: Path) -> None:
    gold = "a|1|x\na|2|y\nb|1|z"
    # 4. shortest unique leading run: "name" repeats, ("name", "count") is unique.
    task = load_one(tmp_path, task_record(answer=gold, typed=False))
    assert (task.key_names, task.key_rule) == (["name", "count"], "unique leading columns")
    # 3. columns named in the dedup_key text, longest names first.
    record = task_record(answer=gold, typed=False)
    record["rubric"]["normalization"]["dedup_key"] = "Deduplicate on (tag); one row each"
    task = load_one(tmp_path, record)
    assert (task.key_names, task.key_rule) == (["tag"], "normalization.dedup_key")
    # 2. typed row_key.
    task = load_one(tmp_path, task_record(answer=gold, row_key=["tag"]))
    assert (task.key_names, task.key_rule) == (["tag"], "rubric.row_key")
    # 1. --row-keys mapping, applied to the GO twin through its CG id.
    rk = tmp_path / "keys.json"
    rk.write_text(json.dumps({"demo_001": ["count", "tag"]}))
    path = write_jsonl(tmp_path / "goal.jsonl", [task_record("demo_001-g", gold, row_key=["tag"])])
    (task,) = load_tasks([path], load_row_keys(rk))
    assert (task.key_names, task.key_rule) == (["count", "tag"], "row-keys file")


def test_duplicate_reference_key_is_an_error(tmp_path: Path) -> None:
    record = task_record(answer="a|1|x\na|2|y", row_key=["name"])
    with pytest.raises(TaskFileError) as err:
        load_one(tmp_path, record)
    assert "reference rows 1 and 2 share the row key ['name']" in str(err.value)
    with pytest.raises(TaskFileError, match="identical"):
        load_one(tmp_path, task_record(answer="a|1|x\na|1|x"))


def test_bad_file_names_file_line_task_and_field(tmp_path: Path) -> None:
    good = task_record("ok_001")
    bad_width = task_record("bad_001", answer="a|1\nb|2|y", cardinality=2)
    bad_rule = task_record("bad_002", fields={"count": {"comparison": "fuzzy"}})
    bad_type = task_record("bad_003", fields={"count": {"type": "float"}})
    path = write_jsonl(tmp_path / "t.jsonl", [good, bad_width, bad_rule, bad_type])
    with path.open("a") as f:
        f.write("{not json\n")
    with pytest.raises(TaskFileError) as err:
        load_tasks([path])
    text = str(err.value)
    assert f"{path}:2: task bad_001: field oracle_answer: cannot split" in text
    assert (
        f"{path}:3: task bad_002: field rubric.fields.count.comparison: "
        "Value error, unknown comparison rule 'fuzzy'"
    ) in text
    assert f"{path}:4: task bad_003: field rubric.fields.count.type" in text
    assert f"{path}:5: task ?: not valid JSON" in text
    assert "nothing loaded" in text


def test_variant_file_and_duplicate_checks(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match=r"in goal\.jsonl but has no '-g' suffix"):
        load_tasks([write_jsonl(tmp_path / "goal.jsonl", [task_record("x_001")])])
    a = write_jsonl(tmp_path / "a.jsonl", [task_record("x_001")])
    b = write_jsonl(tmp_path / "b.jsonl", [task_record("x_001")])
    with pytest.raises(TaskFileError, match=r"duplicate, first seen at .*a.jsonl:1"):
        load_tasks([a, b])


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r.pop("rubric"), "field rubric: Field required"),
        (lambda r: r.update(rubric="{oops"), "not valid JSON"),
        (lambda r: r.update(task_id="../etc"), "field task_id"),
        (lambda r: r["rubric"].update(row_key=["nope"]), "row_key: 'nope' is not a column"),
        (lambda r: r["rubric"].update(fields={"zz": {}}), "fields.zz: not a column"),
        (lambda r: r["rubric"]["fields"].update(count={"typo": 1}), r"count\.typo: unknown key"),
        (lambda r: r["rubric"].update(tolerance=1), "rubric key 'tolerance' would change"),
        (
            lambda r: r["rubric"]["fields"].update(count={"type": "string", "tolerance": 1}),
            "apply only with comparison 'numeric_tolerance'",
        ),
        (
            lambda r: r["rubric"]["fields"].update(count={"comparison": "numeric_tolerance"}),
            "needs type integer or decimal",
        ),
        (
            lambda r: r["rubric"].update(
                row_key=["count"],
                fields={
                    "count": {"type": "integer", "comparison": "numeric_tolerance", "tolerance": 1}
                },
            ),
            "cannot apply to a row-key column",
        ),
    ],
)
def test_invalid_records(tmp_path: Path, mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    record = task_record(fields={"count": {"type": "integer"}})
    mutate(record)
    with pytest.raises(TaskFileError, match=message):
        load_one(tmp_path, record)


def test_row_keys_file_errors(tmp_path: Path) -> None:
    rk = tmp_path / "rk.json"
    rk.write_text('["a"]')
    with pytest.raises(UserError, match="expected a JSON object"):
        load_row_keys(rk)
    rk.write_text('{"nope_001": ["name"]}')
    path = write_jsonl(tmp_path / "t.jsonl", [task_record()])
    with pytest.raises(TaskFileError, match="not in the task files"):
        load_tasks([path], load_row_keys(rk))
    rk.write_text('{"demo_001": ["zz"]}')
    with pytest.raises(TaskFileError, match="--row-keys names columns"):
        load_tasks([path], load_row_keys(rk))


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="task file not found"):
        load_tasks([tmp_path / "absent.jsonl"])
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(TaskFileError, match="no task records"):
        load_tasks([tmp_path / "empty.jsonl"])


# --- Published-format files: header rows, comparison rules, unknown keys, cardinality slips.


def test_oracle_answer_header_row_is_dropped(tmp_path: Path) -> None:
    columns = ("accepted_species", "description_year", "holotype_catalogue")
    answer = (
        "Accepted_Species | description_year|HOLOTYPE_CATALOGUE\n"
        "Boiga ochracea|1890|BMNH 1946.1.2\nOligodon erythrorhachis|1890|BMNH 1946.1.7"
    )
    # The published cardinality counts the two data rows; the header is not a row.
    task = load_one(tmp_path, task_record(answer=answer, columns=columns, cardinality=2))
    assert task.gold_rows == (
        ("Boiga ochracea", "1890", "BMNH 1946.1.2"),
        ("Oligodon erythrorhachis", "1890", "BMNH 1946.1.7"),
    )
    assert task.warnings == ()
    # Same with a one-line "," record separator.
    one_line = "name|count|tag,a|1|x,b|2|y"
    task = load_one(tmp_path, task_record(answer=one_line, record_separator=",", cardinality=2))
    assert task.gold_rows == (("a", "1", "x"), ("b", "2", "y"))


def test_cardinality_mismatch_is_a_warning(tmp_path: Path) -> None:
    task = load_one(tmp_path, task_record(cardinality=7))
    assert len(task.gold_rows) == 3
    assert task.warnings == (
        "oracle_output_cardinality says 7 rows but oracle_answer has 3; the 3 rows are scored",
    )


def test_comparison_rules_load(tmp_path: Path) -> None:
    fields = {
        "name": {"type": "string", "comparison": "exact_after_outer_whitespace_trim"},
        "count": {"type": "integer", "comparison": "Exact"},
        "tag": {"comparison": "case_insensitive"},
    }
    task = load_one(tmp_path, task_record(fields=fields))
    assert [c.rule.comparison.value for c in task.canons] == [  # type: ignore[union-attr]
        "exact_after_outer_whitespace_trim",
        "exact",
        "case_insensitive",
    ]
    assert task.canonicalization == "typed"


def test_unknown_keys_are_kept_where_they_cannot_change_scoring(tmp_path: Path) -> None:
    record = task_record(typed=False)
    record["release"] = "2026-05"
    record["metadata"]["curator_notes"] = {"round": 3}
    record["rubric"]["reviewer"] = "r2"
    record["rubric"]["normalization"]["count"] = "plain integer"
    task = load_one(tmp_path, record)
    assert task.task.model_extra == {"release": "2026-05"}
    assert task.task.metadata.model_extra == {"curator_notes": {"round": 3}}
    assert task.task.rubric.model_extra == {"reviewer": "r2"}


@pytest.mark.parametrize(
    ("text", "key", "statement"),
    [
        ("current_name", ["current_name"], "current_name"),
        ("Deduplicate on (year); one row each", ["year"], "Deduplicate on (year)"),
        (
            "dedup by accepted name; current_name may repeat",
            ["accepted_name"],
            "dedup by accepted name",
        ),
        (
            "dedup by accepted name, current_name may repeat",
            ["accepted_name"],
            "dedup by accepted name, current_name may repeat",
        ),
        ("rows are unique by accepted_name + year", ["accepted_name", "year"], None),
        ("One row per year and accepted name.", ["year", "accepted_name"], None),
        ("Keep one row for each species (accepted_name)", ["accepted_name"], None),
    ],
)
def test_dedup_key_reads_the_key_statement(
    tmp_path: Path, text: str, key: list[str], statement: str | None
) -> None:
    columns = ("accepted_name", "current_name", "year")
    record = task_record(answer="a|b|1\nc|d|2", columns=columns, typed=False)
    record["rubric"]["normalization"]["dedup_key"] = text
    task = load_one(tmp_path, record)
    assert (task.key_names, task.key_rule) == (key, "normalization.dedup_key")
    if statement is not None:
        assert task.key_statement == statement


def test_newer_export_examples_load_and_score(tmp_path: Path) -> None:
    from sgrgym.sgr.families import load_families
    from sgrgym.sgr.score import load_predictions, score_tasks

    newer = EXAMPLES / "newer"
    tasks = load_tasks([newer / "constraint.jsonl", newer / "goal.jsonl"])
    by_id = {t.task_id: t for t in tasks}
    assert by_id["taxa_001"].gold_rows[0] == ("Examplia borealis", "1890", "EX 1946.1.2")
    assert by_id["taxa_001"].task.model_extra == {"export_version": "2"}
    assert by_id["stats_001"].key_names == ["region", "year"]
    assert by_id["stats_001"].warnings[0].startswith("oracle_output_cardinality says 4 rows")
    report = score_tasks(
        tasks,
        load_predictions(newer / "predictions.jsonl"),
        load_families(newer / "families.json"),
    )
    scores = {t.task_id: (t.item_f1, t.row_f1, t.poa) for t in report.tasks}
    # Reordered header; draft then final table; preamble + number/case/unit formatting.
    assert scores["taxa_001"] == scores["taxa_001-g"] == scores["stats_001"] == (1.0, 1.0, 1.0)
    assert scores["stats_001-g"] == (0.0, 0.0, 0.0)
    assert report.multiple_tables == ["taxa_001-g"] and report.parse_failures == ["stats_001-g"]
    assert list(report.by_family) == ["life-science resources", "official statistics"]


def test_a_predictions_file_passed_as_tasks_is_named(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [{"task_id": "a_001", "answer": "x"}])
    with pytest.raises(TaskFileError, match="this is a predictions line"):
        load_tasks([path])


def test_dedup_key_list_naming_unknown_columns_is_an_error(tmp_path: Path) -> None:
    record = task_record(typed=False)
    record["rubric"]["normalization"]["dedup_key"] = ["name", "colour"]
    with pytest.raises(TaskFileError, match=r"dedup_key names columns \['colour'\]"):
        load_one(tmp_path, record)
    record["rubric"]["normalization"]["dedup_key"] = ["Tag"]
    assert load_one(tmp_path, record).key_names == ["tag"]
