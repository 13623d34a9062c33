r"""Longitudinal randomization: a permanent response memoized per (user, value), then a fresh
instantaneous response for every report.

RAPPOR [1]_ draws a *permanent* randomized response of a value once per (user, value) and
memoizes it; every report is an *instantaneous* randomization of the permanent one, drawn anew.
Any number of reports of one value are a post-processing of its permanent response, so together
they cost the user at most the permanent response's epsilon, ``epsilon_infinity``; one report's
end-to-end channel costs ``epsilon_1`` (:class:`~frameldp.accounting.MemoizedEvent`).

Every chain here stays in its mechanism's family: the end-to-end channel *is* the one-stage
mechanism at the end-to-end probabilities, so its estimator, variance and privacy events apply
unchanged to those probabilities [2]_:

* k-RR over ``c`` values after k-RR over the same values, with move probabilities ``m_1`` and
  ``m_2``, is k-RR with move probability ``M = m_1 + m_2 (1 - m_1 c / (c - 1))``
  (:func:`chained_move`). With ``c = 2`` this is a bit flipped twice, the per-bit chain of the
  unary encodings: RAPPOR after RAPPOR (L-SUE, basic RAPPOR's own chain with a symmetric
  instantaneous response) and optimized unary encoding after a symmetric flip (L-OUE), whose
  bit of the true value stays at 1/2. Local hashing after k-RR over its hash values (LOLOHA)
  keeps a user's hash function and memoizes the permanent response per (user, hash value).
* Subset selection, then with probability ``r`` a uniformly drawn ``d``-subset instead, is
  subset selection with inclusion probability ``(1 - r) p_1 + r d / k``
  (:func:`mixed_inclusion`).

The instantaneous probability is realized as a multiple of ``2**-64`` rounded toward more noise,
so the end-to-end epsilon never exceeds the requested ``epsilon``; the end-to-end probabilities
are exact rationals, and guarantees are computed from them, rounded up.

References
----------
.. [1] Ú. Erlingsson, V. Pihur, A. Korolova, "RAPPOR: Randomized Aggregatable
   Privacy-Preserving Ordinal Response", CCS 2014 (Sec. 3, Thm. 1).
.. [2] H. H. Arcolezi, C. Pinzón, C. Palamidessi, S. Gambs, "Frequency Estimation of Evolving
   Data Under Local Differential Privacy", EDBT 2023 (arXiv:2210.00262), Sec. 3-4 (L-GRR,
   L-OUE, L-SUE, LOLOHA).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar, Final

import numpy as np
from numpy.typing import NDArray

from frameldp.accounting import MemoizedEvent, PrivacyEvent, PrivacyGuarantee
from frameldp.arguments import check_epsilon
from frameldp.core.mechanisms._memo import memo_name
from frameldp.core.mechanisms._spec import fingerprint
from frameldp.core.randomness import (
    PRECISION_BITS,
    RandomSource,
    Rows,
    code_bytes,
    digests,
    dyadic_at_least,
)
from frameldp.errors import ParameterError, shown

__all__ = [
    "MemoNaming",
    "TwoStage",
    "chained_move",
    "check_epsilon_infinity",
    "mixed_inclusion",
    "permanent_rows",
    "value_digests",
]

_ONE: Final = 1 << PRECISION_BITS
# Integer codes below this are deduplicated by counting (a table of this many at most).
_DENSE_CODES: Final = 1 << 24


def check_epsilon_infinity(epsilon: float, epsilon_infinity: Any, owner: str) -> float | None:
    """``epsilon_infinity`` checked (``None`` or a positive number at least ``epsilon``)."""
    if epsilon_infinity is None:
        return None
    infinity = check_epsilon(owner, "epsilon_infinity", epsilon_infinity)
    if epsilon > infinity:
        raise ParameterError(
            f"{owner}: epsilon (one report) must be at most epsilon_infinity={shown(infinity)}, "
            f"got {shown(epsilon)}: the instantaneous response only adds noise"
        )
    return infinity


def chained_move(values: int, permanent: int, target: Fraction) -> tuple[int, Fraction]:
    """The instantaneous move numerator and the end-to-end move probability of k-RR over
    ``values`` values after a permanent k-RR with move probability ``permanent / 2**64``.

    The instantaneous ``m_2`` solves ``target = m_1 + m_2 (1 - m_1 c / (c - 1))`` (module
    docstring), rounded up to the ``2**-64`` grid (more noise); it is 0 when the permanent
    response alone is at least as noisy as ``target``.
    """
    first = Fraction(permanent, _ONE)
    spread = 1 - first * values / (values - 1)
    if spread <= 0 or target <= first:
        return 0, first
    instant = dyadic_at_least((target - first) / spread)
    return instant, first + Fraction(instant, _ONE) * spread


def mixed_inclusion(
    permanent: Fraction, target: Fraction, uniform: Fraction
) -> tuple[int, Fraction]:
    """The redraw numerator ``r`` and the end-to-end inclusion probability of subset selection
    whose permanent subset holds the value with probability ``permanent`` and is replaced by a
    uniform subset (which holds it with probability ``uniform = d / k``) with probability ``r``.

    ``r`` solves ``target = (1 - r) permanent + r uniform``, rounded up (more noise).
    """
    if target >= permanent:
        return 0, permanent
    redraw = dyadic_at_least((permanent - target) / (permanent - uniform))
    share = Fraction(redraw, _ONE)
    return redraw, (1 - share) * permanent + share * uniform


def value_digests(values: NDArray[Any]) -> NDArray[np.uint8]:
    """``(n, 16)`` digests of each row's value: integer codes (1-D) or rows of bytes (2-D, a
    packed bit vector), each distinct value hashed once (rows gathered by ``numpy.take``, ten
    times faster than fancy indexing for rows of 16 bytes)."""
    if values.ndim == 1:
        if values.size and values.min() >= 0 and values.max() < _DENSE_CODES:
            # Codes of a domain: the distinct ones by counting, in O(n) (the same digests).
            codes = values.astype(np.int64)
            distinct = np.flatnonzero(np.bincount(codes))
            position = np.zeros(int(distinct[-1]) + 1, dtype=np.int64)
            position[distinct] = np.arange(distinct.size)
            dense: NDArray[np.uint8] = np.take(digests(distinct.tolist()), position[codes], axis=0)
            return dense
        distinct, inverse = np.unique(values, return_inverse=True)
        return np.take(digests(distinct.tolist()), inverse.ravel(), axis=0)
    rows = np.ascontiguousarray(values, dtype=np.uint8)
    keys = rows.view(np.dtype((np.void, rows.shape[1]))).ravel()  # one sortable key per row
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return np.take(digests([row.tobytes() for row in rows[first]]), inverse.ravel(), axis=0)


def permanent_rows(
    rows: Rows,
    *,
    source: RandomSource,
    memo: RandomSource | None,
    label: tuple[object, ...],
    users: NDArray[np.uint8] | None,
    values: Callable[[], NDArray[np.uint8]],
) -> Rows:
    """The noise of the permanent responses: ``rows`` (by position) without ``users``; with
    them (a 16-byte digest per row), a keyed PRF of each row's (user, ``values()`` digest) under
    ``memo`` (default ``source``), so the same user with the same value gets the same permanent
    response in every call under that memo key (:meth:`~frameldp.core.randomness.Rows.memoized`).
    """
    if users is None:
        return rows
    users = np.asarray(users, dtype=np.uint8)
    if users.shape != (rows.num_rows, 16):
        raise ParameterError(
            f"users must be one 16-byte digest per row ({rows.num_rows}), got {users.shape}"
        )
    return Rows.memoized(memo or source, label, users, values())


class MemoNaming:
    """Whether a mechanism with an optional ``epsilon_infinity`` memoizes, and the public name
    of its memoized permanent responses (from its ``_stream_suffix``, the spec's fingerprint)."""

    epsilon_infinity: float | None

    @property
    def _stream_suffix(self) -> str:  # pragma: no cover - every mechanism defines it
        raise NotImplementedError

    @property
    def longitudinal(self) -> bool:
        """Whether reports have a permanent response (``epsilon_infinity`` is set)."""
        return self.epsilon_infinity is not None

    def memo_id(self, memo: RandomSource, label: object, *, user_type: str) -> str:
        """Public name of the permanent responses under ``memo`` for ``label`` and user ids of
        canonical type ``user_type`` (not the key)."""
        return memo_name(memo, (label, self._stream_suffix, user_type))


class TwoStage(MemoNaming):
    """The :class:`~frameldp.core.mechanisms.protocol.Memoizing` methods of a mechanism with an
    optional ``epsilon_infinity``, from the events of its stages (:meth:`_stage_events`)."""

    name: ClassVar[str]

    def to_spec(self) -> dict[str, Any]:  # pragma: no cover - every mechanism defines it
        raise NotImplementedError

    def _stage_events(self) -> tuple[PrivacyEvent, PrivacyEvent | None, dict[str, Any]]:
        """One report's end-to-end event, the permanent response's (``None`` for one stage)
        and the parameters the guarantee shows."""
        raise NotImplementedError  # pragma: no cover - every mechanism defines it

    def _instant_event(self) -> tuple[PrivacyEvent | None, int]:
        """The instantaneous response as a channel from any permanent response to a report,
        and its number of independent uses (a bit vector's bits); ``(None, 0)`` when it adds
        no noise. A person's reports sharing permanent responses cost at most that many uses
        per report (:class:`~frameldp.accounting.MemoizedEvent`)."""
        raise NotImplementedError  # pragma: no cover - every mechanism defines it

    def _exact_person_losses(self) -> tuple[float, ...]:
        """The exact pure loss of ``1, 2, ...`` memoized reports of one person over every pair
        of inputs, where it is computed (a unary encoding: :mod:`~frameldp.accounting.
        unary_memo`); empty otherwise (the instantaneous bound applies)."""
        return ()

    @cached_property
    def _stream_suffix(self) -> str:
        return fingerprint(self.to_spec())

    def _stage_rows(
        self,
        codes: NDArray[np.int64],
        *,
        source: RandomSource,
        label: object,
        row_start: int,
        users: NDArray[np.uint8] | None,
        memo: RandomSource | None,
    ) -> tuple[Rows, Rows | None]:
        """The noise of the reports of integer ``codes`` (by position) and of their permanent
        responses (``None`` for one stage; with ``users``, memoized per (user, code) by
        :func:`permanent_rows`)."""
        base = (label, self._stream_suffix)
        rows = source.rows(base, row_start, codes.size, lambda: code_bytes(codes))
        if self.epsilon_infinity is None:
            if users is not None:
                raise ParameterError("users are only used with epsilon_infinity")
            return rows, None
        held = permanent_rows(
            rows,
            source=source,
            memo=memo,
            label=base,
            users=users,
            values=lambda: value_digests(codes),
        )
        return rows, held

    def guarantee(self, memo: str | None = None) -> PrivacyGuarantee:
        """One report's guarantee; ``memo`` names its memoized permanent responses (then a
        :class:`~frameldp.accounting.MemoizedEvent`: any number of reports of one value cost
        at most ``epsilon_infinity``)."""
        event, permanent, parameters = self._stage_events()
        if permanent is not None:
            parameters = {
                **parameters,
                "epsilon_1": event.pure_epsilon,
                "epsilon_infinity": permanent.pure_epsilon,
            }
            if memo is not None:
                parameters["memo"] = memo
                instant, uses = self._instant_event()
                exact = self._exact_person_losses() if instant is not None else ()
                event = MemoizedEvent(event, permanent, 1, memo, instant, uses, exact)
        return PrivacyGuarantee(event.pure_epsilon, self.name, parameters, events=((event, 1),))
