"""Regressions of issue 13 in the core: domains are never coerced (defect 8), unordered domains
are refused (9), errors quote a short value (6), extreme parameters give a frameldp error or a
correct mechanism (14), and nothing in the core escapes as a bare ``ValueError`` (15)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import mpmath
import numpy as np
import pytest

import frameldp
from frameldp.core.encoding import OTHER, BloomEncoder, Domain, held_exactly
from frameldp.core.mechanisms import (
    BalcerCheu,
    BloomRappor,
    RandomizedResponse,
    Rappor,
    mechanism_from_spec,
)
from frameldp.errors import DomainError, FrameLDPError, ParameterError

HUGE = "x" * 1_000_000
"""A 1 MB private value: an error may quote a short prefix of it, never the whole."""


def assert_short(error: pytest.ExceptionInfo[Exception]) -> None:
    """The message quotes at most a truncated prefix of ``HUGE``."""
    message = str(error.value)
    assert len(message) < 400, message[:400]
    assert "x" * 41 not in message


# --- defect 8: one kind of category, exact matching ------------------------------------------


@pytest.mark.parametrize(
    ("categories", "first", "second"),
    [
        (["a", "b", 1], "'a' (str) at position 0", "1 (int) at position 2"),
        ([1, "1"], "1 (int) at position 0", "'1' (str) at position 1"),
        ([True, 1], "True (bool) at position 0", "1 (int) at position 1"),
        ([2.5, False], "2.5 (float) at position 0", "False (bool) at position 1"),
    ],
)
def test_a_domain_mixing_kinds_is_refused_naming_both_values(
    categories: list[Any], first: str, second: str
) -> None:
    with pytest.raises(DomainError, match="domain categories must all be strings") as error:
        Domain.coerce(categories, unknown="other")
    assert first in str(error.value)
    assert second in str(error.value)


def test_a_mixed_domain_quotes_a_short_value() -> None:
    with pytest.raises(DomainError, match="must all be strings") as error:
        Domain([1, HUGE])
    assert_short(error)


def test_ints_and_floats_are_one_kind_of_category() -> None:
    assert Domain([1, 2.5]).kind == "float"
    assert Domain([1, 2]).kind == "int"
    assert Domain(["a"], nulls="category").kind == "str"
    assert Domain([True, False]).kind == "bool"
    assert Domain((), unknown="other", nulls="category").kind is None
    with pytest.raises(DomainError, match=r"contains 2\.0 twice"):
        Domain([2, 2.0])


def test_python_values_match_categories_exactly() -> None:
    """2 never matches 2.5 (nor True the category 1); 2.0 is the number 2."""
    domain = Domain([1, 2.5], unknown="other")
    assert domain.encode([1, 2.5, 2, 1.0, True, "1"]).tolist() == [0, 1, 2, 0, 2, 2]
    with pytest.raises(DomainError, match="value 2 at row 0 is not in the domain"):
        Domain([1, 2.5]).encode([2])


@pytest.mark.parametrize(
    ("dtype", "held", "codes"),
    [
        # 2.5 would truncate, 2**53 + 1 is exact in int64, 300 and 2**70 overflow int8 / int64.
        ("int64", [1, 2**53 + 1, 300], [0, 2, 4]),
        ("int8", [1], [0]),
        ("uint64", [1, 2**53 + 1, 300], [0, 2, 4]),
        # 0.1 and 2**53 + 1 would round: no float32 / float64 value equals them.
        ("float32", [1.0, 2.5, 300.0, 2.0**70], [0, 1, 4, 5]),
        ("float64", [1.0, 2.5, 0.1, 300.0, 2.0**70], [0, 1, 3, 4, 5]),
    ],
)
def test_held_by_keeps_the_categories_a_dtype_holds_exactly(
    dtype: str, held: list[float], codes: list[int]
) -> None:
    """``held_exactly`` is what ``Domain.held_by`` computes (cached per dtype); these categories
    mix what no Domain accepts (2**53 + 1 among floats, 2**70) to exercise every case."""
    values, found = held_exactly((1, 2.5, 2**53 + 1, 0.1, 300, 2**70), np.dtype(dtype))
    assert values.dtype == np.dtype(dtype)
    assert values.tolist() == held
    assert found.tolist() == codes


def test_reports_of_numbers_with_an_other_bucket_cannot_be_labelled() -> None:
    with pytest.raises(DomainError, match="'<other>' is a string; use string categories"):
        Domain([1, 2], unknown="other").as_reported()
    assert Domain(["a"], unknown="other").as_reported().categories == ("a", OTHER)


# --- defect 9: unordered domains ------------------------------------------------------------


@pytest.mark.parametrize(
    "domain",
    [{"b", "a"}, frozenset({"a", "b"}), {"a": 1, "b": 2}, {"a": 1, "b": 2}.keys()],
    ids=["set", "frozenset", "dict", "dict-keys"],
)
def test_an_unordered_domain_is_refused(domain: Any) -> None:
    with pytest.raises(DomainError, match=r"domain must be a list"):
        Domain.coerce(domain)
    with pytest.raises(DomainError, match=r"domain must be a list"):
        Domain(domain)
    with pytest.raises(DomainError, match=r"domain must be a list"):
        Rappor(1.0, domain=domain)


def test_a_set_domain_error_says_what_to_pass() -> None:
    with pytest.raises(DomainError, match=re.escape("pass a list (sorted(...) if you mean a set)")):
        Domain.coerce({"a", "b"})
    with pytest.raises(DomainError, match="its keys would be used silently"):
        Domain.coerce({"a": 1, "b": 2})


# --- defect 6: errors quote a short value ---------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda: Domain(["a", "b"]).encode([HUGE]),
        lambda: Domain([HUGE, HUGE]),
        lambda: Domain([[HUGE], "a"]),
        lambda: Domain.coerce(HUGE),
        lambda: Domain.coerce(object.__new__(type("Opaque", (), {"__repr__": lambda _: HUGE}))),
        lambda: Domain(["a", "b"], unknown=HUGE),  # type: ignore[arg-type]
        lambda: Domain(["a", "b"], nulls=HUGE),  # type: ignore[arg-type]
        lambda: BloomEncoder(HUGE),  # type: ignore[arg-type]
        lambda: BloomEncoder(16, hash_scheme=HUGE),  # type: ignore[arg-type]
        lambda: BloomEncoder(16).positions([HUGE.encode(), 5], np.zeros(2, dtype=np.int64)),  # type: ignore[list-item]
        lambda: Rappor(HUGE, domain=["a", "b"]),  # type: ignore[arg-type]
        lambda: Rappor(f=HUGE, domain=["a", "b"]),  # type: ignore[arg-type]
        lambda: Rappor(1.0, domain=["a", "b"], max_weight=HUGE),  # type: ignore[arg-type]
        lambda: RandomizedResponse(HUGE, domain=["a", "b"]),  # type: ignore[arg-type]
        lambda: BloomRappor(HUGE, epsilon_infinity=1.0),  # type: ignore[arg-type]
        lambda: BloomRappor(f=HUGE, p=0.1, q=0.9),  # type: ignore[arg-type]
        lambda: BalcerCheu(HUGE, 1e-6, n=10**6, domain=["a", "b"]),  # type: ignore[arg-type]
        lambda: BalcerCheu(1.0, HUGE, n=10**6, domain=["a", "b"]),  # type: ignore[arg-type]
        lambda: BalcerCheu(1.0, 1e-6, n=HUGE, domain=["a", "b"]),  # type: ignore[arg-type]
        lambda: mechanism_from_spec({"mechanism": HUGE}),
    ],
)
def test_errors_quote_a_short_truncated_value(call: Callable[[], object]) -> None:
    with pytest.raises(FrameLDPError) as error:
        call()
    assert_short(error)


def test_an_out_of_domain_error_keeps_its_hint() -> None:
    with pytest.raises(DomainError, match=r"\(1000000 chars\) at row 0 .* unknown='other'"):
        Domain(["a", "b"]).encode([HUGE])
    with pytest.raises(DomainError, match="nulls='category'"):
        Domain(["a", "b"]).encode([None])


# --- defect 14: extreme parameters ----------------------------------------------------------

EXTREMES: list[Any] = [
    10**400,
    -(10**400),
    10**20,
    1e308,
    5e-324,
    -0.0,
    math.nan,
    math.inf,
    -math.inf,
    np.float32(0.5),
    np.float64(0.25),
    np.int64(2),
    np.uint8(1),
    True,
    np.True_,
    "1",
    b"1",
    Fraction(1, 3),
    Fraction(10**400, 3),
    Decimal("0.5"),
    Decimal("1e400"),
    Decimal("NaN"),
    Decimal("sNaN"),
    None,
    [1.0],
    1 + 0j,
]

CONSTRUCTORS: dict[str, Callable[[Any], Any]] = {
    "Rappor-epsilon": lambda v: Rappor(v, domain=["a", "b", "c"]),
    "Rappor-f": lambda v: Rappor(f=v, domain=["a", "b", "c"]),
    "Rappor-max_weight": lambda v: Rappor(1.0, domain=["a", "b", "c"], max_weight=v),
    "RandomizedResponse-epsilon": lambda v: RandomizedResponse(v, domain=["a", "b", "c"]),
    "BloomRappor-epsilon": lambda v: BloomRappor(v, epsilon_infinity=v),
    "BloomRappor-epsilon_infinity": lambda v: BloomRappor(0.5, epsilon_infinity=v),
    "BloomRappor-f": lambda v: BloomRappor(f=v, p=0.25, q=0.75),
    "BloomRappor-p": lambda v: BloomRappor(f=0.5, p=v, q=0.75),
    "BloomRappor-num_bits": lambda v: BloomRappor(f=0.5, p=0.25, q=0.75, num_bits=v),
    "BalcerCheu-epsilon": lambda v: BalcerCheu(v, 1e-6, n=10**7, domain=["a", "b"]),
    "BalcerCheu-delta": lambda v: BalcerCheu(1.0, v, n=10**7, domain=["a", "b"]),
    "BalcerCheu-n": lambda v: BalcerCheu(1.0, 1e-6, n=v, domain=["a", "b"]),
}


@pytest.mark.parametrize("value", EXTREMES, ids=[repr(v)[:24] for v in EXTREMES])
@pytest.mark.parametrize("build", list(CONSTRUCTORS.values()), ids=list(CONSTRUCTORS))
def test_extreme_parameters_give_a_parameter_error_or_a_sound_mechanism(
    build: Callable[[Any], Any], value: Any
) -> None:
    """Never an ``OverflowError``, ``ZeroDivisionError`` or ``TypeError``; a mechanism that is
    built has a guarantee (not NaN, and not negative)."""
    try:
        mechanism = build(value)
    except ParameterError as error:
        message = str(error)
    else:
        message = ""
    assert len(message) < 400
    if message:
        return
    guarantee = mechanism.privacy
    assert guarantee.epsilon >= 0  # NaN fails this too
    if not isinstance(mechanism, BalcerCheu):
        assert math.isfinite(guarantee.epsilon)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Rappor(10**400, domain=["a", "b"]), "epsilon must be > 0 and finite, got 1000"),
        (lambda: RandomizedResponse(10**400, domain=["a", "b"]), "beyond the float range"),
        (lambda: BloomRappor(1.0, epsilon_infinity=10**400), "epsilon_infinity must be > 0"),
        (lambda: BloomRappor(1e-12, epsilon_infinity=1e-12), "too small to realize"),
        (lambda: BloomRappor(5e-324, epsilon_infinity=5e-324), "too small to realize"),
        (lambda: BalcerCheu(1e-300, 1e-6, n=10**6, domain=["a", "b"]), "needs n >= "),
        (lambda: BalcerCheu(5e-324, 1e-6, n=10**6, domain=["a", "b"]), "epsilon=5e-324 is too"),
        (lambda: BalcerCheu(1.0, 5e-324, n=10**6, domain=["a", "b"]), "delta=5e-324 is too"),
        (lambda: BalcerCheu(1.0, 1e-6, n=10**400, domain=["a", "b"]), "n must be at most 2"),
        (lambda: BalcerCheu(2.0, 0.99, n=2**62, domain=["a", "b"]), "n=4611686018427387904 is"),
    ],
)
def test_extreme_parameters_named_in_the_error(build: Callable[[], Any], match: str) -> None:
    with pytest.raises(ParameterError, match=re.escape(match)):
        build()


def test_a_huge_bloom_epsilon_realizes_the_least_flip_and_reports_its_epsilon() -> None:
    """``BloomRappor(800, epsilon_infinity=1e4)`` overflowed ``exp``. It realizes the grid's
    least flip probability 2**-52 (more noise than asked) and reports the epsilon of that
    probability, checked against mpmath, never a smaller one."""
    mechanism = BloomRappor(800, epsilon_infinity=1e4)
    assert mechanism.flip_probability == 2.0**-52
    mpmath.mp.prec = 200
    h = mechanism.num_hashes
    realized = 2 * h * mpmath.log((1 - mpmath.mpf(2) ** -52) / mpmath.mpf(2) ** -52)
    guarantee = mechanism.privacy
    assert guarantee.epsilon_infinity >= realized
    assert guarantee.epsilon_infinity <= realized * (1 + 1e-9)
    assert realized <= guarantee.epsilon <= 800


def test_numbers_of_every_numeric_type_are_accepted_as_floats() -> None:
    reference = Rappor(0.5, domain=["a", "b"])
    for value in (np.float32(0.5), np.float64(0.5), Fraction(1, 2), Decimal("0.5")):
        mechanism = Rappor(value, domain=["a", "b"])
        assert type(mechanism.epsilon) is float
        assert mechanism == reference
    mechanism = BalcerCheu(np.float32(1.0), Decimal("1e-6"), n=np.int64(10**7), domain=["a", "b"])
    assert mechanism == BalcerCheu(1.0, 1e-6, n=10**7, domain=["a", "b"])


# --- defect 15: no bare ValueError from the core --------------------------------------------


def test_the_core_raises_no_bare_value_error() -> None:
    core = Path(frameldp.__file__).parent / "core"
    offenders = [
        f"{path.name}:{number}"
        for path in sorted(core.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"raise (ValueError|TypeError|KeyError|IndexError)\b", line)
    ]
    assert offenders == []


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("{not json", "mechanism spec is not valid JSON"),
        ({"mechanism": "rappor"}, "invalid rappor spec: a field is missing"),
        ({"mechanism": "randomized_response", "epsilon": 1.0, "domain": [1]}, "invalid"),
        ({"mechanism": ["rappor"]}, "unknown mechanism in spec: ['rappor']"),
        ([1, 2], "unknown mechanism in spec: None"),
    ],
)
def test_a_malformed_spec_is_a_parameter_error(spec: Any, match: str) -> None:
    with pytest.raises(ParameterError, match=re.escape(match)):
        mechanism_from_spec(spec)


@pytest.mark.parametrize(
    ("categories", "message"),
    [
        ([1, 10**30], "does not fit in a 64-bit integer"),
        ([0.5, 2**53, 2**53 + 1], "would be rounded to a float"),
        ([1.0, 2**63 - 1], "would be rounded to a float"),
        (["a", "\ud800"], "lone surrogate"),
    ],
)
def test_categories_no_report_column_can_hold_are_refused(
    categories: list[object], message: str
) -> None:
    """They crashed the frame adapters (OverflowError, polars TypeError, pandas' "categories
    must be unique" after rounding, UnicodeEncodeError): refused when the domain is made."""
    with pytest.raises(DomainError, match=message):
        Domain(categories)
    domain = Domain([0.5, 2**53])  # 2**53 is a float exactly: accepted
    assert domain.kind == "float"
