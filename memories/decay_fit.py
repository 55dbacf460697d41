"""Fitting a namespace's decay parameters to its own history of uses (issue 19).

Model. The uses of a memory form a point process whose intensity is proportional to its
seed-003 score. Between two uses, with n the uses so far and tau the time of the last use
(or of the creation),

    lambda(t) = a * (n + 1)^beta * D(t - tau) * strength,

D being the decay factor of memories.decay (exponential with a half-life; power law
(1 + s/t0)^-alpha with t0 = power_law_t0_seconds(half_life, alpha); two components
w*exp(-lf*s) + (1 - w)*exp(-ls*s)) and a the namespace's rate of use, per second per unit
of score. A use resets the clock and adds one to n.

Likelihood. A memory's observed life is cut into intervals at its uses (Intervals); each
ends with a use (event) or is censored (now, forgotten, deleted, the end of a time slice):

    log L = sum over uses of log lambda(u_i) - sum over intervals of the integral of lambda.

The integrals are closed forms of I(g) = integral of D over [0, g]: (1 - e^(-l*g)) / l; for
the power law t0/(alpha-1) * (1 - (1 + g/t0)^(1-alpha)), whose alpha -> 1 limit
t0 * ln(1 + g/t0) is the same expression written with expm1(x)/x; the two components'
weighted sum of exponential ones. Given the other parameters the rate's MLE is closed,
a = N_uses / sum (n+1)^beta * strength * delta I, so `a` is profiled out and the rest is
maximised in a transformed space (log half-lives, logit weight, log alpha; beta within
[0, 2], alpha within [0.2, 5], half-lives within 0.01-365 days) by a coarse grid and a
small bounded Nelder-Mead, every evaluation one pass of vector operations over the intervals.

Validation. fit_decay fits each model on the time before `split_at` and scores it on the
time after: at split_at and every day after it, every memory observed over the checkpoint
and the whole horizon after it is a case, labelled by whether it is used within
(t, t + horizon], predicted by p = 1 - exp(-a * (n+1)^beta * strength * integral of D over
[dt, dt + horizon]) from its state (n, dt) at t (use_probability). The loss is the mean
binary log loss. The best model is the one with the lowest loss (a simpler one within
MODEL_TOLERANCE of it preferred). It is accepted only with enough history (MIN_USES uses
before the split, MIN_VALIDATION_USES after it, MIN_VALIDATION_MEMORIES memories with
cases) and a loss both MARGIN (relative) and MIN_Z standard errors, clustered by memory,
below the constants' (the given DecayParams with their own fitted rate).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from memories.decay import (
    DECAY_MODELS,
    SECONDS_PER_DAY,
    DecayParams,
    decay_factor,
    half_life_to_lambda,
    power_law_t0_seconds,
    require_finite,
)

# Training uses (before split_at) and validation uses (after it) a fit needs to be accepted.
MIN_USES = 1000
MIN_VALIDATION_USES = 100
# Memories with validation cases a fit needs: the standard error below is clustered by
# memory, and a few dozen clusters make it unreliable.
MIN_VALIDATION_MEMORIES = 100
# The relative improvement of the validation log loss over the constants' that a fit must
# show to be accepted (calibrated on namespaces simulated from the constants: docs/background.md).
MARGIN = 0.01
# ... and by this many standard errors of the per-memory gain: a namespace whose uses
# concentrate on a few memories has few independent cases, however many uses.
MIN_Z = 2.0
# A model with more parameters is chosen over a simpler one only if its validation loss is
# lower by more than this (relative).
MODEL_TOLERANCE = 1e-3

HALF_LIFE_BOUNDS_DAYS = (0.01, 365.0)
BETA_BOUNDS = (0.0, 2.0)
ALPHA_BOUNDS = (0.2, 5.0)
LOGIT_BOUNDS = (-12.0, 12.0)
PROBABILITY_CLIP = 1e-9
MAX_CHECKPOINTS = 2_000_000
# Above this many training rows the search starts on every k-th memory (_fit_model).
COARSE_ROWS = 200_000
# Where simulate puts its window: any fixed epoch does (2023-11-14).
SIMULATION_EPOCH = 1_700_000_000.0

# --- Intervals ------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Intervals:
    """Aligned arrays, one row per stretch of a memory's life between two clock resets.

    start: epoch seconds of the use (or creation) that started it (the decay clock's zero);
    end: when it ended; count: the uses made before it (n in (n+1)^beta); event: True when
    it ended with a use, False when censored; strength: the memory's strength.
    memory: the memory's index (default: each row its own; the validation loss needs the
    real one to know how long each memory is observed); observed_from: when observation of
    the row starts (default start; later for the validation part of a row split_intervals
    cut: the likelihood and the loss count only observed time).
    """

    start: np.ndarray
    end: np.ndarray
    count: np.ndarray
    event: np.ndarray
    strength: np.ndarray
    memory: np.ndarray | None = None
    observed_from: np.ndarray | None = None

    def __post_init__(self) -> None:
        def put(name: str, value: np.ndarray) -> None:
            object.__setattr__(self, name, value)

        put("start", np.asarray(self.start, dtype=np.float64))
        put("end", np.asarray(self.end, dtype=np.float64))
        put("count", np.asarray(self.count, dtype=np.int64))
        put("event", np.asarray(self.event, dtype=bool))
        put("strength", np.asarray(self.strength, dtype=np.float64))
        rows = self.start.shape[0] if self.start.ndim == 1 else -1
        put(
            "memory",
            np.arange(max(rows, 0), dtype=np.int64)
            if self.memory is None
            else np.asarray(self.memory, dtype=np.int64),
        )
        put(
            "observed_from",
            self.start.copy()
            if self.observed_from is None
            else np.asarray(self.observed_from, dtype=np.float64),
        )
        for name in ("start", "end", "count", "event", "strength", "memory", "observed_from"):
            value = getattr(self, name)
            if value.ndim != 1 or value.shape[0] != rows:
                raise ValueError(f"{name} must be a 1-d array of {rows} rows")
        for name in ("start", "end", "strength", "observed_from"):
            _require_finite_array(name, getattr(self, name))
        if np.any(self.end < self.observed_from) or np.any(self.observed_from < self.start):
            raise ValueError("every interval needs start <= observed_from <= end")
        if np.any(self.count < 0) or np.any(self.strength < 0):
            raise ValueError("count and strength must not be negative")

    def __len__(self) -> int:
        return int(self.start.shape[0])

    def take(self, rows: np.ndarray) -> Intervals:
        """The rows selected by an index or boolean mask."""
        return Intervals(
            start=self.start[rows],
            end=self.end[rows],
            count=self.count[rows],
            event=self.event[rows],
            strength=self.strength[rows],
            memory=self.memory[rows],
            observed_from=self.observed_from[rows],
        )


def _require_finite_array(name: str, values: np.ndarray) -> None:
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} must hold finite numbers only")


def _integers(name: str, values: np.ndarray) -> np.ndarray:
    """values as int64; ValueError for NaN, infinities and fractions (which a cast hides)."""
    array = np.asarray(values)
    if array.dtype.kind == "f":
        _require_finite_array(name, array)
        if np.any(array != np.round(array)):
            raise ValueError(f"{name} must hold whole numbers")
    return array.astype(np.int64)


def build_intervals(
    *,
    memory_start: np.ndarray,
    memory_start_count: np.ndarray,
    memory_end: np.ndarray,
    memory_strength: np.ndarray,
    use_memory: np.ndarray,
    use_at: np.ndarray,
) -> Intervals:
    """Intervals of memories observed from memory_start (with memory_start_count uses
    already made, the clock starting there) to memory_end, cut at their uses.

    use_memory indexes the memory arrays, use_at is in epoch seconds, in any order; uses
    outside a memory's [start, end] are dropped. A memory with k uses gives k + 1 rows.
    When the use log begins after a memory's first uses, its last use before the log is
    the right memory_start (and its use count then the start count): the clock is right.
    """
    starts = np.asarray(memory_start, dtype=np.float64)
    start_counts = _integers("memory_start_count", memory_start_count)
    ends = np.asarray(memory_end, dtype=np.float64)
    strengths = np.asarray(memory_strength, dtype=np.float64)
    who = _integers("use_memory", use_memory)
    when = np.asarray(use_at, dtype=np.float64)
    memories = starts.shape[0]
    if not (start_counts.shape == ends.shape == strengths.shape == (memories,)):
        raise ValueError("the memory_* arrays must be 1-d and of one length")
    if who.shape != when.shape or who.ndim != 1:
        raise ValueError("use_memory and use_at must be 1-d and of one length")
    for name, values in (
        ("memory_start", starts),
        ("memory_end", ends),
        ("memory_strength", strengths),
        ("use_at", when),
    ):
        _require_finite_array(name, values)
    if np.any(ends < starts):
        raise ValueError("memory_end must not be before memory_start")
    if np.any(who < 0) or np.any(who >= memories):
        raise ValueError("use_memory must index the memory arrays")

    inside = (when >= starts[who]) & (when <= ends[who])
    who, when = who[inside], when[inside]
    order = np.lexsort((when, who))
    who, when = who[order], when[order]

    uses_per_memory = np.bincount(who, minlength=memories)
    rows = who.shape[0] + memories
    first_row = np.arange(memories) + np.concatenate(([0], np.cumsum(uses_per_memory)[:-1]))
    last_row = first_row + uses_per_memory
    use_row = who + np.arange(who.shape[0])  # the row a use ends; the next row starts there

    start = np.empty(rows)
    end = np.empty(rows)
    event = np.zeros(rows, dtype=bool)
    start[first_row] = starts
    start[use_row + 1] = when
    end[use_row] = when
    end[last_row] = ends
    event[use_row] = True
    memory = np.repeat(np.arange(memories, dtype=np.int64), uses_per_memory + 1)
    count = start_counts[memory] + (np.arange(rows) - first_row[memory])
    return Intervals(
        start=start,
        end=end,
        count=count,
        event=event,
        strength=strengths[memory],
        memory=memory,
    )


def split_intervals(intervals: Intervals, at: float) -> tuple[Intervals, Intervals]:
    """(training, validation): the observed time before `at` and from `at` on.

    A row straddling `at` is censored at `at` in training; its remainder, start kept so
    the decay clock stays right, is observed from `at` in validation. A row ending at or
    before `at` (its use included) is training's only.
    """
    require_finite("at", at)
    training_rows = intervals.observed_from < at
    training_rows |= intervals.end <= at
    training = intervals.take(training_rows)
    cut = training.end > at
    training = replace(
        training,
        end=np.where(cut, at, training.end),
        event=training.event & ~cut,
    )
    validation = intervals.take(intervals.end > at)
    validation = replace(validation, observed_from=np.maximum(validation.observed_from, at))
    return training, validation


# --- Decay curves, vectorised ----------------------------------------------------------------


def _expm1_ratio(x: np.ndarray) -> np.ndarray:
    """expm1(x) / x, 1 at x = 0."""
    small = np.abs(x) < 1e-10
    safe = np.where(small, 1.0, x)
    return np.where(small, 1.0 + x / 2, np.expm1(safe) / safe)


def decay_values(params: DecayParams, seconds: np.ndarray) -> np.ndarray:
    """decay_factor over an array of seconds (negative counts as 0)."""
    s = np.maximum(np.asarray(seconds, dtype=np.float64), 0.0)
    if params.model == "exponential":
        return np.exp(-half_life_to_lambda(params.half_life_days) * s)
    if params.model == "power_law":
        t0 = power_law_t0_seconds(params.half_life_days, params.power_alpha)
        return np.exp(-params.power_alpha * np.log1p(s / t0))
    fast = half_life_to_lambda(params.fast_half_life_days)
    slow = half_life_to_lambda(params.slow_half_life_days)
    w = params.fast_weight
    return w * np.exp(-fast * s) + (1 - w) * np.exp(-slow * s)


def decay_increment(params: DecayParams, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The integral of the decay factor over [low, high] seconds since the last use, in
    closed form, written to keep its precision far down the tail."""
    a = np.maximum(np.asarray(low, dtype=np.float64), 0.0)
    b = np.maximum(np.asarray(high, dtype=np.float64), a)
    width = b - a
    if params.model == "exponential":
        lam = half_life_to_lambda(params.half_life_days)
        return _exponential_increment(lam, a, width)
    if params.model == "power_law":
        alpha = params.power_alpha
        t0 = power_law_t0_seconds(params.half_life_days, alpha)
        log_ratio = np.log1p(width / (t0 + a))
        head = np.exp((1 - alpha) * np.log1p(a / t0))
        return t0 * head * log_ratio * _expm1_ratio((1 - alpha) * log_ratio)
    fast = half_life_to_lambda(params.fast_half_life_days)
    slow = half_life_to_lambda(params.slow_half_life_days)
    w = params.fast_weight
    return w * _exponential_increment(fast, a, width) + (1 - w) * _exponential_increment(
        slow, a, width
    )


