"""What the reference scripts of ``tasks/sgr/<site>/reference.py`` share.

The scripts stay independent of the replica sites' code (they read each site's source data
themselves); this module only holds their common plumbing: finding a data file inside an
installed package, writing rows as an oracle answer, and running the tasks. A script finds it
next to its own folder, whether it runs as ``python tasks/sgr/<site>/reference.py`` or is
imported from its file::

    sys.path.append(str(Path(__file__).resolve().parent.parent))  # tasks/sgr: refcommon
    import refcommon
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

FIELD_SEP = "|"
RECORD_SEP = "\n"


class Connection(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Connection)


def package_file(package: str, pattern: str) -> Path:
    """The last path matching ``pattern`` (a glob) in the installed ``package``'s folder, found
    without importing the package; SystemExit with an install hint when there is none."""
    spec = importlib.util.find_spec(package)
    for location in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(location).glob(pattern))
        if found:
            return found[-1]
    raise SystemExit(
        f"the reference answers need the package {package!r} with its data file {pattern} "
        f"(pip install {package})"
    )


def answer_text(rows: Iterable[Sequence[object]]) -> str:
    """Rows as an oracle answer: fields joined by ``|``, records by newlines, None empty."""
    return RECORD_SEP.join(FIELD_SEP.join("" if v is None else str(v) for v in row) for row in rows)


def run_tasks(connect: Callable[[], C], tasks: Mapping[str, Callable[[C], str]]) -> dict[str, str]:
    """``{task_id: oracle_answer}``: each task's function run on one fresh connection."""
    con = connect()
    try:
        return {task_id: task(con) for task_id, task in tasks.items()}
    finally:
        con.close()


def print_answers(answers: Mapping[str, str]) -> None:
    """Print the answers as one JSON object (what running a reference script shows)."""
    print(json.dumps(answers, indent=2, ensure_ascii=False))
