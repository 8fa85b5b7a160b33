"""The Python API examples of docs/python-api.md run as written (from the repository root)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _examples() -> list[str]:
    page = (ROOT / "docs" / "python-api.md").read_text("utf-8")
    section = page.split("# Python API\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


@pytest.mark.skipif(
    not (ROOT / "tasks/seeker/djangodocs/corpus.jsonl").is_file()
    or not (ROOT / "snapshots/demo/warc").is_dir(),
    reason="the demo corpus or pack is not built (setup/test builds them)",
)
def test_the_readme_examples_run() -> None:
    examples = _examples()
    assert len(examples) == 2 and all(len(e.splitlines()) <= 22 for e in examples)
    outputs = []
    for code in examples:
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append(done.stdout)
    assert outputs[0].strip() == "mean final completeness 0.393 over 8 documents"
    assert re.match(r"cwe_001 Item-F1 \d\.\d\d Row-F1 \d\.\d\d P\.O\.A\. \d\.\d\d", outputs[1])


def test_import_sgrgym_is_light_and_names_resolve() -> None:
    code = (
        "import sys, sgrgym\n"
        "assert 'sgrgym.seeker.env' not in sys.modules and 'numpy' not in sys.modules\n"
        "assert sgrgym.make_seeker_env.__module__ == 'sgrgym.seeker.make'\n"
        "assert sgrgym.make_sgr_env.__module__ == 'sgrgym.sgr.make'\n"
        "assert issubclass(sgrgym.UserError, Exception)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
