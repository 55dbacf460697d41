"""memories.decay_fit: intervals, closed forms, recovery of generating parameters and the
safeguard that keeps the constants unless a fit predicts clearly better. Pure: no database."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memories.decay import DECAY_MODELS, SECONDS_PER_DAY, DecayParams, decay_factor
from memories.decay_fit import (
    MIN_USES,
    SIMULATION_EPOCH,
    Intervals,
    build_intervals,
    decay_increment,
    decay_integral,
    decay_total,
    decay_values,
    fit_decay,
    profile_log_likelihood,
    seconds_until_decay,
    simulate,
    split_intervals,
    threshold_probability,
    use_probability,
    validation_loss,
)

DAY = SECONDS_PER_DAY
DAYS = 60.0
SPLIT_AT = SIMULATION_EPOCH + 42 * DAY  # 70 % of the window

MODELS = [
    DecayParams(),
    DecayParams(half_life_days=0.7, beta=1.1),
    DecayParams(model="power_law", power_alpha=1.1),
    DecayParams(model="power_law", power_alpha=1.0),
    DecayParams(model="power_law", half_life_days=10.0, power_alpha=0.4),
    DecayParams(model="power_law", half_life_days=2.0, power_alpha=3.5),
    DecayParams(model="two_component"),
    DecayParams(model="two_component", fast_weight=0.0),
    DecayParams(model="two_component", fast_half_life_days=0.1, fast_weight=1.0),
]


def namespace(params: DecayParams, *, mass: float, memories: int, seed: int) -> Intervals:
    """A simulated namespace of DAYS days; `mass` is the rate times the decay's total
    integral: a fresh memory's expected uses from its first generation."""
    rate = mass / decay_total(params)
    sim = simulate(params, rate, n_memories=memories, days=DAYS, rng=np.random.default_rng(seed))
    return build_intervals(**sim)


# --- Intervals -------------------------------------------------------------------------------


def tiny() -> Intervals:
    return build_intervals(
        memory_start=np.array([100.0, 150.0, 500.0]),
        memory_start_count=np.array([2, 0, 7]),
        memory_end=np.array([200.0, 300.0, 600.0]),
        memory_strength=np.array([1.5, 1.0, 0.5]),
        use_memory=np.array([1, 0, 0, 0, 1, 0, 1]),
        use_at=np.array([250.0, 160.0, 90.0, 120.0, 400.0, 200.0, 149.0]),
    )


def test_build_intervals_hand_example() -> None:
    # memory 0: uses at 120, 160, 200 (90 is before it starts), 2 uses already made;
    # memory 1: a use at 250 (149 before it starts, 400 after it ends); memory 2: none.
    rows = tiny()
    np.testing.assert_array_equal(rows.start, [100, 120, 160, 200, 150, 250, 500])
    np.testing.assert_array_equal(rows.end, [120, 160, 200, 200, 250, 300, 600])
    np.testing.assert_array_equal(rows.count, [2, 3, 4, 5, 0, 1, 7])
    np.testing.assert_array_equal(rows.event, [1, 1, 1, 0, 1, 0, 0])
    np.testing.assert_array_equal(rows.strength, [1.5, 1.5, 1.5, 1.5, 1.0, 1.0, 0.5])
    np.testing.assert_array_equal(rows.memory, [0, 0, 0, 0, 1, 1, 2])
    np.testing.assert_array_equal(rows.observed_from, rows.start)
    assert rows.count.dtype == np.int64 and rows.event.dtype == bool


def test_build_intervals_without_uses_and_of_nothing() -> None:
    rows = build_intervals(
        memory_start=np.array([5.0]),
        memory_start_count=np.array([0]),
        memory_end=np.array([9.0]),
        memory_strength=np.array([1.0]),
        use_memory=np.array([], dtype=np.int64),
        use_at=np.array([]),
    )
    assert (rows.start.tolist(), rows.end.tolist(), rows.event.tolist()) == ([5], [9], [False])
    empty = np.array([])
    nothing = build_intervals(
        memory_start=empty,
        memory_start_count=empty,
        memory_end=empty,
        memory_strength=empty,
        use_memory=empty,
        use_at=empty,
    )
    assert len(nothing) == 0


