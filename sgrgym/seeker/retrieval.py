"""The SeekerGym observation function (paper section 2.2), computed so kernels cannot change it.

O(s, a) = {x in the document's goal passages : cos(embed(a), embed(x)) > θ}, with a strict
inequality. Vectors are L2-normalized float32, so the cosine is a dot product.

Every number here is a function of the vectors' bits only, on any x86-64 processor:

- the product of two float32 values is exact in float64 (24 + 24 significand bits < 53), and
  :func:`exact_dot` sums the exact products with :func:`math.fsum`, so a cosine is the true dot
  product correctly rounded to float64, whatever SIMD kernel numpy or BLAS would pick;
- the hot path scores a document's passage matrix with a float64 matrix product (BLAS: its
  error for unit vectors of a few hundred dimensions is below 1e-13) and recomputes exactly
  every score within :data:`EXACT_BAND` of a value it is compared with (θ, the edge of the
  near-θ band, a row's maximum), so every decision and every maximum is the exact one.

Where query vectors are computed live (not replayed from a recording), another processor's
kernels move them by about 1e-7, and a retrieval decision whose cosine lies within
:data:`NEAR_THETA` of θ could flip there: :func:`observe` counts those decisions
(``near_theta``), so a researcher sees whether a processor change could change a result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float32]
Scores = npt.NDArray[np.float64]
Vectors = Matrix | Scores  # float32 vectors, or the same values widened to float64 (exactly)

EXACT_BAND = 1e-9  # float64 BLAS scores this close to a compared value are recomputed exactly
NEAR_THETA = 1e-5  # ours: decisions this close to θ are counted as processor-sensitive


def exact_dot(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """The dot product of two float32 vectors, correctly rounded to float64."""
    products = np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64)
    return math.fsum(products.tolist())


def cosine_scores(matrix: Vectors, queries: Matrix) -> Scores:
    """float64 cosines of every query (rows of ``queries``) with every passage (rows of
    ``matrix``), from a BLAS product: within 1e-13 of the exact value, not bit-stable."""
    scores: Scores = np.asarray(queries, np.float64) @ np.asarray(matrix, np.float64).T
    return scores


def _refine(scores: Scores, matrix: Vectors, queries: Matrix, mask: npt.NDArray[np.bool_]) -> None:
    """Replace the scores under ``mask`` by their exact values (in place)."""
    for i, j in zip(*np.nonzero(mask), strict=True):
        scores[i, j] = exact_dot(queries[i], matrix[j])


@dataclass(frozen=True)
class Retrieval:
    """What O(s, a) returned for a set of queries."""

    hits: list[list[int]]  # per query, the passage rows above θ (ascending)
    near_theta: int  # (query, passage) decisions whose cosine lies within NEAR_THETA of θ


def observe(matrix: Vectors, queries: Matrix, theta: float) -> Retrieval:
    """Per query, the passage rows whose cosine exceeds ``theta``, and the near-θ count."""
    if len(queries) == 0:
        return Retrieval([], 0)
    scores = cosine_scores(matrix, queries)
    band = np.abs(scores - theta) < NEAR_THETA + EXACT_BAND  # every score outside is decided
    _refine(scores, matrix, queries, band)
    near = int(np.count_nonzero(np.abs(scores[band] - theta) < NEAR_THETA))
    return Retrieval([np.flatnonzero(row > theta).tolist() for row in scores], near)


def retrieve(matrix: Vectors, queries: Matrix, theta: float) -> list[list[int]]:
    """Per query, the passage row indices whose cosine with it exceeds ``theta`` (ascending)."""
    return observe(matrix, queries, theta).hits


def best_cosines(matrix: Vectors, queries: Matrix) -> list[float]:
    """Per query, its exact highest cosine with a row of ``matrix`` (-1.0 when it is empty)."""
    if len(matrix) == 0:
        return [-1.0] * len(queries)
    scores = cosine_scores(matrix, queries)
    if len(queries) == 0:
        return []
    top = scores.max(axis=1, keepdims=True)
    _refine(scores, matrix, queries, scores >= top - EXACT_BAND)
    return [float(row.max()) for row in scores]


def query_diversity(vectors: Matrix) -> list[float]:
    """Per query, 1 - max cosine to the earlier queries (paper C.4); 1.0 for the first."""
    out: list[float] = []
    for i in range(len(vectors)):
        if i == 0:
            out.append(1.0)
            continue
        out.append(1.0 - best_cosines(vectors[:i], vectors[i : i + 1])[0])
    return out
