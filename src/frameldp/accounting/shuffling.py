"""Amplification by shuffling, as a guarantee: the shuffle-model
:class:`~frameldp.accounting.guarantee.PrivacyGuarantee` of ``n`` shuffled reports.

The bounds themselves (the clone pairs of Feldman, McMillan and Talwar, FOCS 2021 and SODA
2023) are computed in :mod:`frameldp.accounting.amplification` and composed by
:class:`~frameldp.accounting.events.ShuffleEvent`; this module only chooses the pair a local
guarantee allows and builds the guarantee that records it.
"""

from __future__ import annotations

from frameldp.accounting.accountant import memos_of
from frameldp.accounting.amplification import Clones, check_local
from frameldp.accounting.events import PrivacyEvent, RandomizedResponseEvent, ShuffleEvent
from frameldp.accounting.guarantee import PrivacyGuarantee
from frameldp.errors import ParameterError

__all__ = ["amplify_by_shuffling"]


def amplify_by_shuffling(
    local: PrivacyGuarantee | float, n: int, *, clones: Clones | None = None
) -> PrivacyGuarantee:
    """The central guarantee of ``n`` shuffled reports, one per person.

    Parameters
    ----------
    local
        The local guarantee of one report (``mechanism.privacy``, ``frame.ldp.privacy``) or its
        pure epsilon ``eps0``.
    n
        Number of shuffled reports (people).
    clones
        ``"clones"`` (valid for every ``eps0``-LDP randomizer) or ``"stronger_clones"`` (only
        for k-ary randomized response, see the module docstring). By default the tightest one
        proven for ``local``.

    Returns
    -------
    PrivacyGuarantee
        A shuffle-model guarantee (``model="shuffle"``): ``epsilon_at(delta)`` is the smallest
        of the clone bound and, for a set randomizer (one use of k-RR, OUE, local hashing,
        subset selection, Hadamard or projective geometry response, RAPPOR, Bloom RAPPOR:
        bit vectors through the set randomizer above them), its privacy blanket's
        (:mod:`~frameldp.accounting.blanket`), and never more than ``eps0`` (when shuffling
        does not help, the local epsilon is returned unchanged). Its pure ``epsilon`` stays
        ``eps0``. Memoized reports keep their memo: composed with another use of it, the
        release counts as its local reports (:class:`~frameldp.accounting.Accountant`); among
        several events, where no one event can carry it, ``local`` is returned unshuffled.

    >>> g = amplify_by_shuffling(4.0, n=100_000)
    >>> round(g.epsilon_at(1e-6), 3)   # Feldman et al. 2021, numerical bound: about 0.17
    0.17
    >>> round(amplify_by_shuffling(4.0, n=10).epsilon_at(1e-6), 4)   # too few to hide among
    4.0
    """
    krr = False
    buckets: int | None = None
    report: PrivacyEvent | None = None
    parts: tuple[PrivacyGuarantee, ...] = ()
    if isinstance(local, PrivacyGuarantee):
        if local.shuffled:
            raise ParameterError(
                f"amplify_by_shuffling needs a local guarantee; this one is already "
                f"shuffle-model ({local.mechanism})"
            )
        epsilon0, name, parts = local.epsilon, local.mechanism, (local,)
        only = local.events[0][0] if len(local.events) == 1 else None
        krr = isinstance(only, RandomizedResponseEvent) and local.events[0][1] == 1
        if krr and isinstance(only, RandomizedResponseEvent):
            buckets = only.num_buckets
        elif only is not None and local.events[0][1] == 1:
            # A set randomizer (its blanket applies), or memoized reports (whose memo an
            # accountant must see: releases sharing it are not independent).
            if only.blankets() or memos_of(only):
                report = only
        elif any(memos_of(event) for event, _ in local.events):
            # Memoized reports among several events: none can be named as the local one.
            return local
    else:
        epsilon0, name = local, "pure_dp"
    epsilon0, n = check_local(epsilon0, n)
    if clones is None:
        clones = "stronger_clones" if krr else "clones"
    elif clones == "stronger_clones" and not krr:
        raise ParameterError(
            "clones='stronger_clones' is proven for k-ary randomized response only (Feldman et "
            f"al. 2023, erratum); {name!r} reports need clones='clones'"
        )
    event = ShuffleEvent(
        epsilon0, n, clones, buckets if clones == "stronger_clones" and krr else None, report
    )
    parameters = {
        "reports": n,
        "local_epsilon": epsilon0,
        "clones": clones,
        "pair": event.pair,
        "local": name,
    }
    seeded = any(part.seeded for part in parts)
    return PrivacyGuarantee(
        epsilon0, "shuffled", parameters, parts, ((event, 1),), model="shuffle", seeded=seeded
    )