def test_split_intervals_hand_example() -> None:
    training, validation = split_intervals(tiny(), 170.0)
    # training: what happened before 170, rows crossing it censored there.
    np.testing.assert_array_equal(training.start, [100, 120, 160, 150])
    np.testing.assert_array_equal(training.end, [120, 160, 170, 170])
    np.testing.assert_array_equal(training.event, [1, 1, 0, 0])
    np.testing.assert_array_equal(training.count, [2, 3, 4, 0])
    # validation: from 170 on, with the decay clock of the rows it cut kept.
    np.testing.assert_array_equal(validation.start, [160, 200, 150, 250, 500])
    np.testing.assert_array_equal(validation.observed_from, [170, 200, 170, 250, 500])
    np.testing.assert_array_equal(validation.end, [200, 200, 250, 300, 600])
    np.testing.assert_array_equal(validation.event, [1, 0, 1, 0, 0])
    np.testing.assert_array_equal(validation.memory, [0, 0, 1, 1, 2])


@pytest.mark.parametrize("at", [0.0, 120.0, 199.0, 200.0, 1000.0])
def test_split_keeps_every_use_and_second(at: float) -> None:
    rows = tiny()
    training, validation = split_intervals(rows, at)
    assert training.event.sum() + validation.event.sum() == rows.event.sum()
    observed = (rows.end - rows.observed_from).sum()
    split = (training.end - training.observed_from).sum()
    split += (validation.end - validation.observed_from).sum()
    assert split == pytest.approx(observed)
    assert np.all(training.end <= at)
    assert np.all(validation.observed_from >= at) and np.all(validation.end > at)


# --- Closed forms --------------------------------------------------------------------------


@pytest.mark.parametrize("params", MODELS, ids=repr)
def test_closed_form_integrals_match_numeric_integration(params: DecayParams) -> None:
    def numeric(low: float, high: float) -> float:
        grid = np.linspace(low, high, 400_001)
        return float(np.trapezoid(decay_values(params, grid), grid))

    for g in (0.3 * DAY, 3 * DAY, 40 * DAY):
        closed = decay_integral(params, np.array([g]))[0]
        assert closed == pytest.approx(numeric(0.0, g), rel=1e-6)
    for low, high in ((5 * DAY, 12 * DAY), (300 * DAY, 301 * DAY)):
        closed = decay_increment(params, np.array([low]), np.array([high]))[0]
        assert closed == pytest.approx(numeric(low, high), rel=1e-6)


@pytest.mark.parametrize("params", MODELS, ids=repr)
def test_vectorised_decay_is_decay_factor(params: DecayParams) -> None:
    seconds = np.array([-5.0, 0.0, 100.0, DAY, 9 * DAY, 400 * DAY])
    expected = [decay_factor(s, params) for s in seconds]
    np.testing.assert_allclose(decay_values(params, seconds), expected, rtol=1e-12)


def test_power_law_integral_is_continuous_in_alpha() -> None:
    g = np.array([7 * DAY])
    near = [
        decay_integral(DecayParams(model="power_law", power_alpha=a), g)[0]
        for a in (
            1 - 1e-7,
            1.0,
            1 + 1e-7,
        )
    ]
    assert near[0] == pytest.approx(near[1], rel=1e-6)
    assert near[2] == pytest.approx(near[1], rel=1e-6)


def test_decay_total() -> None:
    assert decay_total(DecayParams()) == pytest.approx(3 * DAY / math.log(2))
    assert decay_total(DecayParams(model="power_law", power_alpha=0.9)) == math.inf
    finite = DecayParams(model="power_law", power_alpha=2.0)
    far = decay_integral(finite, np.array([1e12 * DAY]))[0]
    assert decay_total(finite) == pytest.approx(far, rel=1e-5)


def test_use_probability_is_the_exponential_closed_form() -> None:
    params = DecayParams(half_life_days=2.0, beta=0.7)
    rate, n, dt, strength, horizon = 3e-6, 4, 1.5 * DAY, 1.3, 7.0
    lam = math.log(2) / (2.0 * DAY)
    mass = rate * 5**0.7 * strength * math.exp(-lam * dt) * (1 - math.exp(-lam * horizon * DAY))
    expected = 1 - math.exp(-mass / lam)
    got = use_probability(
        params, rate, use_count=n, dt_seconds=dt, strength=strength, horizon_days=horizon
    )
    assert got == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("params", MODELS, ids=repr)
