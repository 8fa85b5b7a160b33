"""Calibrated stopping (paper section 2.4, figure 2d): stop after step t when ĉ_t - q̂ >= δ.

Shared by the calibration protocol (which measures the rule) and the LLM agent (which is the
env's stop rule under ``--stop-q-hat`` and ``--stop-delta``).
"""

from __future__ import annotations

from collections.abc import Sequence

STOP_TOLERANCE = 1e-12  # ours: ĉ - q̂ compared in floats (0.3 - 0.2 == 0.1 must fire)


def fires(c_hat: float | None, q_hat: float, delta: float) -> bool:
    """ĉ - q̂ >= δ (figure 2d), with :data:`STOP_TOLERANCE`; never for an unreadable ĉ."""
    return c_hat is not None and c_hat - q_hat >= delta - STOP_TOLERANCE


def stop_step(c_hat: Sequence[float | None], q_hat: float, delta: float) -> int:
    """The first step t (1-based) with ĉ_t - q̂ >= δ, else the horizon ``len(c_hat)``."""
    for t, value in enumerate(c_hat, start=1):
        if fires(value, q_hat, delta):
            return t
    return len(c_hat)
