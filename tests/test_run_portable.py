"""The main job's results do not depend on the processor's SIMD kernels.

Another x86-64 processor makes numpy and OpenBLAS pick other kernels (no AVX-512, or no AVX2);
what the embedding model computes moves too, which the baseline tests cover by perturbing it.
Here the same run is made twice in fresh processes, once with numpy's dispatch restricted to
its baseline (``NPY_DISABLE_CPU_FEATURES``) and OpenBLAS held to its AVX2 kernels
(``OPENBLAS_CORETYPE=Haswell``, whose float64 products differ in the last bits from the
AVX-512 ones): every result, record, table and report file must be byte-identical.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from test_run_main import _results, _small_config, run_process_argv

from sgrgym.seeker.paths import corpus_path

ROOT = Path(__file__).resolve().parents[1]
RESTRICTED = {
    "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
    "OPENBLAS_CORETYPE": "Haswell",
}


def _run(config: Path, out: Path, extra_env: dict[str, str]) -> None:
    env = {**os.environ, **extra_env}
    for name in RESTRICTED:
        if name not in extra_env:
            env.pop(name, None)
    done = subprocess.run(
        run_process_argv(config, out),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.skipif(not corpus_path("demo").is_file(), reason="the demo corpus is not built")
def test_the_main_job_is_byte_identical_with_other_simd_kernels(tmp_path: Path) -> None:
    config = _small_config(tmp_path / "small.toml")
    text = config.read_text("utf-8")  # an estimator that embeds (cosines to the abstract)
    config.write_text(text.replace('"visible-count"]', '"abstract-coverage"]'), "utf-8")
    assert "abstract-coverage" in config.read_text("utf-8")
    _run(config, tmp_path / "native", {})
    _run(config, tmp_path / "restricted", RESTRICTED)
    native, restricted = _results(tmp_path / "native"), _results(tmp_path / "restricted")
    assert sorted(native) == sorted(restricted)
    differing = [name for name in native if native[name] != restricted[name]]
    assert differing == []
    assert any(name.startswith("baseline/") for name in native)
