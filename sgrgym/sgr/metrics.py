"""SGR-Bench metrics, exactly as the paper's appendix A defines them.

- Item-F1 = 2·C_item / (N_gold + N_pred)
- Row-F1  = 2·C_row / (|R_gold| + |R_pred|)
- P.O.A.  = share of reference-ordered pairs of shared row keys kept in order by the
  prediction; 0 when fewer than two keys are shared (the paper's conservative convention).

Both F1s are 1.0 when reference and prediction are both empty (nothing to get wrong).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def f1(correct: int, n_gold: int, n_pred: int) -> float:
    """``2·correct / (n_gold + n_pred)`` (appendix A, Item-F1 and Row-F1)."""
    if n_gold + n_pred == 0:
        return 1.0
    return 2 * correct / (n_gold + n_pred)


def pairwise_order_accuracy(gold_order: Sequence[K], pred_position: Mapping[K, int]) -> float:
    """P.O.A. over the keys of ``gold_order`` that appear in ``pred_position``.

    ``gold_order`` lists the reference keys in reference order; ``pred_position`` maps each
    predicted key to the position of its first occurrence (appendix A: π and π̂).
    """
    positions = [pred_position[k] for k in gold_order if k in pred_position]
    n = len(positions)
    if n < 2:
        return 0.0
    concordant = sum(1 for i in range(n) for j in range(i + 1, n) if positions[i] < positions[j])
    return concordant / (n * (n - 1) // 2)
