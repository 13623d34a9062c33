"""Every frequency oracle, fresh and memoized, for the person-level audit on every backend.

With ``user=`` and ``r`` rows per person, a release states the loss of the person with the most
rows: ``r`` compositions of one report for fresh noise (exact: the worst pair of inputs differs
in every row), the memoized bound for permanent responses (audited against exact enumeration in
``tests/privacy/test_person_unit.py``). Each backend must state, table and charge exactly what
pandas does for the same rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import frameldp

DOMAIN: Final = ["a", "b", "c", "d"]
ROWS_PER_PERSON: Final = 3
BLOOM: Final = {"num_bits": 16, "num_hashes": 2, "num_cohorts": 4}

FRESH: Final[dict[str, Callable[[], Any]]] = {
    "krr": lambda: frameldp.RandomizedResponse(1.0, domain=DOMAIN),
    "rappor": lambda: frameldp.Rappor(1.0, domain=DOMAIN),
    "oue": lambda: frameldp.OptimizedUnaryEncoding(1.0, domain=DOMAIN),
    "olh": lambda: frameldp.LocalHashing(1.0, domain=DOMAIN),
    "subset": lambda: frameldp.SubsetSelection(1.0, domain=DOMAIN),
    "hadamard": lambda: frameldp.HadamardResponse(1.0, domain=DOMAIN),
}
"""Mechanisms drawing fresh noise for every report."""

MEMOIZED: Final[dict[str, Callable[[], Any]]] = {
    "krr": lambda: frameldp.RandomizedResponse(1.0, domain=DOMAIN, epsilon_infinity=3.0),
    "rappor": lambda: frameldp.Rappor(1.0, domain=DOMAIN, epsilon_infinity=3.0),
    "oue": lambda: frameldp.OptimizedUnaryEncoding(1.0, domain=DOMAIN, epsilon_infinity=3.0),
    "olh": lambda: frameldp.LocalHashing(1.0, domain=DOMAIN, epsilon_infinity=3.0),
    "subset": lambda: frameldp.SubsetSelection(1.0, domain=DOMAIN, epsilon_infinity=3.0),
    "bloom": lambda: frameldp.BloomRappor(1.0, epsilon_infinity=3.0, **BLOOM),
}
"""Mechanisms whose reports of one value share a memoized permanent response per person."""


def people(count: int = 24) -> dict[str, list[Any]]:
    """``count`` people holding ``ROWS_PER_PERSON`` rows each, values varying within a person."""
    users = [u for u in range(count) for _ in range(ROWS_PER_PERSON)]
    return {"user": users, "value": [DOMAIN[i % len(DOMAIN)] for i in range(len(users))]}


def table_of(released: Any, mechanism: Any, column: str = "value") -> Any:
    """The frequency table of a release's ``column`` (Bloom reports decode against the domain
    as candidates)."""
    if isinstance(mechanism, frameldp.BloomRappor):
        return frameldp.ldp(released).decode(column, candidates=DOMAIN)
    return frameldp.ldp(released).debias(column)
