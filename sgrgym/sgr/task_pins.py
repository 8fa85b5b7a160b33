"""The demo task files are pinned: ``tasks/sgr/manifest.json`` holds the sha256 of each.

Loading a task file under ``tasks/sgr/`` checks it against the manifest first, so a changed
digit in an ``oracle_answer`` is refused instead of being scored. Other task files are not
pinned here; ``sgr run`` records their sha256 in its run card and refuses to resume after
they changed.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from sgrgym.core.errors import PinError, UserError
from sgrgym.core.hashing import canonical_json, sha256_bytes
from sgrgym.core.home import home_path
from sgrgym.core.inputs import field_problem, read_bytes, read_text
from sgrgym.core.io import write_atomic

DEMO_TASKS_DIR = home_path("tasks/sgr")
PINS = "manifest.json"
UPDATE = "sgrgym sgr tasks --update-pin"


class TaskPins(BaseModel):
    model_config = ConfigDict(extra="forbid")

    files: dict[str, str]  # path relative to the demo folder -> sha256


def _demo_name(path: Path, root: Path) -> str | None:
    """``path`` relative to the demo folder, or None when it lies elsewhere."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return None


def load_pins(root: Path = DEMO_TASKS_DIR) -> TaskPins:
    path = root / PINS
    try:
        return TaskPins.model_validate_json(read_text(path, "task pin manifest"))
    except ValidationError as exc:
        raise UserError(f"{path}: not a task pin manifest ({field_problem(exc)})") from None


def check_demo_task_files(paths: Iterable[Path], root: Path = DEMO_TASKS_DIR) -> None:
    """Each of ``paths`` under ``root`` must match its pinned sha256 (others are skipped)."""
    pins: TaskPins | None = None
    for path in paths:
        name = _demo_name(path, root)
        if name is None or not path.is_file():
            continue
        pins = pins or load_pins(root)
        found = sha256_bytes(read_bytes(path, "task file"))
        pinned = pins.files.get(name)
        if pinned is None:
            raise PinError(
                f"{path}: a demo task file not pinned in {root / PINS}; pin it with {UPDATE}"
            )
        if found != pinned:
            raise PinError(
                f"{path}: does not match its pin in {root / PINS} (sha256 {found}, pinned "
                f"{pinned}): the demo task file was changed; restore it (git checkout) or, "
                f"for a deliberate change, re-pin with {UPDATE}"
            )


def write_pins(files: Iterable[Path], root: Path = DEMO_TASKS_DIR) -> TaskPins:
    """Pin ``files`` (all under ``root``) in ``root/manifest.json``."""
    pinned = {}
    for path in files:
        name = _demo_name(path, root)
        if name is None:
            raise UserError(f"{path}: not under {root}; only demo task files are pinned")
        pinned[name] = sha256_bytes(read_bytes(path, "task file"))
    pins = TaskPins(files=dict(sorted(pinned.items())))
    target = root / PINS
    write_atomic(target, canonical_json(pins.model_dump()))
    return pins