def _exponential_increment(lam: float, a: np.ndarray, width: np.ndarray) -> np.ndarray:
    return np.exp(-lam * a) * -np.expm1(-lam * width) / lam


def decay_integral(params: DecayParams, seconds: np.ndarray) -> np.ndarray:
    """I(g): the integral of the decay factor over [0, g] seconds."""
    g = np.asarray(seconds, dtype=np.float64)
    return decay_increment(params, np.zeros_like(g), g)


def decay_total(params: DecayParams) -> float:
    """The integral of the decay factor over [0, inf) in seconds (inf for a power law with
    alpha <= 1): with a finite total, a memory may never be used again."""
    if params.model == "exponential":
        return 1 / half_life_to_lambda(params.half_life_days)
    if params.model == "power_law":
        alpha = params.power_alpha
        t0 = power_law_t0_seconds(params.half_life_days, alpha)
        return t0 / (alpha - 1) if alpha > 1 else math.inf
    w = params.fast_weight
    return w / half_life_to_lambda(params.fast_half_life_days) + (1 - w) / half_life_to_lambda(
        params.slow_half_life_days
    )


# --- Likelihood ------------------------------------------------------------------------------


class _Data:
    """The training rows in the form every likelihood evaluation reuses: events first (so
    their rows are a slice), log(n + 1) as an index into the distinct counts, and scratch
    buffers (numpy's in-place operations are twice as fast as fresh arrays here)."""

    def __init__(self, intervals: Intervals) -> None:
        order = np.argsort(~intervals.event, kind="stable")
        counts, self.count_index = np.unique(intervals.count[order], return_inverse=True)
        self.distinct_log_count = np.log1p(counts.astype(np.float64))
        strength = intervals.strength[order]
        self.strength = None if np.all(strength == 1.0) else strength
        self.gap = (intervals.end - intervals.start)[order]
        observed_gap = (intervals.observed_from - intervals.start)[order]
        self.late = np.flatnonzero(observed_gap > 0)
        self.late_gap = observed_gap[self.late]
        self.events = int(intervals.event.sum())
        self.event_gap = self.gap[: self.events]
        log_count = self.distinct_log_count[self.count_index]
        self.sum_event_log_count = float(log_count[: self.events].sum())
        self.sum_event_gap = float(self.event_gap.sum())
        with np.errstate(divide="ignore"):
            self.sum_event_log_strength = float(np.log(strength[: self.events]).sum())
        rows = self.gap.shape[0]
        self._weights = np.empty(rows)
        self._first = np.empty(rows)
        self._second = np.empty(rows)

    def weights(self, beta: float) -> np.ndarray:
        """(n + 1)^beta * strength per row (a scratch buffer)."""
        np.take(np.exp(beta * self.distinct_log_count), self.count_index, out=self._weights)
        if self.strength is not None:
            self._weights *= self.strength
        return self._weights

    def late_exposure(self, params: DecayParams, weights: np.ndarray) -> float:
        """The part of the exposure before the rows' observed_from (none after build_intervals)."""
        if not self.late.size:
            return 0.0
        return float(weights[self.late] @ decay_integral(params, self.late_gap))

    def sums(self, params: DecayParams) -> tuple[float, float]:
        """(sum over uses of log D, exposure: sum of weight * integral of D), each model's
        two sums sharing their transcendental functions."""
        weights = self.weights(params.beta)
        first, second, events = self._first, self._second, self.events
        if params.model == "exponential":
            lam = half_life_to_lambda(params.half_life_days)
            np.multiply(self.gap, -lam, out=first)
            np.expm1(first, out=first)  # -(1 - e^(-lam g)) = -lam * I(g)
            exposure = -float(weights @ first) / lam
            sum_log_decay = -lam * self.sum_event_gap
        elif params.model == "power_law":
            alpha = params.power_alpha
            t0 = power_law_t0_seconds(params.half_life_days, alpha)
            np.divide(self.gap, t0, out=first)
            np.log1p(first, out=first)  # log(1 + g/t0)
            sum_log_decay = -alpha * float(first[:events].sum())
            if abs(alpha - 1) < 1e-9:
                exposure = t0 * float(weights @ first)
            else:
                np.multiply(first, 1 - alpha, out=first)
                np.expm1(first, out=first)  # (1 + g/t0)^(1-alpha) - 1
                exposure = float(weights @ first) * t0 / (1 - alpha)
        else:
            w = params.fast_weight
            fast = half_life_to_lambda(params.fast_half_life_days)
            slow = half_life_to_lambda(params.slow_half_life_days)
            np.multiply(self.gap, -fast, out=first)
            np.expm1(first, out=first)
            np.multiply(self.gap, -slow, out=second)
            np.expm1(second, out=second)
            exposure = -w / fast * float(weights @ first) - (1 - w) / slow * float(weights @ second)
            # D = 1 + w * first + (1 - w) * second; where it is tiny, from logs instead.
            mix = 1 + w * first[:events] + (1 - w) * second[:events]
            tiny = mix < 1e-6
            with np.errstate(divide="ignore"):
                if np.any(tiny):
                    mix[tiny] = 1.0
                    sum_log_decay = float(np.log(mix).sum()) + float(
                        _log_decay(params, self.event_gap[tiny]).sum()
                    )
                else:
                    sum_log_decay = float(np.log(mix).sum())
        return sum_log_decay, exposure - self.late_exposure(params, weights)


