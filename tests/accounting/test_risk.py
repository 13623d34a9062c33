"""What an attacker can learn: true-positive rates, posteriors and Gaussian DP, against exact
values computed here independently (Neyman–Pearson tests on binomials in mpmath).

Composed binary randomized response at ``eps`` is the worst case of ``k`` pure-DP reports: under
the two values, the number ``B`` of reports that name the first one is ``Bin(k, p)`` or
``Bin(k, 1 - p)`` (``p = e^eps / (1 + e^eps)``), and the privacy loss is ``eps (2B - k)``.
"""

from __future__ import annotations

import math
from pathlib import Path

import mpmath
import numpy as np
import pytest
from scipy import stats

import frameldp
from frameldp.accounting.amplification import clone_delta
from frameldp.accounting.shuffling import amplify_by_shuffling

mpmath.mp.dps = 40


def _binary_rr(epsilon: float) -> frameldp.PrivacyGuarantee:
    return frameldp.RandomizedResponse(epsilon, domain=["a", "b"]).privacy


def _realized(guarantee: frameldp.PrivacyGuarantee) -> float:
    """The epsilon of the probabilities the sampler realized (at most the stated one)."""
    keep, k = guarantee.parameters["keep_probability"], guarantee.parameters["num_buckets"]
    return math.log(keep * (k - 1) / (1.0 - keep))


def _np_curve(k: int, epsilon: float) -> tuple[list[mpmath.mpf], list[mpmath.mpf]]:
    """Vertices ``(fpr, tpr)`` of the most powerful tests of Bin(k, p) against Bin(k, 1 - p),
    rejecting for the largest counts first."""
    p = mpmath.e**epsilon / (1 + mpmath.e**epsilon)
    fprs, tprs = [mpmath.mpf(0)], [mpmath.mpf(0)]
    for b in range(k, -1, -1):
        fprs.append(fprs[-1] + mpmath.binomial(k, b) * (1 - p) ** b * p ** (k - b))
        tprs.append(tprs[-1] + mpmath.binomial(k, b) * p**b * (1 - p) ** (k - b))
    return fprs, tprs


def _exact_power(k: int, epsilon: float, alpha: float) -> float:
    fprs, tprs = _np_curve(k, epsilon)
    a = mpmath.mpf(alpha)
    for i in range(1, len(fprs)):
        if fprs[i] >= a:
            share = (a - fprs[i - 1]) / (fprs[i] - fprs[i - 1])
            return float(tprs[i - 1] + share * (tprs[i] - tprs[i - 1]))
    return 1.0


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("alpha", [1e-4, 0.01, 0.05, 0.3, 0.7])
def test_power_of_one_report_is_randomized_responses(epsilon: float, alpha: float) -> None:
    """One report: the power is min(e^eps alpha, 1 - e^-eps (1 - alpha)) at the realized eps."""
    g = _binary_rr(epsilon)
    realized = _realized(g)
    exact = min(math.exp(realized) * alpha, 1.0 - math.exp(-realized) * (1.0 - alpha))
    power = g.true_positive_rate(alpha)
    assert exact - 1e-12 <= power <= exact + 1e-12


@pytest.mark.parametrize(("k", "epsilon"), [(3, 1.0), (10, 0.5), (40, 0.25)])
@pytest.mark.parametrize("alpha", [1e-3, 0.01, 0.1])
def test_power_of_compositions_is_the_neyman_pearson_power(
    k: int, epsilon: float, alpha: float
) -> None:
    """k reports: within 1e-9 of the most powerful test's power, and never below it."""
    g = frameldp.compose([_binary_rr(epsilon)] * k)
    exact = _exact_power(k, _realized(_binary_rr(epsilon)), alpha)
    power = g.true_positive_rate(alpha)
    assert exact - 1e-12 <= power <= exact + 1e-9


@pytest.mark.parametrize("prior", [1e-4, 0.01, 0.5, 0.9])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_posterior_of_pure_epsilon(prior: float, epsilon: float) -> None:
    g = _binary_rr(epsilon)
    odds = prior / (1 - prior) * math.exp(g.epsilon)
    assert g.posterior(prior, delta=0) == pytest.approx(odds / (1 + odds), rel=1e-12)
    # A pure epsilon is never worse than the tail bound: the default delta changes nothing.
    assert g.posterior(prior) == pytest.approx(g.posterior(prior, delta=0), rel=1e-12)


