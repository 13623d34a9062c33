"""Empirical privacy audit of every local randomizer: Clopper–Pearson bounds vs claimed epsilon.

A mechanism ``M`` is epsilon-LDP when ``P[M(x) in S] <= e^epsilon P[M(x') in S]`` for every two
inputs ``x, x'`` and every event ``S``. Each test draws ``N = 10^6`` reports of ``x`` and
``N`` of a neighbouring ``x'`` from the mechanism's own vectorized randomizer (seeded, on
arrays of ``N`` equal inputs), counts every event ``S`` of a list of ``E`` disjoint events under
both, and bounds the privacy loss from below as in Jagielski et al. [1]_:

    epsilon_hat = max over S and both directions of ln(lower(P[S | x]) / upper(P[S | x']))

with one-sided Clopper–Pearson bounds [2]_. The events are the outputs themselves (k-RR) or
every pattern of the bits on which the encodings of ``x`` and ``x'`` differ (RAPPOR, Bloom
RAPPOR): the other bits are independent of those and identically distributed under both
inputs, so these patterns are a sufficient statistic and their largest ratio *is* the
mechanism's privacy loss between ``x`` and ``x'``. One of them (the "tight" event: every bit of
``x`` set and every bit of ``x'`` clear, or the output ``x`` for k-RR) has ratio exactly
``e^epsilon`` at the realized probabilities, so a correct mechanism is audited close to its
claim.

Each test makes two assertions, with false-failure probability ``P_FAIL`` together:

- **Sound**: ``epsilon_hat <= claimed epsilon`` (``mechanism.privacy.epsilon``). It can fail
  for a correct mechanism only if one of the ``4E`` one-sided bounds misses its probability;
  each is taken at ``P_FAIL / (8E)`` (Bonferroni), so this happens with probability at most
  ``P_FAIL / 2``. A failure is a privacy bug: the reports leak more than claimed.
- **Tight**: ``epsilon_hat >= floor``, where ``floor`` is what ``epsilon_hat`` of the tight
  event alone exceeds whenever its two counts lie within their ``P_FAIL / 4`` binomial
  quantiles (probability at least ``1 - P_FAIL / 2``), computed from the closed-form
  probabilities of the paper. Each test first checks that ``floor >= FRACTION * epsilon``
  (``FRACTION = 0.9``), so a test that always passes is impossible: the audit detects a
  mechanism noisier than its closed form, and its soundness check is within 10 % of the
  claim. The floors reached are (``floor / epsilon``; median ``epsilon_hat / epsilon``):

  ================================  ===========  =============  =============  =============
  mechanism (events)                epsilon 0.5  epsilon 1      epsilon 2      epsilon 5
  ================================  ===========  =============  =============  =============
  k-RR, k = 3 (3)                   0.943; 0.971                0.982; 0.991   0.975; 0.987
  binary RR, k = 2 (2)                           0.977; 0.988
  RAPPOR, one-hot (4)               0.927; 0.962                0.977; 0.988   0.973; 0.985
  k-RAPPOR, m = 2 (16)                                          0.951; 0.974   0.956; 0.976
  Bloom RAPPOR, h = 2 (16)                       0.914; 0.954   0.951; 0.974   0.956; 0.976
  ================================  ===========  =============  =============  =============

  and 0.913; 0.954 for the paper's example Bloom RAPPOR (f = 0.5, p = 0.5, q = 0.75:
  epsilon_1 = 1.0743), 0.960; 0.978 for its permanent response alone (epsilon_inf = 4).
  With probability 0.99 the soundness check fails for a mechanism whose tight event has the
  closed-form probabilities of an ``epsilon_true`` more than 1.4 % (k-RR, epsilon = 2) to 6.7 %
  (4-bit events, epsilon = 1) above the claim; and the tightness check fails for one whose
  loss is below ``floor``.

Balcer–Cheu has no local epsilon to audit (see
:func:`test_balcer_cheu_claims_no_local_epsilon`). Each test randomizes its ``2N`` reports in
0.2 to 4 seconds of CPU (the most for Bloom RAPPOR with users, which hashes ``10^6`` user ids).

References
----------
.. [1] M. Jagielski, J. Ullman, A. Oprea, "Auditing Differentially Private Machine Learning:
   How Private is Private SGD?", NeurIPS 2020.
.. [2] C. J. Clopper, E. S. Pearson, "The Use of Confidence or Fiducial Limits Illustrated in
   the Case of the Binomial", Biometrika 26(4), 1934.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

from _stats import P_FAIL
from frameldp.accounting import PrivacyGuarantee
from frameldp.core import (
    BalcerCheu,
    BlockHadamardResponse,
    BloomRappor,
    Domain,
    DuchiMechanism,
    HadamardResponse,
    HybridMechanism,
    LocalHashing,
    OptimizedUnaryEncoding,
    PiecewiseMechanism,
    PrefixExtending,
    ProjectiveGeometryResponse,
    RandomizedResponse,
    RandomSource,
    Rappor,
    SquareWave,
    StochasticRounding,
    SubsetSelection,
)
from frameldp.core.discovery import encode_prefixes, prefix_hashes
from frameldp.core.mechanisms import mechanism_names

N: Final = 1_000_000  # reports of each of the two neighbouring inputs
FRACTION: Final = 0.9  # share of the claimed epsilon a correct mechanism's audit must reach
SEED: Final = 1013
LABEL: Final = "audit"

Counts = NDArray[np.integer[Any]]  # how often each event was seen

# Mechanisms with a local epsilon, each audited below, and those that claim none.
AUDITED: Final = frozenset(
    {
        "randomized_response",
        "rappor",
        "bloom_rappor",
        "optimized_unary_encoding",
        "subset_selection",
        "hadamard_response",
        "block_hadamard_response",
        "projective_geometry_response",
        "local_hashing",
        "prefix_extending",
        "duchi",
        "piecewise",
        "hybrid",
        "stochastic_rounding",
        "square_wave",
    }
)
NO_LOCAL_EPSILON: Final = frozenset({"balcer_cheu"})


# --- Clopper–Pearson audit ------------------------------------------------------------------------


def _lower(count: int, p_fail: float) -> float:
    """One-sided Clopper–Pearson lower bound on a probability seen ``count`` times in ``N``:
    above the truth with probability at most ``p_fail``."""
    return 0.0 if count == 0 else float(stats.beta.ppf(p_fail, count, N - count + 1))


def _upper(count: int, p_fail: float) -> float:
    """One-sided Clopper–Pearson upper bound: below the truth with probability at most
    ``p_fail``."""
    return 1.0 if count == N else float(stats.beta.isf(p_fail, count + 1, N - count))


def _bound_p_fail(num_events: int) -> float:
    """Each of the ``4 * num_events`` one-sided bounds gets ``P_FAIL / 2`` split evenly."""
    return P_FAIL / 2 / (4 * num_events)


def _log_ratio_bound(count: int, other_count: int, p_fail: float) -> float:
    """``ln(lower(P[S | x]) / upper(P[S | x']))`` from the counts of ``S`` under ``x, x'``."""
    low = _lower(count, p_fail)
    return math.log(low / _upper(other_count, p_fail)) if low > 0 else -math.inf


def _audit(counts: Counts, other_counts: Counts) -> tuple[float, str]:
    """``epsilon_hat``: the largest bound over every event and both directions, and where."""
    p_fail = _bound_p_fail(counts.size)
    best, where = -math.inf, ""
    pairs = zip(counts.tolist(), other_counts.tolist(), strict=True)
    for event, (count, other) in enumerate(pairs):
        for bound, direction in (
            (_log_ratio_bound(count, other, p_fail), "x vs x'"),
            (_log_ratio_bound(other, count, p_fail), "x' vs x"),
        ):
            if bound > best:
                best, where = bound, f"event {event} ({direction}; counts {count}, {other})"
    return best, where


def _floor(tight: float, other_tight: float, num_events: int) -> float:
    """What ``epsilon_hat`` exceeds with probability at least ``1 - P_FAIL / 2`` when the tight
    event has probabilities ``tight`` under ``x`` and ``other_tight`` under ``x'``."""
    low_count = int(stats.binom.ppf(P_FAIL / 4, N, tight))  # P[count < low_count] <= P_FAIL/4
    high_count = int(stats.binom.isf(P_FAIL / 4, N, other_tight))  # P[count > high] <= P_FAIL/4
    return _log_ratio_bound(low_count, high_count, _bound_p_fail(num_events))


def _assert_audit(
    counts: Counts,
    other_counts: Counts,
    claimed: float,
    tight: tuple[float, float],
) -> None:
    """The audit is sound (``epsilon_hat <= claimed``) and tight (``epsilon_hat >= floor``, with
    ``floor >= FRACTION * claimed``), at ``P_FAIL`` together (see the module docstring)."""
    assert counts.sum() == other_counts.sum() == N
    floor = _floor(*tight, counts.size)
    assert floor >= FRACTION * claimed, (
        f"the audit design cannot reach {FRACTION} of epsilon={claimed}: floor {floor:.4f}"
    )
    estimate, where = _audit(counts, other_counts)
    assert estimate <= claimed, (
        f"PRIVACY VIOLATION: empirical epsilon lower bound {estimate:.4f} exceeds the claimed "
        f"{claimed:.4f} at {where}"
    )
    assert estimate >= floor, (
        f"audit reached only {estimate:.4f} (floor {floor:.4f}, claimed {claimed:.4f}) at "
        f"{where}: the reports are noisier than the closed form"
    )


def _pattern_counts(reports: NDArray[np.uint8], positions: Sequence[int]) -> Counts:
    """How many packed reports show each pattern of the bits at ``positions`` (first = MSB)."""
    bits = np.unpackbits(reports, axis=1)[:, list(positions)].astype(np.int64)
    weights = 1 << np.arange(len(positions), dtype=np.int64)[::-1]
    return np.bincount(bits @ weights, minlength=1 << len(positions))


def _domain(k: int) -> Domain:
    return Domain.coerce([f"v{j}" for j in range(k)])


# --- k-ary randomized response --------------------------------------------------------------------


@pytest.mark.parametrize(("k", "epsilon"), [(3, 0.5), (3, 2.0), (3, 5.0), (2, 1.0)])
def test_randomized_response_audit(k: int, epsilon: float) -> None:
    """k-RR is ``ln(p / q)``-LDP, ``p / q = e^epsilon`` (Warner 1965; Kairouz et al. 2016).

    Inputs ``x = 0``, ``x' = 1``; the events are the ``k`` outputs. The output ``x`` is tight:
    ``p = e^eps / (e^eps + k - 1)`` under ``x``, ``q = 1 / (e^eps + k - 1)`` under ``x'``.
    """
    mech = RandomizedResponse(epsilon, domain=_domain(k))
    source = RandomSource.from_seed(SEED)
    counts = [
        np.bincount(
            mech.randomize(np.full(N, code, dtype=np.int64), source=source, label=LABEL),
            minlength=k,
        )
        for code in (0, 1)
    ]
    scale = math.exp(epsilon) + k - 1
    _assert_audit(
        counts[0], counts[1], mech.privacy.epsilon, (math.exp(epsilon) / scale, 1 / scale)
    )


# --- RAPPOR (unary encoding) ----------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 5.0])
def test_rappor_audit(epsilon: float) -> None:
    """Basic one-time RAPPOR is ``2 ln((1 - f/2) / (f/2))``-LDP (Erlingsson et al., CCS 2014,
    Thm. 1 with h = 1), through ``randomize_codes`` (``randomize(encode(.))`` gives the same
    reports bit for bit; ``randomize`` is audited by :func:`test_k_rappor_audit`).

    Inputs ``x = 0``, ``x' = 1`` of a 3-value domain; the events are the 4 patterns of bits 0
    and 1. The pattern (1, 0) is tight: ``(1 - f/2)^2`` under ``x``, ``(f/2)^2`` under ``x'``,
    with ``f/2 = 1 / (1 + e^{eps/2})``.
    """
    mech = Rappor(epsilon, domain=_domain(3))
    source = RandomSource.from_seed(SEED)
    counts = [
        _pattern_counts(
            mech.randomize_codes(np.full(N, code, dtype=np.int64), source=source, label=LABEL),
            [0, 1],
        )
        for code in (0, 1)
    ]
    flip = 1 / (1 + math.exp(epsilon / 2))
    _assert_audit(counts[0], counts[1], mech.privacy.epsilon, ((1 - flip) ** 2, flip**2))


@pytest.mark.parametrize("epsilon", [2.0, 5.0])
def test_k_rappor_audit(epsilon: float) -> None:
    """k-RAPPOR over sets of at most ``m = 2`` values is ``2m ln((1 - f/2) / (f/2))``-LDP
    (Erlingsson et al., CCS 2014): two sets differ in at most ``2m`` bits.

    Inputs ``x = {0, 1}``, ``x' = {2, 3}`` of a 5-value domain (4 differing bits); the events
    are the 16 patterns of bits 0 to 3. The pattern (1, 1, 0, 0) is tight: ``(1 - f/2)^4``
    under ``x``, ``(f/2)^4`` under ``x'``, with ``f/2 = 1 / (1 + e^{eps/4})``.
    """
    mech = Rappor(epsilon, domain=_domain(5), max_weight=2)
    source = RandomSource.from_seed(SEED)
    offsets = np.arange(0, 2 * N + 1, 2, dtype=np.int64)

    def reports(values: list[int]) -> NDArray[np.uint8]:
        codes = np.tile(np.array(values, dtype=np.int64), N)
        return mech.randomize(mech.encode_sets(offsets, codes), source=source, label=LABEL)

    counts = [_pattern_counts(reports(values), [0, 1, 2, 3]) for values in ([0, 1], [2, 3])]
    flip = 1 / (1 + math.exp(epsilon / 4))
    _assert_audit(counts[0], counts[1], mech.privacy.epsilon, ((1 - flip) ** 4, flip**4))


# --- the frequency oracles at the variance frontier ----------------------------------------------


def _pattern(first: NDArray[np.bool_], second: NDArray[np.bool_]) -> Counts:
    """How many reports fall in each of the 4 events (``first``, ``second``)."""
    return np.bincount(2 * first.astype(np.int64) + second.astype(np.int64), minlength=4)


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_optimized_unary_encoding_audit(epsilon: float) -> None:
    """OUE is ``ln((1 - q)/q)``-LDP (Wang et al., USENIX Security 2017, Sec. 4.4).

    Inputs ``x = 0``, ``x' = 1`` of 3 values; events: the 4 patterns of bits 0 and 1 (the other
    bit has one law under both). Pattern (1, 0) is tight: ``(1 - q)/2`` under ``x``, ``q/2``
    under ``x'``, ``q = 1/(e^eps + 1)``.
    """
    mech = OptimizedUnaryEncoding(epsilon, domain=_domain(3))
    source = RandomSource.from_seed(SEED)
    counts = [
        _pattern_counts(
            mech.randomize(np.full(N, code, dtype=np.int64), source=source, label=LABEL), [0, 1]
        )
        for code in (0, 1)
    ]
    q = 1 / (math.exp(epsilon) + 1)
    _assert_audit(counts[0], counts[1], mech.privacy.epsilon, ((1 - q) / 2, q / 2))


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_subset_selection_audit(epsilon: float) -> None:
    """Subset selection is ``ln(p (k - d) / ((1 - p) d))``-LDP (Ye & Barg 2018).

    Inputs ``x = 0``, ``x' = 1`` of 5 values, ``d = 2``; events: whether the subset holds 0 and
    whether it holds 1 (given those, the rest is uniform under both). (holds 0, not 1) is
    tight: ``p (k - d)/(k - 1)`` under ``x``, ``(1 - p) d/(k - 1)`` under ``x'``.
    """
    k, d = 5, 2
    mech = SubsetSelection(epsilon, domain=_domain(k), subset_size=d)
    source = RandomSource.from_seed(SEED)
    counts = [
        _pattern_counts(
            mech.randomize(np.full(N, code, dtype=np.int64), source=source, label=LABEL), [0, 1]
        )
        for code in (0, 1)
    ]
    p = d * math.exp(epsilon) / (d * math.exp(epsilon) + k - d)
    tight = (p * (k - d) / (k - 1), (1 - p) * d / (k - 1))
    _assert_audit(counts[0], counts[1], mech.privacy.epsilon, tight)


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_hadamard_response_audit(epsilon: float) -> None:
    """Hadamard response is ``ln(p/(1 - p))``-LDP (Acharya, Sun, Zhang, AISTATS 2019).

    Inputs ``x = 0``, ``x' = 1`` of 3 values (``K = 4``); events: whether ``y`` is in ``C_0``
    and whether in ``C_1`` (within each event every ``y`` has one probability under each
    input). (in ``C_0``, not ``C_1``) is tight: ``p/2`` under ``x``, ``(1 - p)/2`` under ``x'``.
    """
    mech = HadamardResponse(epsilon, domain=_domain(3))
    source = RandomSource.from_seed(SEED)

    def half(y: NDArray[np.int64], row: int) -> NDArray[np.bool_]:
        parity = np.array([bin(row & v).count("1") % 2 for v in range(mech.num_columns)])
        return np.asarray(parity[y] == 0)

    counts = []
    for code in (0, 1):
        y = mech.randomize(np.full(N, code, dtype=np.int64), source=source, label=LABEL)
        counts.append(_pattern(half(y, 1), half(y, 2)))
    p = math.exp(epsilon) / (math.exp(epsilon) + 1)
    _assert_audit(counts[0], counts[1], mech.privacy.epsilon, (p / 2, (1 - p) / 2))


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_block_hadamard_response_audit(epsilon: float) -> None:
    """Block Hadamard response is ``ln(p (B b - s) / ((1 - p) s))``-LDP (Acharya, Sun, Zhang,
    AISTATS 2019, Sec. 5).

    Inputs ``x = 0`` (block 0) and ``x' = 3`` (block 1) of 6 values in 2 blocks of ``b = 4``
    outputs; events: whether ``y`` is in ``C_0`` and whether in ``C_3`` (disjoint; within each
    event every output has one probability under each input). ``y`` in ``C_0`` is tight: ``p``
    under ``x``, ``(1 - p) s/(B b - s)`` under ``x'``.
    """
    mech = BlockHadamardResponse(epsilon, domain=_domain(6), block_size=4)
    assert (mech.blocks, mech.report_range) == (2, 8)
    source = RandomSource.from_seed(SEED)
    # C_0: block 0, row 1 (+1 where popcount(1 & c) is even: c = 0, 2); C_3: block 1, row 1.
    in_first = np.isin(np.arange(8), [0, 2])
    in_second = np.isin(np.arange(8), [4, 6])
    counts = []
    for code in (0, 3):
        y = mech.randomize(np.full(N, code, dtype=np.int64), source=source, label=LABEL)
        counts.append(_pattern(in_first[y], in_second[y]))
    p = 2 * math.exp(epsilon) / (2 * math.exp(epsilon) + 6)
    _assert_audit(counts[0], counts[1], mech.privacy.epsilon, (p, (1 - p) * 2 / 6))


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_projective_geometry_response_audit(epsilon: float) -> None:
    """Projective geometry response is ``ln(p (K - D) / ((1 - p) D))``-LDP (Feldman, Nelson,
    Nguyen, Talwar, ICML 2022).

    Inputs ``x = 0``, ``x' = 1`` of the 7 points of the Fano plane (``q = 2``: ``D = 3``
    points a line, ``D_2 = 1``); events: whether the line holds 0 and whether it holds 1
    (within each event every line has one probability under each input). (holds 0, not 1) is
    tight: ``p (D - D_2)/D`` under ``x``, ``(1 - p)(D - D_2)/(K - D)`` under ``x'``.
    """
    mech = ProjectiveGeometryResponse(epsilon, domain=_domain(7), field_size=2)
    source = RandomSource.from_seed(SEED)
    lines = [(1, a, b) for a in range(2) for b in range(2)] + [(0, 1, 0), (0, 1, 1), (0, 0, 1)]
    holds = np.array(
        [
            [sum(h * v for h, v in zip(line, lines[x], strict=True)) % 2 == 0 for line in lines]
            for x in (0, 1)
        ]
    )
    counts = []
    for code in (0, 1):
        h = mech.randomize(np.full(N, code, dtype=np.int64), source=source, label=LABEL)
        counts.append(_pattern(holds[0][h], holds[1][h]))
    p = 3 * math.exp(epsilon) / (3 * math.exp(epsilon) + 4)
    _assert_audit(counts[0], counts[1], mech.privacy.epsilon, (p * 2 / 3, (1 - p) * 2 / 4))


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_local_hashing_audit(epsilon: float) -> None:
    """Local hashing is ``ln(p/q)``-LDP over its ``g`` buckets (Wang et al. 2017, Sec. 4.4).

    Inputs ``x = 0``, ``x' = 1`` of 9 values; events: whether ``y = h_s(x)`` and whether
    ``y = h_s(x')`` (the seed is independent of the value; within each event the report has one
    likelihood ratio). (``h_s(x)``, not ``h_s(x')``) is tight: ``(1 - 1/g) p`` under ``x``,
    ``(1 - 1/g) q`` under ``x'``.
    """
    mech = LocalHashing(epsilon, domain=_domain(9))
    g = mech.num_buckets
    assert g is not None
    source = RandomSource.from_seed(SEED)
    counts = []
    for code in (0, 1):
        reports = mech.randomize(np.full(N, code, dtype=np.int64), source=source, label=LABEL)
        seeds, y = np.divmod(reports.astype(np.int64), g)
        on_x = mech.hash_values(seeds, np.zeros(N, dtype=np.int64)) == y
        on_other = mech.hash_values(seeds, np.ones(N, dtype=np.int64)) == y
        counts.append(_pattern(on_x, on_other))
    p = math.exp(epsilon) / (math.exp(epsilon) + g - 1)
    q = 1 / (math.exp(epsilon) + g - 1)
    _assert_audit(counts[0], counts[1], mech.privacy.epsilon, ((1 - 1 / g) * p, (1 - 1 / g) * q))


# --- Bloom-filter RAPPOR --------------------------------------------------------------------------

BLOOM_SHAPE: Final = {"num_bits": 8, "num_hashes": 2, "num_cohorts": 1}


def _bloom_cases() -> list[Any]:
    """``(mechanism parameters, with users (memoized permanent response), (q*, p*))``, where
    ``q* = P[report bit 1 | true bit 1]`` and ``p* = P[report bit 1 | true bit 0]`` in closed
    form (Erlingsson et al. 2014, Sec. 3)."""

    def symmetric(epsilon: float) -> tuple[float, float]:
        # epsilon_1 = 2h ln(q* / p*) with q* = 1 - p* (h = 2)
        zero = 1 / (1 + math.exp(epsilon / 4))
        return 1 - zero, zero

    def paper(f: float, p: float, q: float) -> tuple[float, float]:
        return (1 - f / 2) * q + f / 2 * p, f / 2 * q + (1 - f / 2) * p

    permanent_f = 2 / (1 + math.e)  # epsilon_inf = 2h ln((1 - f/2) / (f/2)) = 4
    return [
        pytest.param({"epsilon": 1.0, "epsilon_infinity": 2.0}, False, symmetric(1.0), id="eps1"),
        pytest.param({"epsilon": 5.0, "epsilon_infinity": 10.0}, False, symmetric(5.0), id="eps5"),
        pytest.param(
            {"epsilon": 2.0, "epsilon_infinity": 4.0}, True, symmetric(2.0), id="eps2-users"
        ),
        pytest.param({"f": 0.5, "p": 0.5, "q": 0.75}, False, paper(0.5, 0.5, 0.75), id="paper"),
        pytest.param(
            {"f": permanent_f, "p": 0.0, "q": 1.0},
            False,
            paper(permanent_f, 0.0, 1.0),
            id="permanent-only",
        ),
    ]


def _disjoint_values(mech: BloomRappor) -> tuple[list[str], list[int]]:
    """Two strings whose filters set ``num_hashes`` bits each, none in common, and those bits
    (the first string's first)."""
    h, width = mech.num_hashes, mech.num_bits
    names = [f"v{i}" for i in range(64)]
    filters = np.unpackbits(
        mech.encoder.encode(np.arange(len(names)), names, np.zeros(len(names), dtype=np.int64)),
        axis=1,
        count=width,
    )
    full = [i for i in range(len(names)) if filters[i].sum() == h]
    for i in full:
        for j in full:
            if not (filters[i] & filters[j]).any():
                positions = (
                    np.flatnonzero(filters[i]).tolist() + np.flatnonzero(filters[j]).tolist()
                )
                return [names[i], names[j]], positions
    raise AssertionError("no two of the candidate strings have disjoint full filters")


@pytest.mark.parametrize(("parameters", "users", "report_probabilities"), _bloom_cases())
def test_bloom_rappor_audit(
    parameters: dict[str, float], users: bool, report_probabilities: tuple[float, float]
) -> None:
    """One Bloom RAPPOR report is ``h ln(q*(1 - p*) / (p*(1 - q*)))``-LDP (Erlingsson et al.,
    CCS 2014, Thm. 2), with or without users (memoized permanent responses, one report each).
    With ``p = 0, q = 1`` the report is the permanent response itself and that epsilon is
    ``epsilon_inf = 2h ln((1 - f/2) / (f/2))`` (Thm. 1).

    Inputs: two strings whose filters (``num_bits = 8``, ``h = 2``, one cohort) set 2 bits each,
    none in common; the events are the 16 patterns of those 4 bits. Every bit of ``x`` set and
    every bit of ``x'`` clear is tight: ``(q*(1 - p*))^h`` under ``x``, ``(p*(1 - q*))^h`` under
    ``x'``.
    """
    mech = BloomRappor(**parameters, **BLOOM_SHAPE)  # type: ignore[arg-type]
    values, positions = _disjoint_values(mech)
    source = RandomSource.from_seed(SEED)
    guarantee: PrivacyGuarantee = mech.privacy
    keyword: dict[str, Any] = {}
    if users:
        # The same N people hold x in the first N rows and x' in the last N (one call, so that
        # their N ids are hashed once).
        keyword = {"user_codes": np.tile(np.arange(N, dtype=np.int64), 2), "user_ids": range(N)}
        guarantee = mech.guarantee(mech.memo_id(source, LABEL, user_type="integer"))
    codes = np.repeat(np.arange(2, dtype=np.int64), N)
    reports, _ = mech.randomize(codes, values, source=source, label=LABEL, **keyword)
    counts = [_pattern_counts(half, positions) for half in (reports[:N], reports[N:])]
    one, zero = report_probabilities
    h = mech.num_hashes
    _assert_audit(
        counts[0], counts[1], guarantee.epsilon, ((one * (1 - zero)) ** h, (zero * (1 - one)) ** h)
    )


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_prefix_extending_audit(epsilon: float) -> None:
    """Prefix extending is local hashing of the level's prefix (Wang, Li, Jha, TDSC 2021,
    Sec. 5): ``ln(p/q)``-LDP over its ``g`` buckets.

    Inputs ``x = "a"``, ``x' = "b"`` (every prefix of one differs from the other's); events:
    whether ``y = h_a(prefix(x))`` and whether ``y = h_a(prefix(x'))`` at the report's level
    (level and coefficients are independent of the value). As for local hashing, (``x`` only)
    is tight: ``(1 - 1/g) p`` against ``(1 - 1/g) q``.
    """
    mech = PrefixExtending(epsilon, max_length=2)
    g = mech.num_buckets
    assert g is not None
    source = RandomSource.from_seed(SEED)
    values = ["a", "b"]
    strings = encode_prefixes(values, mech.max_length)
    counts = []
    for code in (0, 1):
        reports = mech.randomize(
            values, np.full(N, code, dtype=np.int64), source=source, label=LABEL
        )
        levels = reports[:, 0].astype(np.int64)
        answers = reports[:, 1].astype(np.int64)
        coefficients = reports[:, 2:].copy().view("<u2").astype(np.int64)
        supports = np.zeros((N, 2), dtype=bool)
        for level in range(mech.num_levels):
            at = levels == level
            hashes = prefix_hashes(coefficients[at], strings[:, : level + 1], g)
            supports[at] = hashes == answers[at, None]
        counts.append(_pattern(supports[:, 0], supports[:, 1]))
    p = math.exp(epsilon) / (math.exp(epsilon) + g - 1)
    q = 1 / (math.exp(epsilon) + g - 1)
    _assert_audit(counts[0], counts[1], mech.privacy.epsilon, ((1 - 1 / g) * p, (1 - 1 / g) * q))


# --- mechanisms without a local epsilon ---------------------------------------------------------


# --- numbers on an interval ---------------------------------------------------------------------


def _numeric_events(mech: Any, value: float) -> Counts:
    """``N`` reports of ``value`` (on ``[0, 1]``) sorted into events: for the window
    mechanisms the lowest input's window, the highest's and the rest (and Duchi et al.'s two
    outputs for Hybrid); for Duchi et al.'s mechanism its two outputs; for stochastic rounding
    its levels."""
    import pyarrow as pa

    values = pa.array(np.full(N, value))
    source = RandomSource.from_seed(SEED)
    y = mech.privatize_column(values, column=LABEL, source=source)[LABEL].to_numpy()
    if isinstance(mech, StochasticRounding):
        return np.bincount(np.rint(y * (mech.levels - 1)).astype(np.int64), minlength=mech.levels)
    t = 2.0 * y - 1.0  # normalized units
    if isinstance(mech, SquareWave):
        window = mech.window
        cells = np.rint((t / mech.output_bound * window.cells + window.cells - 1) / 2)
        low, high = cells < window.width, cells >= window.cells - window.width
        return np.array([low.sum(), high.sum(), (~low & ~high).sum()], dtype=np.int64)
    duchi = mech if isinstance(mech, DuchiMechanism) else getattr(mech, "_duchi", None)
    two_point = (
        np.zeros(N, dtype=bool)
        if duchi is None
        else np.isclose(np.abs(t), duchi.output_bound, rtol=1e-12, atol=0)
    )
    events = [two_point & (t < 0), two_point & (t > 0)] if duchi is not None else []
    piecewise = mech if isinstance(mech, PiecewiseMechanism) else getattr(mech, "_piecewise", None)
    if piecewise is not None:
        window = piecewise.window
        cells = np.rint((t * window.slope + window.cells - 1) / 2)
        low = ~two_point & (cells < window.width)
        high = ~two_point & (cells >= window.cells - window.width)
        events += [low, high, ~two_point & ~low & ~high]
    return np.array([int(event.sum()) for event in events], dtype=np.int64)


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 5.0])
def test_duchi_audit(epsilon: float) -> None:
    """Duchi et al.'s mechanism is ``ln(N_hi / N_lo)``-LDP (binary RR between the ends).

    Inputs ``0`` and ``1`` of ``[0, 1]``; the events are the two outputs, ``-C`` tight:
    ``e^eps / (e^eps + 1)`` under ``0``, ``1 / (e^eps + 1)`` under ``1``.
    """
    mech = DuchiMechanism(epsilon, bounds=(0, 1))
    counts = [_numeric_events(mech, value) for value in (0.0, 1.0)]
    scale = math.exp(epsilon) + 1
    _assert_audit(
        counts[0], counts[1], mech.privacy.epsilon, (math.exp(epsilon) / scale, 1 / scale)
    )


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 5.0])
def test_piecewise_audit(epsilon: float) -> None:
    """The Piecewise mechanism is ``ln(A / B)``-LDP (Wang et al., ICDE 2019, Lemma 1).

    Inputs ``0`` and ``1`` of ``[0, 1]``, whose windows are disjoint; the events are the two
    windows and the rest. The lower window is tight: ``H A / T`` under ``0``, ``H B / T`` under
    ``1``.
    """
    mech = PiecewiseMechanism(epsilon, bounds=(0, 1))
    window = mech.window
    counts = [_numeric_events(mech, value) for value in (0.0, 1.0)]
    tight = (window.width * window.high / window.total, window.width * window.low / window.total)
    _assert_audit(counts[0], counts[1], mech.privacy.epsilon, tight)


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 5.0])
def test_square_wave_audit(epsilon: float) -> None:
    """Square Wave is ``ln(A / B)``-LDP (Li et al., SIGMOD 2020): as the Piecewise mechanism,
    the ends' windows are disjoint and the lower one is tight."""
    mech = SquareWave(epsilon, bounds=(0, 1))
    window = mech.window
    counts = [_numeric_events(mech, value) for value in (0.0, 1.0)]
    tight = (window.width * window.high / window.total, window.width * window.low / window.total)
    _assert_audit(counts[0], counts[1], mech.privacy.epsilon, tight)