def _log_decay(params: DecayParams, seconds: np.ndarray) -> np.ndarray:
    s = np.maximum(seconds, 0.0)
    if params.model == "exponential":
        return -half_life_to_lambda(params.half_life_days) * s
    if params.model == "power_law":
        t0 = power_law_t0_seconds(params.half_life_days, params.power_alpha)
        return -params.power_alpha * np.log1p(s / t0)
    fast = half_life_to_lambda(params.fast_half_life_days)
    slow = half_life_to_lambda(params.slow_half_life_days)
    w = params.fast_weight
    with np.errstate(divide="ignore"):
        return np.logaddexp(np.log(w) - fast * s, np.log1p(-w) - slow * s)


def _profile(data: _Data, params: DecayParams) -> tuple[float, float]:
    """(profile log-likelihood without the strengths' constant sum of log strength, rate)."""
    sum_log_decay, exposure = data.sums(params)
    if data.events == 0 or not exposure > 0:
        return -math.inf, 0.0
    rate = data.events / exposure
    loglik = (
        data.events * math.log(rate)
        - data.events
        + params.beta * data.sum_event_log_count
        + sum_log_decay
    )
    return loglik, rate


def profile_log_likelihood(params: DecayParams, intervals: Intervals) -> tuple[float, float]:
    """(log-likelihood, rate): the log-likelihood of `intervals` under `params` at the
    rate that maximises it, N_uses / sum (n+1)^beta * strength * integral of D."""
    data = _Data(intervals)
    loglik, rate = _profile(data, params)
    return loglik + data.sum_event_log_strength, rate


