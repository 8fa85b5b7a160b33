"""The SeekerGym observation function (paper section 2.2).

O(s, a) = {x in the document's goal passages : cos(embed(a), embed(x)) > θ}, with a strict
inequality. Vectors are L2-normalized, so the cosine is a dot product; a document's passage
matrix is loaded once per episode and scored with numpy (the hot path).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float32]


def cosine_scores(matrix: Matrix, queries: Matrix) -> npt.NDArray[np.float32]:
    """Cosines of every query (rows of ``queries``) with every passage (rows of ``matrix``)."""
    scores: npt.NDArray[np.float32] = queries @ matrix.T
    return scores


def retrieve(matrix: Matrix, queries: Matrix, theta: float) -> list[list[int]]:
    """Per query, the passage row indices whose cosine with it exceeds ``theta`` (ascending)."""
    if queries.size == 0:
        return []
    above = cosine_scores(matrix, queries) > np.float32(theta)
    return [np.flatnonzero(row).tolist() for row in above]


def query_diversity(vectors: Matrix) -> list[float]:
    """Per query, 1 - max cosine to the earlier queries (paper C.4); 1.0 for the first."""
    out: list[float] = []
    for i in range(len(vectors)):
        if i == 0:
            out.append(1.0)
            continue
        out.append(float(1.0 - np.max(vectors[:i] @ vectors[i])))
    return out