@pytest.mark.parametrize("epsilon", [2.0, 5.0])
def test_hybrid_audit(epsilon: float) -> None:
    """The Hybrid mechanism, a mixture of the two above, is LDP at the larger epsilon.

    The events are Duchi et al.'s two outputs and the Piecewise mechanism's three; the lower
    Piecewise window is tight (``alpha H A / T`` under ``0``, ``alpha H B / T`` under ``1``).
    """
    mech = HybridMechanism(epsilon, bounds=(0, 1))
    window = mech._piecewise.window
    counts = [_numeric_events(mech, value) for value in (0.0, 1.0)]
    share = mech.alpha * window.width / window.total
    _assert_audit(
        counts[0], counts[1], mech.privacy.epsilon, (share * window.high, share * window.low)
    )


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 5.0])
def test_stochastic_rounding_audit(epsilon: float) -> None:
    """Stochastic rounding is k-RR over its levels: the ends round to the end levels; the
    events are the levels, the lowest tight (``p`` under ``0``, ``q`` under ``1``)."""
    mech = StochasticRounding(epsilon, bounds=(0, 1))
    counts = [_numeric_events(mech, value) for value in (0.0, 1.0)]
    _assert_audit(counts[0], counts[1], mech.privacy.epsilon, mech._rr.support_probabilities)


