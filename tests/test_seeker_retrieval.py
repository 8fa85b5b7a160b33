"""The observation function's threshold (strict >) and query diversity, with known vectors."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from sgrgym.core.numbers import fixed
from sgrgym.seeker.retrieval import (
    NEAR_THETA,
    best_cosines,
    cosine_scores,
    exact_dot,
    observe,
    query_diversity,
    retrieve,
)


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


def test_exact_dot_is_the_correctly_rounded_dot_product_whatever_the_order() -> None:
    rng = np.random.default_rng(7)
    a = rng.normal(size=384).astype(np.float32)
    b = rng.normal(size=384).astype(np.float32)
    exact = sum(Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a, b, strict=True))
    assert exact_dot(a, b) == float(exact)
    order = rng.permutation(384)
    assert exact_dot(a[order], b[order]) == exact_dot(a, b) == exact_dot(b, a)


def test_decisions_at_theta_are_exact_and_near_theta_is_counted() -> None:
    rng = np.random.default_rng(3)
    matrix = rng.normal(size=(40, 384)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    query = matrix[:1] * np.float32(0.7) + matrix[1:2] * np.float32(0.3)
    exact = [exact_dot(query[0], row) for row in matrix]
    theta = exact[1]  # a cosine exactly at θ is not above it, whatever BLAS rounds it to
    seen = observe(matrix, query, theta)
    assert 1 not in seen.hits[0]
    assert seen.hits[0] == [i for i, c in enumerate(exact) if c > theta]
    assert seen.near_theta == sum(abs(c - theta) < NEAR_THETA for c in exact) >= 1
    assert observe(matrix, query, theta - 2 * NEAR_THETA).near_theta == 0
    assert observe(matrix, query, theta - NEAR_THETA / 2).near_theta == 1
    assert best_cosines(matrix, query) == [max(exact)]


def test_derived_numbers_do_not_depend_on_the_summation_order() -> None:
    """Diversity and best cosines are the exact values: permuting the dimensions (another
    kernel's summation order) changes no bit."""
    rng = np.random.default_rng(11)
    queries = rng.normal(size=(12, 384)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    queries[5] = queries[2]  # a repeated query: diversity 0.0, never -0.0
    order = rng.permutation(384)
    assert query_diversity(queries) == query_diversity(np.ascontiguousarray(queries[:, order]))
    assert best_cosines(queries[:6], queries[6:]) == best_cosines(
        np.ascontiguousarray(queries[:6, order]), np.ascontiguousarray(queries[6:, order])
    )
    assert str(fixed(query_diversity(queries)[5], 6)) == "0.0"
    assert str(fixed(-4e-7, 6)) == "0.0" and fixed(0.1234565, 6) == round(0.1234565, 6)