@pytest.mark.parametrize("delta", [1e-3, 1e-6])
def test_posterior_with_delta_holds_and_is_close(delta: float) -> None:
    """30 reports at eps = 0.5: the posterior bound fails on at most delta of the reports (the
    exact loss tail, in mpmath), and sits below the pure bound by far."""
    k, epsilon = 30, 0.5
    g = frameldp.compose([_binary_rr(epsilon)] * k)
    realized = _realized(_binary_rr(epsilon))
    prior = 0.01
    posterior = g.posterior(prior, delta=delta)
    level = math.log(posterior / (1 - posterior)) - math.log(prior / (1 - prior))
    p = mpmath.e**realized / (1 + mpmath.e**realized)
    tail = mpmath.fsum(
        mpmath.binomial(k, b) * p**b * (1 - p) ** (k - b)
        for b in range(k + 1)
        if realized * (2 * b - k) > level + 1e-9
    )
    assert tail <= delta
    # The exact quantile: the smallest loss whose tail is at most delta.
    exact_level = min(
        realized * (2 * b - k)
        for b in range(k + 1)
        if mpmath.fsum(
            mpmath.binomial(k, c) * p**c * (1 - p) ** (k - c) for c in range(k + 1) if c > b
        )
        <= delta
    )
    assert exact_level - 1e-9 <= level <= exact_level + 0.5 * k * epsilon / 4
    assert posterior < g.posterior(prior, delta=0)


@pytest.mark.parametrize("epsilon", [0.2, 1.0, 3.0])
def test_gdp_mu_of_one_report(epsilon: float) -> None:
    """eps-DP is exactly mu-GDP with mu = -2 Phi^-1(1 / (1 + e^eps)) (Dong, Roth, Su 2022)."""
    g = _binary_rr(epsilon)
    exact = -2.0 * stats.norm.ppf(1.0 / (1.0 + math.exp(_realized(g))))
    mu = g.gdp_mu()
    assert mu is not None
    assert exact * (1 - 1e-12) <= mu <= exact * (1 + 1e-9)


def test_gdp_mu_of_a_composition() -> None:
    """The smallest mu is the largest Phi^-1(1 - alpha) - Phi^-1(1 - TPR(alpha)) over alpha:
    computed here on the exact Neyman–Pearson curve; frameldp's is certified above it."""
    k, epsilon = 10, 0.5
    g = frameldp.compose([_binary_rr(epsilon)] * k)
    fprs, tprs = _np_curve(k, _realized(_binary_rr(epsilon)))
    exact = 0.0
    for i in range(1, len(fprs)):
        for share in np.linspace(0.0, 1.0, 201):
            alpha = float(fprs[i - 1] + share * (fprs[i] - fprs[i - 1]))
            power = float(tprs[i - 1] + share * (tprs[i] - tprs[i - 1]))
            if 0.0 < alpha < 1.0 and power < 1.0:
                exact = max(exact, stats.norm.isf(alpha) - stats.norm.isf(power))
    mu = g.gdp_mu()
    assert mu is not None
    assert exact - 1e-9 <= mu <= exact * 1.02


def test_gdp_mu_does_not_apply_without_a_pure_epsilon() -> None:
    gaussian = frameldp.PrivacyGuarantee(
        math.inf, "gaussian", events=((frameldp.GaussianEvent(2.0), 1),), model="shuffle"
    )
    assert gaussian.gdp_mu() is None
    assert 0.0 < gaussian.true_positive_rate(0.01) < 1.0


def test_shuffled_risk_is_below_the_local_one() -> None:
    local = frameldp.RandomizedResponse(4.0, domain=list(range(3))).privacy
    shuffled = amplify_by_shuffling(local, 1000)
    for alpha in (0.001, 0.01, 0.05):
        assert shuffled.true_positive_rate(alpha) < local.true_positive_rate(alpha)
    assert shuffled.posterior(0.01) < local.posterior(0.01)
    # The tail bound holds with the shuffle's own delta curve.
    assert shuffled.true_positive_rate(0.01) <= 0.01 * math.exp(
        shuffled.epsilon_at(1e-6)
    ) + clone_delta(shuffled.epsilon_at(1e-6), 4.0, 1000, "stronger_clones")


