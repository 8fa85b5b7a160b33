"""The data home: the folder that holds sgrgym's pins and the artifacts built from them.

Laid out as a checkout is: ``tasks/`` (task files, corpus manifests; built corpora beside
them), ``embeddings/`` (model pins and the committed passage store; the built model),
``snapshots/`` (pack manifests; the built WARC files) and ``baselines/``. Default paths of
every command are read there, so sgrgym runs from any folder:

- ``SGRGYM_HOME``, when set;
- else the checkout sgrgym runs from: the one its package lives in (an editable install),
  else the working folder when it is a checkout;
- else a per-user folder, ``$XDG_DATA_HOME/sgrgym`` (``~/.local/share/sgrgym``), which
  ``sgrgym setup`` fills from the pins the installed package ships.

A default path is written relative (as before) when the data home is the working folder, so
run cards made from a checkout read the same whoever runs them; else it is absolute.
"""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "SGRGYM_HOME"
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent.parent  # above the sgrgym package


def is_checkout(folder: Path) -> bool:
    """Whether ``folder`` is an sgrgym checkout (its project file and task folder)."""
    project = folder / "pyproject.toml"
    if not (project.is_file() and (folder / "tasks" / "sgr").is_dir()):
        return False
    try:
        return 'name = "sgrgym"' in project.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def user_home() -> Path:
    """The per-user data home of an installed sgrgym."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "sgrgym"


def home() -> Path:
    """The data home (see the module docstring)."""
    chosen = os.environ.get(HOME_ENV)
    if chosen:
        return Path(chosen).expanduser()
    if is_checkout(_PACKAGE_ROOT):
        return _PACKAGE_ROOT
    cwd = Path.cwd()
    if is_checkout(cwd):
        return cwd
    return user_home()


def home_path(relative: str | Path) -> Path:
    """``relative`` (laid out as in a checkout) in the data home: kept relative when the
    data home is the working folder, else absolute."""
    base = home()
    try:
        same = base.resolve() == Path.cwd().resolve()
    except OSError:
        same = False
    return Path(relative) if same else base / relative


def recorded(path: Path) -> str:
    """How a run card names ``path``: relative to the data home when it lies there (so the
    card reads the same wherever the data home is), else as given."""
    try:
        return Path(path).resolve().relative_to(home().resolve()).as_posix()
    except (ValueError, OSError):
        return str(path)


def locate(name: str) -> Path:
    """The file a run card names: as named when it is there (absolute, or relative to the
    working folder), else in the data home."""
    path = Path(name)
    if path.is_absolute() or path.exists():
        return path
    return home() / path
