"""Opening an SGR world: the demo task files, task files checked against their pins, a pack
with its site models, the page renderer, and the environment over them.

Heavy modules are imported inside the functions (the command line imports this module at
start-up).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def load_tasks(
    files: list[Path], row_keys: dict[str, list[str]] | None = None, strict: bool = False
) -> list[Any]:
    """Load task files; those under tasks/sgr/ are first checked against their pins."""
    from sgrgym.sgr.task_pins import check_demo_task_files
    from sgrgym.sgr.tasks import load_tasks as read_task_files

    check_demo_task_files(files)
    return read_task_files(files, row_keys, strict=strict)


DEFAULT_TASKS_DIR = Path("tasks/sgr")


def demo_task_files(root: Path = DEFAULT_TASKS_DIR) -> list[Path]:
    """The demo task files: ``<root>/<site>/constraint.jsonl`` and ``goal.jsonl``, by site."""
    files = []
    for site_dir in sorted(p for p in root.glob("*") if p.is_dir()):
        files += [
            f for f in (site_dir / "constraint.jsonl", site_dir / "goal.jsonl") if f.is_file()
        ]
    if not files:
        from sgrgym.core.errors import UserError

        raise UserError(f"no task files under {root}/<site>/ (constraint.jsonl, goal.jsonl)")
    return files


def open_pack(spec: str) -> tuple[Any, Any]:
    from sgrgym.core.errors import UserError
    from sgrgym.sgr.sites.model import site_models
    from sgrgym.snapshot.replay import Snapshot

    snapshot = Snapshot.open(spec)
    models = site_models(snapshot.manifest.sites, str(snapshot.pack_dir / "manifest.json"))
    if not models:
        raise UserError(f"{spec}: this pack holds no site models (build it with sgr build-packs)")
    return snapshot, models


def page_renderer(snapshot: Any, no_render: bool) -> Any:
    from sgrgym.sgr.render import load_renderer

    return None if no_render else load_renderer(snapshot)


def open_sgr_run(
    pack: str, files: list[Path], budget: Any, current_date: str, no_render: bool
) -> tuple[Any, list[Any], dict[str, Any]]:
    """(environment, tasks, reference paths by task id) for a run over ``pack``: tasks
    checked against their pins, references against the pack's site models."""
    from sgrgym.sgr.env import SgrEnv
    from sgrgym.sgr.sites.reference import Reference, check_references, reference_of

    tasks = load_tasks(files)
    snapshot, models = open_pack(pack)
    references: dict[str, Reference] = {}
    for task in tasks:
        reference = reference_of(task)
        if reference is not None:
            references[task.task_id] = reference
    check_references(models, references, str(snapshot.pack_dir / "manifest.json"))
    renderer = page_renderer(snapshot, no_render)
    env = SgrEnv(snapshot, models, budget, current_date=current_date, renderer=renderer)
    return env, tasks, references
