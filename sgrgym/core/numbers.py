"""Derived numbers written the same on every processor: correctly rounded means and a fixed
precision for every written float."""

from __future__ import annotations

import math
from collections.abc import Sequence


def fixed(value: float, digits: int) -> float:
    """``value`` rounded to ``digits`` decimals, written the same on every processor (-0.0 is
    0.0): the precision every written derived number is given."""
    return round(value, digits) + 0.0


def exact_mean(values: Sequence[float]) -> float:
    """The mean of ``values`` from a correctly rounded sum (:func:`math.fsum`)."""
    return math.fsum(values) / len(values)
