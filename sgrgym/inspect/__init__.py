"""sgrgym's benchmarks inside Inspect AI (the ``inspect`` extra: ``pip install "sgrgym[inspect]"``).

- ``sgrgym/sgr_bench`` (:mod:`sgrgym.inspect.sgr_task`): SGR-Bench task variants as samples,
  the task prompt as input, the SGR tools of ``sgrgym mcp`` (same schema file, same code) over
  an environment per sample, the episode budget as Inspect limits, sgrgym's scorer;
- ``sgrgym/seeker_gym`` (:mod:`sgrgym.inspect.seeker_task`): SeekerGym documents as samples,
  one model call per step with the rendered belief, completeness as the score;
- :mod:`sgrgym.inspect.export`: a finished ``sgr run`` folder as an Inspect log
  (``sgrgym export-inspect``).

Both tasks are registered with Inspect through the ``inspect_ai`` entry point
(:mod:`sgrgym.inspect._registry`), so ``inspect eval sgrgym/sgr_bench --model ...`` finds them.
Every pin (pack, task files, prompt, tool schema; corpus, store, model, θ) goes into the
log's eval metadata under ``sgrgym``. Nothing here imports Inspect until it is used.
"""

from __future__ import annotations

from sgrgym.core.errors import UserError

INSTALL_HINT = 'install the inspect extra: pip install -c constraints.txt -e ".[inspect]"'


def require_inspect() -> None:
    """Fail with an install hint (a UserError) when Inspect AI is not installed."""
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        raise UserError(f"Inspect AI (inspect_ai) is not installed; {INSTALL_HINT}") from None
