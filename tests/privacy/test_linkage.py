"""The XOR test itself: it reads the noise right, has the declared power and catches shared noise.

These tests are deterministic (seeded reports), so they are the positive controls of the suite:
a privacy-invariant test passing says something only because these fail on linked noise.
"""

from __future__ import annotations

import pytest

from _engines import FRAMES, reports

from ._linkage import (
    DOMAIN,
    EPSILON,
    MECHANISM,
    ROWS,
    agreement,
    assert_unlinked,
    detectable_linked_fraction,
    flips,
    ldp,
    people,
)

DECLARED_FRACTION = 0.05
"""Fraction of rows with shared noise that the docstrings say every XOR test detects."""


def _seeded(values: list[str], seed: int) -> list[bytes]:
    frame = FRAMES["pandas"]({"c": values})
    return reports(ldp(frame).rappor("c", EPSILON, domain=DOMAIN, seed=seed), "c")


def test_flips_of_noiseless_reports_are_zero() -> None:
    """At epsilon 90 the flip probability is 2**-64: reports are the one-hot codes, so the noise
    read back is zero in every bit (bucket order and bit order are right)."""
    values = people(400)
    frame = FRAMES["pandas"]({"c": values})
    out = reports(ldp(frame).rappor("c", 90.0, domain=DOMAIN, seed=1), "c")

    assert not flips(out, values, len(DOMAIN)).any()


def test_the_xor_test_has_the_declared_power() -> None:
    """With 3000 rows at p_fail 1e-6, 5% of rows with shared noise are detected with
    probability at least 0.99 (exact binomial laws); p0 is about 0.079."""
    p0 = agreement(MECHANISM, MECHANISM)

    assert 0.07 < p0 < 0.09
    assert detectable_linked_fraction(ROWS, p0) <= DECLARED_FRACTION


def test_the_xor_test_accepts_independent_seeds() -> None:
    """Two seeds give independent noise: the test passes (deterministic: fixed seeds)."""
    values = people()

    assert_unlinked(_seeded(values, 1), _seeded(values, 2), values)


@pytest.mark.parametrize("fraction", [1.0, DECLARED_FRACTION])
def test_the_xor_test_catches_shared_noise(fraction: float) -> None:
    """One seed reused (noise shared by every row), or the first 5% of the rows of a second
    seed's reports replaced by the first's: the test fails (deterministic: fixed seeds)."""
    values = people()
    first, second = _seeded(values, 1), _seeded(values, 2)
    shared = round(fraction * ROWS)
    second = first[:shared] + second[shared:]

    with pytest.raises(AssertionError, match="is not Binomial"):
        assert_unlinked(first, second, values)