# --- Optimiser -------------------------------------------------------------------------------


def _nelder_mead(
    objective: Callable[[np.ndarray], float],
    start: np.ndarray,
    steps: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    ftol: float = 1e-3,
    max_evaluations: int = 400,
) -> tuple[np.ndarray, float]:
    """Minimise `objective` within a box (points are clipped into it) from `start`.

    Stops when the simplex's values are within ftol of the best (the objective is a
    log-likelihood: 1e-3 is far below its noise, and a flat direction, such as the weight
    of two equal components, needs no pinning down), or after max_evaluations.
    """
    dim = start.shape[0]
    points = [np.clip(start, lower, upper)]
    for i in range(dim):
        point = points[0].copy()
        point[i] += steps[i] if point[i] + steps[i] <= upper[i] else -steps[i]
        points.append(np.clip(point, lower, upper))
    simplex = np.array(points)
    values = np.array([objective(p) for p in simplex])
    evaluations = dim + 1
    while evaluations < max_evaluations:
        order = np.argsort(values)
        simplex, values = simplex[order], values[order]
        if not np.isfinite(values[0]):
            break  # no point of the simplex has a finite value: nothing to descend
        if np.max(np.abs(values[1:] - values[0])) <= ftol:  # an infinite one: not yet
            break
        centroid = simplex[:-1].mean(axis=0)
        worst = simplex[-1]
        reflected = np.clip(2 * centroid - worst, lower, upper)
        f_reflected = objective(reflected)
        evaluations += 1
        if f_reflected < values[0]:
            expanded = np.clip(3 * centroid - 2 * worst, lower, upper)
            f_expanded = objective(expanded)
            evaluations += 1
            if f_expanded < f_reflected:
                simplex[-1], values[-1] = expanded, f_expanded
            else:
                simplex[-1], values[-1] = reflected, f_reflected
            continue
        if f_reflected < values[-2]:
            simplex[-1], values[-1] = reflected, f_reflected
            continue
        if f_reflected < values[-1]:
            contracted = np.clip(centroid + 0.5 * (reflected - centroid), lower, upper)
        else:
            contracted = np.clip(centroid + 0.5 * (worst - centroid), lower, upper)
        f_contracted = objective(contracted)
        evaluations += 1
        if f_contracted < min(f_reflected, values[-1]):
            simplex[-1], values[-1] = contracted, f_contracted
            continue
        simplex[1:] = simplex[0] + 0.5 * (simplex[1:] - simplex[0])
        values[1:] = [objective(p) for p in simplex[1:]]
        evaluations += dim
    best = int(np.argmin(values))
    return simplex[best], float(values[best])


