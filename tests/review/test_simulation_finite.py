"""The simulated recall refuses NaN and infinities instead of clamping them (issue 13)."""

from __future__ import annotations

import math

import pytest

from review.simulation import SimulationParams, adjust_utility, recall_probability

NOT_FINITE = [math.nan, math.inf, -math.inf]
INPUTS = {"confidence": 0.5, "utility": 0.5, "days_since_last_recall": 3.0}


@pytest.mark.parametrize("field", list(INPUTS))
@pytest.mark.parametrize("value", NOT_FINITE)
def test_it_refuses_a_non_finite_recall_input(field, value):
    # Before: NaN confidence or utility clamped to 0.0, NaN days to 0 (a fresh recall).
    with pytest.raises(ValueError, match=f"{field} must be a finite number"):
        recall_probability(**{**INPUTS, field: value})


@pytest.mark.parametrize("field", ["utility", "success_gain", "failure_loss"])
@pytest.mark.parametrize("value", NOT_FINITE)
def test_it_refuses_a_non_finite_utility_adjustment(field, value):
    # Before: a NaN utility came back as 0.0 after any grade.
    arguments = {"utility": 0.5, "success_gain": 0.1, "failure_loss": 0.15, field: value}

    with pytest.raises(ValueError, match=f"{field} must be a finite number"):
        adjust_utility(arguments.pop("utility"), 4, **arguments)


@pytest.mark.parametrize("field", ["confidence_weight", "recency_half_life_days", "easy_at"])
@pytest.mark.parametrize("value", NOT_FINITE)
def test_it_refuses_non_finite_simulation_params(field, value):
    with pytest.raises(ValueError, match=f"{field} must be a finite number"):
        SimulationParams(**{field: value})
