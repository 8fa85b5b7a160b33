"""Opening an SGR world: the demo task files, task files checked against their pins, a pack
with its site models, the page renderer, and the environment over them.

Heavy modules are imported inside the functions (the command line imports this module at
start-up).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sgrgym.core import defaults
from sgrgym.core.home import home_path

if TYPE_CHECKING:
    from sgrgym.sgr.env import Budget, SgrEnv
    from sgrgym.sgr.render import SiteRenderer
    from sgrgym.sgr.sites.model import SiteModel
    from sgrgym.sgr.sites.reference import Reference
    from sgrgym.sgr.tasks import ScoringTask
    from sgrgym.snapshot.replay import Snapshot


def load_tasks(
    files: Sequence[Path], row_keys: dict[str, list[str]] | None = None, strict: bool = False
) -> list[ScoringTask]:
    """Load task files; those under tasks/sgr/ are first checked against their pins."""
    from sgrgym.sgr.task_pins import check_demo_task_files
    from sgrgym.sgr.tasks import load_tasks as read_task_files

    check_demo_task_files(files)
    return read_task_files(files, row_keys, strict=strict)


DEFAULT_TASKS_DIR = home_path("tasks/sgr")


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


def open_pack(spec: str) -> tuple[Snapshot, dict[str, SiteModel]]:
    """The pack ``spec`` (a name under ``snapshots/`` or a folder) and its site models."""
    from sgrgym.core.errors import UserError
    from sgrgym.sgr.sites.model import site_models
    from sgrgym.snapshot.replay import Snapshot

    snapshot = Snapshot.open(spec)
    models = site_models(snapshot.manifest.sites, str(snapshot.pack_dir / "manifest.json"))
    if not models:
        raise UserError(f"{spec}: this pack holds no site models (build it with sgr build-packs)")
    return snapshot, models


def page_renderer(snapshot: Snapshot, no_render: bool) -> SiteRenderer | None:
    """The pages' renderer (None: pages served as recorded)."""
    from sgrgym.sgr.render import load_renderer

    return None if no_render else load_renderer(snapshot)


@dataclass(frozen=True)
class SgrWorld:
    """An opened SGR world: the environment, the task files and their tasks (checked against
    their pins), and the reference state path of each task that has one (checked against the
    pack's site models)."""

    env: SgrEnv
    files: list[Path]
    tasks: list[ScoringTask]
    references: dict[str, Reference]
    selection: list[str] | None = None  # the task ids kept by --task/--limit (None: all)


def open_world(
    pack: str = defaults.SGR_PACK,
    task_files: Sequence[Path] | None = None,
    *,
    budget: Budget | None = None,
    current_date: str = defaults.CURRENT_DATE,
    render: bool = True,
    task_ids: Sequence[str] | None = None,
    limit: int | None = None,
) -> SgrWorld:
    """The SGR world over ``pack`` (a name under ``snapshots/`` or a folder; default the demo
    pack) and ``task_files`` (default the demo tasks), with the episode ``budget`` (default
    appendix C's) and the date shown to agents; ``render=False`` serves pages unrendered.

    ``task_ids`` keeps only those task variants (in file order; an unknown id is an error) and
    ``limit`` the first ``limit`` of what is kept: the world's ``selection`` says so, and the
    run card records it."""
    from sgrgym.sgr.env import Budget, SgrEnv
    from sgrgym.sgr.sites.reference import check_references, reference_of

    files = list(task_files) if task_files else demo_task_files()
    tasks = load_tasks(files)
    selection = None
    if task_ids is not None or limit is not None:
        tasks = select_tasks(tasks, task_ids, limit)
        selection = [t.task_id for t in tasks]
    snapshot, models = open_pack(pack)
    references: dict[str, Reference] = {}
    for task in tasks:
        reference = reference_of(task)
        if reference is not None:
            references[task.task_id] = reference
    check_references(models, references, str(snapshot.pack_dir / "manifest.json"))
    env = SgrEnv(
        snapshot,
        models,
        budget or Budget(),
        current_date=current_date,
        renderer=page_renderer(snapshot, not render),
    )
    return SgrWorld(env=env, files=files, tasks=tasks, references=references, selection=selection)


def select_tasks(
    tasks: Sequence[ScoringTask], task_ids: Sequence[str] | None, limit: int | None
) -> list[ScoringTask]:
    """``tasks`` restricted to ``task_ids`` (file order kept), then to the first ``limit``."""
    from sgrgym.core.errors import UserError
    from sgrgym.core.registry import close_hint

    kept = list(tasks)
    if task_ids is not None:
        known = {t.task_id for t in tasks}
        unknown = [i for i in dict.fromkeys(task_ids) if i not in known]
        if unknown:
            hint = close_hint(unknown[0], sorted(known), n=1)
            raise UserError(
                f"--task: no task {unknown[0]!r} in the task files{hint}; "
                "`sgrgym sgr tasks --tasks FILE ...` lists them"
            )
        wanted = set(task_ids)
        kept = [t for t in kept if t.task_id in wanted]
    if limit is not None:
        if limit < 1:
            raise UserError(f"--limit must be at least 1, got {limit}")
        kept = kept[:limit]
    return kept


def make_env(
    pack: str = defaults.SGR_PACK,
    *,
    budget: Budget | None = None,
    current_date: str = defaults.CURRENT_DATE,
    render: bool = True,
) -> SgrEnv:
    """The SGR environment over ``pack`` (default: the demo pack), as every command builds it."""
    return open_world(pack, budget=budget, current_date=current_date, render=render).env
