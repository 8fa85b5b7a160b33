"""The observation function's threshold (strict >) and query diversity, with known vectors."""

from __future__ import annotations

import numpy as np

from sgrgym.seeker.retrieval import cosine_scores, query_diversity, retrieve


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


MATRIX = np.stack([unit(1, 0, 0), unit(0, 1, 0), unit(1, 1, 0), unit(0, 0, 1)])


def test_threshold_is_strict() -> None:
    q = np.stack([unit(1, 0, 0)])
    cos = float(cosine_scores(MATRIX, q)[0, 2])  # cos 45° = 0.7071...
    assert retrieve(MATRIX, q, cos - 1e-6) == [[0, 2]]
    assert retrieve(MATRIX, q, cos) == [[0]]  # equal to θ is not above θ
    assert retrieve(MATRIX, q, 0.999) == [[0]]
    assert retrieve(MATRIX, q, 1.0) == [[]]


def test_several_queries_and_none() -> None:
    q = np.stack([unit(0, 1, 0), unit(0, 0, 1), unit(-1, 0, 0)])
    assert retrieve(MATRIX, q, 0.65) == [[1, 2], [3], []]
    assert retrieve(MATRIX, np.zeros((0, 3), np.float32), 0.65) == []


def test_query_diversity() -> None:
    q = np.stack([unit(1, 0, 0), unit(1, 0, 0), unit(0, 1, 0)])
    diversity = query_diversity(q)
    assert diversity[0] == 1.0 and abs(diversity[1]) < 1e-6 and abs(diversity[2] - 1.0) < 1e-6