def test_threshold_probability_rises_with_the_threshold(params: DecayParams) -> None:
    rate = 1.0 / decay_total(params) if math.isfinite(decay_total(params)) else 1e-6
    chances = [
        threshold_probability(params, rate, threshold=t) for t in (0.01, 0.05, 0.1, 0.3, 0.6, 1.0)
    ]
    assert all(0 <= c <= 1 for c in chances)
    assert chances == sorted(chances)
    assert chances[0] < chances[-1]
    fresh = use_probability(
        params, rate, use_count=0, dt_seconds=0.0, strength=1.0, horizon_days=30.0
    )
    assert chances[-1] == pytest.approx(fresh)


def test_seconds_until_decay_is_the_half_life() -> None:
    for params in (DecayParams(), DecayParams(model="power_law", half_life_days=5.0)):
        assert seconds_until_decay(params, 0.5) == pytest.approx(
            params.half_life_days * DAY, abs=0.01
        )


@pytest.mark.parametrize(
    "params",
    [
        *MODELS,
        DecayParams(model="two_component", fast_half_life_days=0.01, slow_half_life_days=0.02),
    ],
    ids=repr,
)
def test_profile_log_likelihood_is_the_point_process_likelihood(params: DecayParams) -> None:
    rows = Intervals(
        start=np.array([0.0, DAY, 3 * DAY, 0.0]),
        end=np.array([DAY, 3 * DAY, 5 * DAY, 0.5 * DAY]),
        count=np.array([0, 1, 2, 4]),
        event=np.array([True, True, False, True]),
        strength=np.array([1.0, 1.0, 1.0, 2.0]),
        memory=np.array([0, 0, 0, 1]),
    )
    loglik, rate = profile_log_likelihood(params, rows)
    gap = rows.end - rows.start
    weights = (rows.count + 1.0) ** params.beta * rows.strength
    exposure = float(weights @ decay_integral(params, gap))
    assert rate == pytest.approx(3 / exposure, rel=1e-12)
    intensity = rate * weights * decay_values(params, gap)
    expected = float(np.log(intensity[rows.event]).sum()) - rate * exposure
    assert loglik == pytest.approx(expected, rel=1e-9)


def test_profile_rate_maximises_the_likelihood() -> None:
    rows = tiny()
    params = DecayParams(half_life_days=0.002, beta=0.5)
    loglik, rate = profile_log_likelihood(params, rows)
    weights = (rows.count + 1.0) ** 0.5 * rows.strength
    exposure = float(weights @ decay_integral(params, rows.end - rows.start))
    assert rate == pytest.approx(rows.event.sum() / exposure)

    def full(a: float) -> float:
        ev = rows.event
        log_intensity = np.log(a * weights[ev] * decay_values(params, (rows.end - rows.start)[ev]))
        return float(log_intensity.sum()) - a * exposure

    assert loglik == pytest.approx(full(rate))
    assert full(rate * 1.1) < loglik and full(rate / 1.1) < loglik
    # A row observed from later than its start counts only its observed time.
    _, validation = split_intervals(rows, 170.0)
    _, rate = profile_log_likelihood(params, validation)
    weights = (validation.count + 1.0) ** 0.5 * validation.strength
    observed = decay_increment(
        params, validation.observed_from - validation.start, validation.end - validation.start
    )
    assert rate == pytest.approx(validation.event.sum() / float(weights @ observed))


# --- Simulation and validation loss ---------------------------------------------------------