_LOG_HL = (math.log(HALF_LIFE_BOUNDS_DAYS[0]), math.log(HALF_LIFE_BOUNDS_DAYS[1]))
_LOG_ALPHA = (math.log(ALPHA_BOUNDS[0]), math.log(ALPHA_BOUNDS[1]))


def _decode(model: str, x: np.ndarray) -> DecayParams:
    """The parameters at point x of the model's optimisation space."""
    if model == "exponential":
        return DecayParams(model="exponential", half_life_days=math.exp(x[0]), beta=float(x[1]))
    if model == "power_law":
        return DecayParams(
            model="power_law",
            half_life_days=math.exp(x[0]),
            beta=float(x[1]),
            power_alpha=math.exp(x[2]),
        )
    fast, slow = math.exp(x[0]), math.exp(x[1])
    weight = 1 / (1 + math.exp(-x[2]))
    if fast > slow:  # the same curve with the components named the other way round
        fast, slow, weight = slow, fast, 1 - weight
    return DecayParams(
        model="two_component",
        beta=float(x[3]),
        fast_half_life_days=fast,
        slow_half_life_days=slow,
        fast_weight=weight,
    )


def _box(model: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lower, upper, initial steps) of the model's optimisation space."""
    if model == "exponential":
        bounds = [_LOG_HL, BETA_BOUNDS]
        steps = [0.5, 0.2]
    elif model == "power_law":
        bounds = [_LOG_HL, BETA_BOUNDS, _LOG_ALPHA]
        steps = [0.5, 0.2, 0.3]
    else:
        bounds = [_LOG_HL, _LOG_HL, LOGIT_BOUNDS, BETA_BOUNDS]
        steps = [0.5, 0.5, 1.0, 0.2]
    lower, upper = np.array(bounds, dtype=np.float64).T
    return lower, upper, np.array(steps)


def _candidates(model: str, exponential: DecayParams | None) -> list[np.ndarray]:
    """Starting points: a coarse grid for the exponential, the neighbourhood of the
    exponential's best fit for the other models."""
    if model == "exponential":
        return [
            np.array([math.log(h), b])
            for h in np.geomspace(0.03, 120.0, 9)
            for b in (0.2, 0.8, 1.4)
        ]
    assert exponential is not None
    log_hl, beta = math.log(exponential.half_life_days), exponential.beta
    if model == "power_law":
        return [
            np.array([log_hl + shift, beta, math.log(alpha)])
            for shift in (-0.7, 0.0)
            for alpha in (0.5, 1.0, 2.0, 4.0)
        ]
    return [
        np.array([log_hl - fast, log_hl + slow, logit, beta])
        for fast in (0.7, 2.0)
        for slow in (0.7, 2.0)
        for logit in (-1.0, 1.0)
    ]


def _fit_model(
    data: _Data, model: str, exponential: DecayParams | None, coarse: _Data | None = None
) -> tuple[DecayParams, float, float]:
    """(params, rate, log-likelihood) of the model's maximum-likelihood fit: the best of
    the starting points, Nelder-Mead from it on `coarse` (a sample of the memories; default
    all of them), and Nelder-Mead again on all of them from there with a smaller simplex
    (which also restarts a simplex that collapsed)."""
    lower, upper, steps = _box(model)

    def objective_on(rows: _Data) -> Callable[[np.ndarray], float]:
        def objective(x: np.ndarray) -> float:
            loglik, _ = _profile(rows, _decode(model, x))
            return -loglik if math.isfinite(loglik) else math.inf

        return objective

    first = objective_on(coarse or data)
    starts = [np.clip(x, lower, upper) for x in _candidates(model, exponential)]
    best_x = min(starts, key=first)
    best_x, _ = _nelder_mead(first, best_x, steps, lower, upper)
    best_x, _ = _nelder_mead(objective_on(data), best_x, steps / 4, lower, upper)
    params = _decode(model, best_x)
    loglik, rate = _profile(data, params)
    return params, rate, loglik


# --- Validation loss -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Cases:
    """The validation checkpoints' cases: state at t and whether a use came within the
    horizon."""

    memory: np.ndarray
    log_count: np.ndarray
    strength: np.ndarray
    dt: np.ndarray
    used: np.ndarray
    horizon_seconds: float

    def __len__(self) -> int:
        return int(self.dt.shape[0])