def test_every_mechanism_is_audited_or_claims_no_local_epsilon() -> None:
    """A newly registered mechanism fails here until it gets an audit above (or is shown to
    claim no local epsilon)."""
    assert set(mechanism_names()) == AUDITED | NO_LOCAL_EPSILON


def test_balcer_cheu_claims_no_local_epsilon() -> None:
    """Balcer–Cheu (ITC 2020) claims only a central ``(epsilon, delta)`` guarantee of the
    *shuffled* messages, so there is no local epsilon to audit: one person's unshuffled messages
    reveal their value (bucket ``x`` gets a second message with probability ``p`` under ``x``
    and never under ``x'``, an infinite local loss, as documented).

    Its central guarantee is not audited empirically: a trial is a whole run of
    ``n >= 400 ln(4 / delta) / epsilon^2`` people (at least 1,521 for ``epsilon = 2``,
    ``delta = 10^-6``), so ``10^6`` trials would randomize over ``10^9`` people; and the loss
    sits in binomial tails, where ``10^6`` trials bound little: at ``n = 1,521`` the claim
    ``epsilon_at(10^-6)`` is 0.28, the neighbours shift ``M_x - M_x'`` by 2 against a standard
    deviation of 27.6, so a tail event of probability 0.05 to 0.001 has a log-ratio of 0.15 to
    0.24, and the Clopper–Pearson bounds from ``10^6`` trials cost 0.05 to 0.32 of it: the
    audit could reach about a third of the claim at best, which tests nothing.
    """
    guarantee = BalcerCheu(2.0, 1e-6, n=1_521, domain=_domain(2)).privacy
    assert guarantee.shuffled
    assert guarantee.epsilon == math.inf