def test_simulate_samples_the_model_exactly() -> None:
    # A memory never used has P(no use ever) = exp(-rate * total); with a long window
    # nearly all of that is observed.
    params = DecayParams(half_life_days=1.0)
    rate = 0.7 / decay_total(params)
    sim = simulate(
        params, rate, n_memories=20_000, days=200, rng=np.random.default_rng(3), start_spread_days=1
    )
    used = np.zeros(20_000, dtype=bool)
    used[sim["use_memory"]] = True
    assert 1 - used.mean() == pytest.approx(math.exp(-0.7), abs=0.01)
    assert np.all(sim["use_at"] <= sim["memory_end"][sim["use_memory"]])
    # Power law with alpha <= 1: infinite total, everything is used again eventually.
    heavy = DecayParams(model="power_law", power_alpha=0.8)
    sim = simulate(heavy, 1e-6, n_memories=50, days=30, rng=np.random.default_rng(4))
    assert len(sim["use_at"]) > 0
    two = DecayParams(model="two_component")
    sim = simulate(
        two, 0.5 / decay_total(two), n_memories=200, days=30, rng=np.random.default_rng(5)
    )
    assert len(build_intervals(**sim)) == 200 + len(sim["use_at"])


def test_validation_loss_matches_a_loop_over_checkpoints() -> None:
    params = DecayParams(half_life_days=2.0)
    rate = 0.9 / decay_total(params)
    sim = simulate(params, rate, n_memories=60, days=30, rng=np.random.default_rng(11))
    at, horizon = SIMULATION_EPOCH + 15.5 * DAY, 5.0
    _, validation = split_intervals(build_intervals(**sim), at)
    losses = []
    for m in range(60):
        uses = np.sort(sim["use_at"][sim["use_memory"] == m])
        start, end = sim["memory_start"][m], sim["memory_end"][m]
        t = at
        while t + horizon * DAY <= end:
            if t >= start:
                before = uses[uses <= t]
                last = before[-1] if before.size else start
                p = use_probability(
                    params,
                    rate,
                    use_count=before.size,
                    dt_seconds=t - last,
                    strength=1.0,
                    horizon_days=horizon,
                )
                p = min(max(p, 1e-9), 1 - 1e-9)
                used = bool(np.any((uses > t) & (uses <= t + horizon * DAY)))
                losses.append(-math.log(p) if used else -math.log(1 - p))
            t += DAY
    got = validation_loss(params, rate, validation, at=at, horizon_days=horizon)
    assert got == pytest.approx(float(np.mean(losses)), rel=1e-9)


# --- Recovery ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("half_life", "mass", "memories"), [(1.0, 0.6, 1000), (3.0, 0.85, 900), (14.0, 0.85, 4400)]
)
@pytest.mark.parametrize("seed", [1, 2])
def test_recovers_the_half_life_and_beta(
    half_life: float, mass: float, memories: int, seed: int
) -> None:
    truth = DecayParams(half_life_days=half_life, beta=0.6)
    rows = namespace(truth, mass=mass, memories=memories, seed=seed)
    assert 3_500 <= rows.event.sum() <= 6_500
    fit = fit_decay(rows, split_at=SPLIT_AT, models=("exponential",))
    assert fit.params.model == "exponential"
    assert fit.params.half_life_days == pytest.approx(half_life, rel=0.2)
    assert fit.params.beta == pytest.approx(0.6, abs=0.12)
    assert fit.rate == pytest.approx(mass / decay_total(truth), rel=0.25)


def test_recovers_a_power_law() -> None:
    truth = DecayParams(model="power_law", half_life_days=1.0, power_alpha=1.5)
    rows = namespace(truth, mass=0.85, memories=1500, seed=5)
    fit = fit_decay(rows, split_at=SPLIT_AT)
    assert fit.model_losses["power_law"] < fit.model_losses["exponential"]
    assert fit.params.model == "power_law"
    assert fit.params.power_alpha == pytest.approx(1.5, rel=0.3)
    assert fit.params.half_life_days == pytest.approx(1.0, rel=0.3)
    assert fit.accepted, fit.reason
    assert set(fit.model_losses) == set(DECAY_MODELS)
    only = fit_decay(rows, split_at=SPLIT_AT, models=("power_law",))
    assert set(only.model_losses) == {"power_law"} and only.params == fit.params


# --- Safeguard -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mass", "memories", "seed"),
    [(0.85, 600, 0), (0.85, 600, 1), (0.85, 1500, 2), (0.5, 3000, 3), (1.5, 200, 4), (2.0, 120, 5)],
)
def test_keeps_the_constants_on_data_drawn_from_them(mass: float, memories: int, seed: int) -> None:
    # The last two put their uses on a few heavily used memories: fewer independent cases.
    rows = namespace(DecayParams(), mass=mass, memories=memories, seed=seed)
    fit = fit_decay(rows, split_at=SPLIT_AT)
    assert fit.n_uses_train >= MIN_USES
    assert not fit.accepted, fit.reason
    assert fit.reason.startswith("the constants predict as well")