def _cases(validation: Intervals, *, at: float, horizon_days: float) -> _Cases:
    """Every (memory, checkpoint) with the memory observed over [t, t + horizon], the
    checkpoints being `at` and every day after it (every k-th day when there would be more
    than MAX_CHECKPOINTS cases)."""
    horizon = horizon_days * SECONDS_PER_DAY
    nothing = np.zeros(0)
    empty = _Cases(np.zeros(0, np.int64), nothing, nothing, nothing, np.zeros(0, bool), horizon)
    if len(validation) == 0:
        return empty
    order = np.lexsort((validation.start, validation.memory))
    rows = validation.take(order)
    memory_ids, first = np.unique(rows.memory, return_index=True)
    observed_from = np.minimum.reduceat(rows.observed_from, first)
    observed_to = np.maximum.reduceat(rows.end, first)
    last = float(observed_to.max())
    if last - at < horizon:
        return empty
    days = math.floor((last - at - horizon) / SECONDS_PER_DAY) + 1
    checkpoints = at + SECONDS_PER_DAY * np.arange(days, dtype=np.float64)

    def per_memory(times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        low = np.searchsorted(times, observed_from, side="left")
        high = np.searchsorted(times + horizon, observed_to, side="right")
        return low, np.maximum(high - low, 0)

    low, counts = per_memory(checkpoints)
    total = int(counts.sum())
    if total > MAX_CHECKPOINTS:
        stride = math.ceil(total / MAX_CHECKPOINTS)
        checkpoints = checkpoints[::stride]
        low, counts = per_memory(checkpoints)
        total = int(counts.sum())
    if total == 0:
        return empty
    group = np.repeat(np.arange(memory_ids.shape[0]), counts)
    offset = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    t = checkpoints[low[group] + offset]

    # The row holding t is the memory's first row ending after t: search one key that
    # orders rows by memory, then by end.
    span = last - float(rows.start.min()) + 1.0
    memory_rank = np.repeat(np.arange(memory_ids.shape[0]), np.diff(np.append(first, len(rows))))
    base = float(rows.start.min())
    row_keys = memory_rank * span + (rows.end - base)
    case_keys = group * span + (t - base)
    row = np.searchsorted(row_keys, case_keys, side="right")
    row = np.minimum(row, len(rows) - 1)
    return _Cases(
        memory=group,
        log_count=np.log1p(rows.count[row].astype(np.float64)),
        strength=rows.strength[row],
        dt=t - rows.start[row],
        used=rows.event[row] & (rows.end[row] <= t + horizon),
        horizon_seconds=horizon,
    )


def _case_losses(cases: _Cases, params: DecayParams, rate: float) -> np.ndarray:
    """Each case's binary log loss."""
    mass = (
        rate
        * np.exp(params.beta * cases.log_count)
        * cases.strength
        * decay_increment(params, cases.dt, cases.dt + cases.horizon_seconds)
    )
    p = np.clip(-np.expm1(-mass), PROBABILITY_CLIP, 1 - PROBABILITY_CLIP)
    return -np.where(cases.used, np.log(p), np.log1p(-p))


def _cases_loss(cases: _Cases, params: DecayParams, rate: float) -> float:
    if len(cases) == 0:
        return math.nan
    return float(_case_losses(cases, params, rate).mean())


def _gain_z(cases: _Cases, fitted: np.ndarray, default: np.ndarray) -> float:
    """How many standard errors the mean loss gain (default - fitted) is from 0, the
    error clustered by memory (a memory's cases share its history, so they are not
    independent; the memories are)."""
    memories = int(cases.memory.max()) + 1 if len(cases) else 0
    if memories < 2:
        return math.nan
    gain = default - fitted
    mean = float(gain.mean())
    per_memory = np.bincount(cases.memory, weights=gain - mean, minlength=memories)
    error = math.sqrt(float(per_memory @ per_memory) * memories / (memories - 1)) / len(cases)
    if error == 0:
        return math.inf if mean > 0 else math.nan
    return mean / error


def validation_loss(
    params: DecayParams,
    rate: float,
    validation: Intervals,
    *,
    at: float,
    horizon_days: float = 7.0,
) -> float:
    """Mean binary log loss of use_probability over the validation checkpoints (NaN when
    there are none: the slice is shorter than the horizon)."""
    require_finite("rate", rate)
    require_finite("at", at)
    require_finite("horizon_days", horizon_days)
    return _cases_loss(_cases(validation, at=at, horizon_days=horizon_days), params, rate)


# --- Fit -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FitResult:
    """The outcome of fit_decay. params is the best model's fit (the other models' fields
    at the DecayParams defaults), rate its a per second per unit of score; the default_*
    fields are the constants' (DecayParams given to fit_decay, rate fitted on training)."""

    params: DecayParams
    rate: float
    default_rate: float
    n_memories: int
    n_uses_train: int
    n_uses_validation: int
    validation_loss: float
    default_validation_loss: float
    model_losses: dict[str, float]
    accepted: bool
    reason: str
    model_params: dict[str, DecayParams] = field(default_factory=dict)
    gain_z: float = math.nan

    @property
    def improvement(self) -> float:
        """Relative improvement of the validation loss over the constants' (NaN if unknown)."""
        if not self.default_validation_loss > 0:
            return math.nan
        return 1 - self.validation_loss / self.default_validation_loss


def _choose_model(losses: dict[str, float]) -> str:
    """The model with the lowest loss, or a simpler one (fewer parameters: DECAY_MODELS'
    order) within MODEL_TOLERANCE of it; "" when there is none."""
    finite = {m: loss for m, loss in losses.items() if math.isfinite(loss)}
    if not finite:
        return next(iter(losses), "")
    lowest = min(finite.values())
    return next(
        m
        for m in sorted(finite, key=DECAY_MODELS.index)
        if finite[m] <= lowest * (1 + MODEL_TOLERANCE)
    )


def fit_decay(
    intervals: Intervals,
    *,
    split_at: float,
    default: DecayParams = DecayParams(),  # noqa: B008 (frozen)
    horizon_days: float = 7.0,
    margin: float = MARGIN,
    min_uses: int = MIN_USES,
    min_validation_uses: int = MIN_VALIDATION_USES,
    min_z: float = MIN_Z,
    min_validation_memories: int = MIN_VALIDATION_MEMORIES,
    models: Sequence[str] = DECAY_MODELS,
) -> FitResult:
    """Fit each model on the rows before split_at, score it on those after, and accept the
    best if it beats `default` by `margin` and by min_z standard errors (module docstring)."""
    require_finite("split_at", split_at)
    require_finite("horizon_days", horizon_days)
    require_finite("margin", margin)
    require_finite("min_z", min_z)
    if not horizon_days > 0:
        raise ValueError(f"horizon_days must be positive, got {horizon_days}")
    if not models or any(m not in DECAY_MODELS for m in models):
        raise ValueError(f"models must be among {DECAY_MODELS}, got {list(models)}")

    training, validation = split_intervals(intervals, split_at)
    n_memories = int(np.unique(intervals.memory).shape[0])
    n_train = int(training.event.sum())
    n_validation = int(validation.event.sum())
    data = _Data(training)
    # The search starts on a sample of the memories when there are many rows; only the
    # last refinement reads them all.
    every = math.ceil(len(training) / COARSE_ROWS)
    coarse = _Data(training.take(training.memory % every == 0)) if every > 1 else None
    cases = _cases(validation, at=split_at, horizon_days=horizon_days)

    _, default_rate = _profile(data, default)
    fits: dict[str, tuple[DecayParams, float]] = {}
    if n_train > 0:
        exponential, rate, _ = _fit_model(data, "exponential", None, coarse)
        fits["exponential"] = (exponential, rate)
        for model in models:
            if model != "exponential":
                params, rate, _ = _fit_model(data, model, exponential, coarse)
                fits[model] = (params, rate)
        fits = {m: fits[m] for m in models}
    case_losses = {m: _case_losses(cases, p, r) for m, (p, r) in fits.items()}
    default_case_losses = _case_losses(cases, default, default_rate)
    losses = {m: float(v.mean()) if v.size else math.nan for m, v in case_losses.items()}
    default_loss = float(default_case_losses.mean()) if len(cases) and default_rate else math.nan
    best_model = _choose_model(losses)
    params, rate = fits.get(best_model, (default, default_rate))
    loss = losses.get(best_model, default_loss)
    z = (
        _gain_z(cases, case_losses[best_model], default_case_losses)
        if best_model in case_losses and len(cases)
        else math.nan
    )

    accepted = False
    if n_train < min_uses:
        reason = f"not enough history: {n_train} uses before the split, {min_uses} needed"
    elif n_validation < min_validation_uses:
        reason = (
            f"not enough history: {n_validation} uses after the split, {min_validation_uses} needed"
        )
    elif len(cases) == 0:
        reason = (
            f"not enough history: the validation slice is shorter than the {horizon_days:g}-day "
            "horizon"
        )
    elif (validation_memories := int(np.unique(cases.memory).shape[0])) < min_validation_memories:
        reason = (
            f"not enough history: {validation_memories} memories observed after the split, "
            f"{min_validation_memories} needed"
        )
    else:
        gain = 1 - loss / default_loss
        if gain <= margin:
            reason = (
                f"the constants predict as well: the fit gains {100 * gain:.1f} %, "
                f"{100 * margin:.1f} % needed"
            )
        elif not z >= min_z:
            reason = (
                f"the constants predict as well: the fit gains {100 * gain:.1f} %, but within "
                f"the noise ({z:.1f} standard errors, {min_z:g} needed)"
            )
        else:
            accepted = True
            reason = f"the fit beats the constants by {100 * gain:.1f} % ({z:.1f} standard errors)"
    return FitResult(
        params=params,
        rate=rate,
        default_rate=default_rate,
        n_memories=n_memories,
        n_uses_train=n_train,
        n_uses_validation=n_validation,
        validation_loss=loss,
        default_validation_loss=default_loss,
        model_losses=losses,
        accepted=accepted,
        reason=reason,
        model_params={m: p for m, (p, _) in fits.items()},
        gain_z=z,
    )


# --- Probabilities -------------------------------------------------------------------------


def use_probability(
    params: DecayParams,
    rate: float,
    *,
    use_count: int,
    dt_seconds: float,
    strength: float,
    horizon_days: float,
) -> float:
    """The chance of at least one use within the next horizon_days of a memory with
    use_count uses, dt_seconds since its last use and that strength:
    1 - exp(-rate * (n+1)^beta * strength * integral of D over [dt, dt + horizon])."""
    require_finite("rate", rate)
    require_finite("strength", strength)
    require_finite("horizon_days", horizon_days)
    dt = max(0.0, require_finite("dt_seconds", dt_seconds))
    horizon = max(0.0, horizon_days) * SECONDS_PER_DAY
    increment = float(decay_increment(params, np.array([dt]), np.array([dt + horizon]))[0])
    mass = rate * (max(0, use_count) + 1) ** params.beta * strength * increment
    return -math.expm1(-mass)


THRESHOLD_SEARCH_DAYS = 100_000.0


def seconds_until_decay(params: DecayParams, threshold: float) -> float:
    """Seconds after a use at which decay_factor falls to `threshold` (0 for a threshold of
    1 or more), by bisection to a millisecond; capped at THRESHOLD_SEARCH_DAYS."""
    require_finite("threshold", threshold)
    if not threshold > 0:
        raise ValueError(f"threshold must be positive, got {threshold}")
    if threshold >= 1:
        return 0.0
    low, high = 0.0, SECONDS_PER_DAY
    cap = THRESHOLD_SEARCH_DAYS * SECONDS_PER_DAY
    while decay_factor(high, params) > threshold and high < cap:
        low, high = high, min(2 * high, cap)
    if decay_factor(high, params) > threshold:
        return cap
    while high - low > 1e-3 and high - low > 1e-12 * high:
        middle = (low + high) / 2
        if decay_factor(middle, params) > threshold:
            low = middle
        else:
            high = middle
    return high


def threshold_probability(
    params: DecayParams, rate: float, *, threshold: float, horizon_days: float = 30.0
) -> float:
    """The chance of a use within horizon_days of a never-used memory (n = 0, strength 1)
    at the moment its score falls to `threshold`: what "forget when the chance it is
    needed in the next 30 days falls under X %" means for a threshold."""
    dt = seconds_until_decay(params, threshold)
    return use_probability(
        params, rate, use_count=0, dt_seconds=dt, strength=1.0, horizon_days=horizon_days
    )


# --- Simulation ------------------------------------------------------------------------------


def _invert_integral(params: DecayParams, target: np.ndarray) -> np.ndarray:
    """The gap g with I(g) = target (inf where the target is beyond the total mass)."""
    total = decay_total(params)
    gap = np.full(target.shape, np.inf)
    reachable = target < total
    y = target[reachable]
    if params.model == "exponential":
        lam = half_life_to_lambda(params.half_life_days)
        gap[reachable] = -np.log1p(-lam * y) / lam
    elif params.model == "power_law":
        alpha = params.power_alpha
        t0 = power_law_t0_seconds(params.half_life_days, alpha)
        # (1 + g/t0)^(1 - alpha) = 1 - y (alpha - 1) / t0, solved for log(1 + g/t0)
        if abs(alpha - 1) < 1e-12:
            log_ratio = y / t0
        else:
            log_ratio = np.log1p(-y * (alpha - 1) / t0) / (1 - alpha)
        with np.errstate(over="ignore"):
            gap[reachable] = t0 * np.expm1(log_ratio)
    else:
        low = np.zeros_like(y)
        high = np.full_like(y, SECONDS_PER_DAY)
        for _ in range(200):
            short = decay_integral(params, high) < y
            if not short.any():
                break
            high = np.where(short, high * 2, high)
        for _ in range(60):
            middle = (low + high) / 2
            below = decay_integral(params, middle) < y
            low = np.where(below, middle, low)
            high = np.where(below, high, middle)
        gap[reachable] = high
    return gap


def simulate(
    params: DecayParams,
    rate: float,
    *,
    n_memories: int,
    days: float,
    rng: np.random.Generator,
    start_spread_days: float | None = None,
    max_uses: int = 50_000_000,
) -> dict[str, np.ndarray]:
    """A namespace drawn from the model: memories created uniformly over the first
    start_spread_days (default 80 % of the window) of a `days`-long window starting at
    SIMULATION_EPOCH, strength 1, used by exact inversion of the cumulative intensity
    until the window ends. Returns build_intervals' keyword arguments; ValueError past
    max_uses (beta > 1 can make uses run away)."""
    require_finite("rate", rate)
    require_finite("days", days)
    if not rate > 0 or not days > 0 or n_memories < 0:
        raise ValueError("rate and days must be positive, n_memories not negative")
    spread = 0.8 * days if start_spread_days is None else start_spread_days
    require_finite("start_spread_days", spread)
    end_at = SIMULATION_EPOCH + days * SECONDS_PER_DAY
    created = SIMULATION_EPOCH + rng.uniform(0.0, min(spread, days), n_memories) * SECONDS_PER_DAY
    created.sort()
    who: list[np.ndarray] = []
    when: list[np.ndarray] = []
    alive = np.arange(n_memories)
    last = created.copy()
    uses = np.zeros(n_memories, dtype=np.int64)
    total = 0
    while alive.size:
        scale = rate * (uses[alive] + 1.0) ** params.beta
        gap = _invert_integral(params, rng.exponential(1.0, alive.size) / scale)
        at = last[alive] + gap
        used = at <= end_at
        alive, at = alive[used], at[used]
        who.append(alive)
        when.append(at)
        last[alive] = at
        uses[alive] += 1
        total += alive.size
        if total > max_uses:
            raise ValueError(f"more than {max_uses} uses: the process runs away")
    return {
        "memory_start": created,
        "memory_start_count": np.zeros(n_memories, dtype=np.int64),
        "memory_end": np.full(n_memories, end_at),
        "memory_strength": np.ones(n_memories),
        "use_memory": np.concatenate(who) if who else np.zeros(0, dtype=np.int64),
        "use_at": np.concatenate(when) if when else np.zeros(0),
    }