def test_risk_table_and_sentences() -> None:
    g = _binary_rr(1.0)
    risk = g.risk()
    assert [prior for prior, _ in risk.posteriors] == [0.001, 0.01, 0.1, 0.5]
    assert risk.delta == 0.0
    assert risk.sentence == "an attacker who gave 1% to a person's value reaches at most 2.7%"
    assert risk.to_dict()["gdp_mu"] == pytest.approx(risk.gdp_mu)
    assert "Gaussian DP" in str(risk)
    assert "For one person: an attacker who gave 1%" in str(g.explain(1e-6))
    memoized = frameldp.MemoizedEvent(
        frameldp.RandomizedResponseEvent(1.0, 5),
        frameldp.RandomizedResponseEvent(3.0, 5),
        365,
        "m",
        frameldp.RandomizedResponseEvent(0.05, 5),
    )
    memo = frameldp.PrivacyGuarantee(18.25, "memoized", events=((memoized, 1),))
    assert memo.posterior(0.01, delta=1e-6) < memo.posterior(0.01, delta=0) < 1.0
    assert 0.01 < memo.true_positive_rate(0.01) < 1.0
    seeded = g.insecure()
    assert "INSECURE" in seeded.risk_sentence()
    assert "INSECURE" in str(seeded.risk())
    assert "INSECURE" in seeded.risk().sentence
    assert seeded.risk().to_dict()["warning"].startswith("INSECURE")


def test_percentages_never_round_a_risk_down() -> None:
    from frameldp.accounting.risk import percent

    assert percent(0.026723) == "2.7%"
    assert percent(0.02671) == "2.7%"
    assert percent(0.0201) == "2.1%"
    assert percent(0.01) == "1%"
    assert percent(0.999999) == "99.9+%"
    assert percent(1.0) == "100%"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda g: g.posterior(0.0), "prior"),
        (lambda g: g.posterior(1.5), "prior"),
        (lambda g: g.posterior("x"), "prior"),  # type: ignore[arg-type]
        (lambda g: g.posterior(0.1, delta=2.0), "delta"),
        (lambda g: g.true_positive_rate(1.0), "fpr"),
        (lambda g: g.true_positive_rate(True), "fpr"),
        (lambda g: g.risk(priors=[0.0]), "prior"),
    ],
)
def test_bad_risk_arguments_are_refused(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(frameldp.ParameterError, match=message):
        call(_binary_rr(1.0))


def test_a_ledger_says_what_everything_spent_lets_an_attacker_learn(tmp_path: Path) -> None:
    ledger = frameldp.Ledger(tmp_path / "ledger.db")
    ledger.set_budget("pure", epsilon=5.0)
    ledger.set_budget("approximate", epsilon=50.0, delta=1e-6)
    assert ledger.status("pure").risk_sentence == "nothing spent"
    for _ in range(3):
        ledger.spend("pure", _binary_rr(1.0))
        ledger.spend("approximate", _binary_rr(1.0))
    pure = ledger.status("pure")
    odds = 0.01 / 0.99 * math.exp(pure.spent)
    assert pure.risk_sentence.endswith(
        f"reaches at most {math.ceil(odds / (1 + odds) * 1000) / 10:g}%"
    )
    assert pure.risk_sentence in str(pure)
    approximate = ledger.status("approximate")
    # Three binary RR at 1: the tail bound at 1e-6 cannot beat the pure 3 (every outcome of
    # the three reports has probability above 1e-6).
    assert approximate.risk_sentence == pure.risk_sentence


def test_review_findings_on_risk_inputs_and_marks() -> None:
    """(Attack review, issue 42) empty or non-sequence priors, a bool delta, priors so small
    the posterior underflows, and seeded explanations."""
    g = _binary_rr(1.0)
    for bad in ([], 5):
        with pytest.raises(frameldp.ParameterError, match="priors"):
            g.risk(priors=bad)  # type: ignore[arg-type]
    with pytest.raises(frameldp.ParameterError, match="fprs"):
        g.risk(fprs=5)  # type: ignore[arg-type]
    with pytest.raises(frameldp.ParameterError, match="delta"):
        g.posterior(0.01, delta=False)
    tiny = g.posterior(1e-305, delta=0)
    assert tiny >= 1e-305 * math.e * (1 - 1e-9)  # never rounded down below the bound
    from frameldp.accounting.risk import percent

    assert percent(2.674e-8) == "2.7e-6%"
    assert percent(1e-15) == "1e-13%"
    assert "INSECURE" in str(g.insecure().explain(1e-6)).splitlines()[-1]