def test_too_little_history_is_not_accepted() -> None:
    truth = DecayParams(half_life_days=1.0)
    rows = namespace(truth, mass=0.85, memories=60, seed=0)
    fit = fit_decay(rows, split_at=SPLIT_AT)
    assert fit.n_uses_train < MIN_USES
    assert not fit.accepted
    needed = f"{MIN_USES} needed"
    assert fit.reason == f"not enough history: {fit.n_uses_train} uses before the split, {needed}"
    nothing = fit_decay(rows, split_at=SIMULATION_EPOCH - DAY)
    assert not nothing.accepted and nothing.reason.startswith("not enough history")
    assert nothing.rate == 0.0 and math.isnan(nothing.validation_loss)
    assert math.isnan(nothing.default_validation_loss) and nothing.model_losses == {}


@pytest.mark.parametrize(
    ("truth", "mass", "memories"),
    [
        (DecayParams(half_life_days=1.5), 0.85, 700),
        (DecayParams(half_life_days=6.0), 0.85, 1300),
        (DecayParams(beta=1.2), 0.15, 20_000),
        (DecayParams(beta=0.3), 1.5, 2000),
    ],
    ids=["half-life 1.5", "half-life 6", "beta 1.2", "beta 0.3"],
)
def test_accepts_a_fit_that_predicts_better(truth: DecayParams, mass: float, memories: int) -> None:
    rows = namespace(truth, mass=mass, memories=memories, seed=7)
    fit = fit_decay(rows, split_at=SPLIT_AT)
    assert fit.validation_loss < fit.default_validation_loss
    assert fit.accepted, fit.reason
    assert fit.reason.startswith("the fit beats the constants by")
    assert fit.params.beta == pytest.approx(truth.beta, abs=0.2)


# --- Bad input -----------------------------------------------------------------------------


def test_nan_inputs_raise() -> None:
    good = {
        "memory_start": np.array([0.0]),
        "memory_start_count": np.array([0]),
        "memory_end": np.array([10.0]),
        "memory_strength": np.array([1.0]),
        "use_memory": np.array([0]),
        "use_at": np.array([5.0]),
    }
    keys = ("memory_start", "memory_start_count", "memory_end", "memory_strength", "use_at")
    for key in keys + ("use_memory",):
        with pytest.raises(ValueError, match=key):
            build_intervals(**{**good, key: np.array([math.nan])})
    rows = build_intervals(**good)
    with pytest.raises(ValueError, match="at"):
        split_intervals(rows, math.nan)
    with pytest.raises(ValueError, match="split_at"):
        fit_decay(rows, split_at=math.nan)
    with pytest.raises(ValueError, match="dt_seconds"):
        use_probability(
            DecayParams(), 1e-6, use_count=0, dt_seconds=math.nan, strength=1, horizon_days=7
        )
    with pytest.raises(ValueError, match="threshold"):
        threshold_probability(DecayParams(), 1e-6, threshold=math.nan)
    with pytest.raises(ValueError, match="start"):
        Intervals(
            start=np.array([math.nan]),
            end=np.array([1.0]),
            count=np.array([0]),
            event=np.array([False]),
            strength=np.array([1.0]),
        )


def test_the_simplex_stops_at_once_when_no_point_has_a_finite_value():
    """An objective infinite everywhere (no usable history) ends the search on its first
    simplex instead of spending every evaluation on inf - inf."""
    from memories.decay_fit import _nelder_mead

    calls = []

    def infinite(point: np.ndarray) -> float:
        calls.append(point)
        return math.inf

    with np.errstate(all="raise"):  # inf - inf would raise here
        _point, value = _nelder_mead(
            infinite, np.array([1.0, 0.5]), np.array([0.5, 0.1]), np.zeros(2), np.ones(2) * 10
        )
    assert value == math.inf
    assert len(calls) == 3
