"""What the pandas and polars adapters share: building mechanisms, finding them again, errors.

Plumbing only: no formula lives here.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from frameldp.accounting import Ledger, PrivacyGuarantee, amplify_by_shuffling, compose
from frameldp.accounting.guarantee import INSECURE
from frameldp.core.columns import packed_bits
from frameldp.core.encoding import Domain, HashScheme, NullPolicy, UnknownPolicy, unpack_bits
from frameldp.core.mechanisms import (
    Capability,
    Decoder,
    Mechanism,
    Memoizing,
    is_mechanism,
    mechanism_class,
    mechanism_from_spec,
)
from frameldp.core.randomness import (
    KeyedStream,
    RandomSource,
    content_sort_keys,
    permutation,
    permutation_from_keys,
    resolve_source,
)
from frameldp.errors import (
    FrameLDPWarning,
    InsecureSeedWarning,
    MechanismNotFoundError,
    ParameterError,
    caller_stacklevel,
    shown,
)
from frameldp.frames._arrow import column_context, infer_domain, privatize_columns, row_content
from frameldp.frames.report_type import (
    ReportMetadata,
    recorded_specs,
    storage_of,
)
from frameldp.frames.report_type import (
    shuffle_record as shuffled_record,
)

__all__ = [
    "METADATA_KEY",
    "SHUFFLED_KEY",
    "FrameMethods",
    "LedgerLike",
    "ReleasePlan",
    "ValueShortcuts",
    "build_krr",
    "build_rappor",
    "charging",
    "check_budget",
    "check_columns",
    "column_context",
    "companion_columns",
    "find_decoder",
    "find_mechanism",
    "guarantee_of",
    "is_seeded",
    "mechanisms_of",
    "memoizes",
    "plan_release",
    "plan_shuffle",
    "recorded_spec",
    "refuse_reports",
    "report_names",
    "require_column",
    "shuffle_keys",
    "shuffle_order",
    "shuffle_record",
    "shuffle_stream",
    "shuffled_privacy",
    "unpack_reports",
]

METADATA_KEY = "frameldp"
"""Key under which mechanism specs are recorded (pandas ``attrs``, Parquet metadata)."""

SHUFFLED_KEY = "shuffled"
"""Key under which a shuffled frame records ``{"reports": n, "kept": [...], "collection": id}``."""

LedgerLike = Ledger | str | os.PathLike[str]
"""A :class:`~frameldp.Ledger` or the path of its SQLite file."""

Encoding = Literal["onehot", "bloom"]


def require_column(columns: list[Any], column: Any) -> None:
    """``column`` exists once, or a :class:`ParameterError` listing the columns."""
    if column not in columns:
        listed = ", ".join(shown(name) for name in columns[:20])
        more = f", … ({len(columns)} columns)" if len(columns) > 20 else ""
        raise ParameterError(f"column {shown(column)} not found; columns are [{listed}{more}]")
    if columns.count(column) > 1:
        raise ParameterError(
            f"column {shown(column)}: the frame has {columns.count(column)} columns of that "
            "name; rename them so that each report column is one column"
        )


def check_columns(
    columns: list[Any],
    mechanisms: Mapping[str, Any],
    *,
    frame: bool = True,
    reports: Mapping[Any, ReportMetadata] | None = None,
) -> None:
    """Every column exists, holds no reports yet, and every mechanism is one frameldp can
    apply to it.

    Bloom RAPPOR writes a cohort column beside its reports, so it needs a frame
    (``frame=False`` for a Series or an expression refuses it). A column whose type says it
    holds reports already (``reports``; re-running ``r2 = r1.ldp.krr("carrier", ...)``) is
    refused: randomizing
    reports again would make ``debias`` estimate the distribution of the reports, not of the
    values, and release the column twice.
    """
    if not isinstance(mechanisms, Mapping):
        raise ParameterError(
            f"privatize takes a mapping {{column: mechanism}}, got {type(mechanisms).__name__}"
        )
    if not mechanisms:
        raise ParameterError("privatize needs at least one {column: mechanism} entry")
    for column, mechanism in mechanisms.items():
        require_column(columns, column)
        if reports and column in reports:
            refuse_reports(column, reports[column])
        if not is_mechanism(mechanism):
            raise ParameterError(
                f"column {shown(column)}: expected a frameldp mechanism (Rappor, BloomRappor, "
                f"RandomizedResponse, ...), got {type(mechanism).__name__}"
            )
        if Capability.SHUFFLER_MESSAGES in mechanism.capabilities:
            raise ParameterError(
                f"column {shown(column)}: {mechanism.title} sends the shuffle model's messages, "
                "not one report per row; use df.ldp.balcer_cheu(...)"
            )
        if len(mechanism.report_columns(column)) > 1 and not frame:
            raise ParameterError(
                f"column {shown(column)}: {mechanism.title} writes reports and "
                f"{', '.join(list(mechanism.report_columns(column))[1:])}; apply it to a frame "
                f"(df.ldp.privatize({{{column!r}: ...}}))"
            )


def refuse_reports(column: Any, metadata: ReportMetadata) -> None:
    """Refuse to privatize a column whose type says it holds reports already."""
    raise ParameterError(
        f"column {shown(column)}: already holds frameldp reports "
        f"({_described(metadata.spec)}); privatizing them again would bias debias "
        "and release the column twice. Privatize the raw column instead"
    )


def _described(spec: Mapping[str, Any]) -> str:
    """``mechanism=..., epsilon=...`` of a recorded spec, for messages."""
    kind = spec.get("mechanism", "a mechanism")
    epsilon = spec.get("epsilon")
    return f"{kind}, epsilon={epsilon:.4g}" if isinstance(epsilon, float) else str(kind)


def _domain(
    domain: Any,
    unknown: UnknownPolicy | None,
    nulls: NullPolicy | None,
    column: str,
    data: Callable[[], pa.Array | pa.ChunkedArray],
) -> Domain:
    if isinstance(domain, str) and domain == "infer":
        domain = infer_domain(data(), column)
    return Domain.coerce(domain, unknown=unknown, nulls=nulls)


def build_rappor(
    column: str,
    data: Callable[[], pa.Array | pa.ChunkedArray],
    epsilon: float | None,
    *,
    f: float | None,
    domain: Any,
    max_weight: int,
    unknown: UnknownPolicy | None,
    nulls: NullPolicy | None,
) -> Mechanism:
    """A RAPPOR mechanism for ``column``; errors name the column."""
    with column_context(column):
        return mechanism_class("rappor")(
            epsilon,
            f=f,
            domain=_domain(domain, unknown, nulls, column, data),
            max_weight=max_weight,
        )


def build_krr(
    column: str,
    data: Callable[[], pa.Array | pa.ChunkedArray],
    epsilon: float,
    *,
    domain: Any,
    unknown: UnknownPolicy | None,
    nulls: NullPolicy | None,
) -> Mechanism:
    """A k-ary randomized response mechanism for ``column``; errors name the column."""
    with column_context(column):
        return mechanism_class("randomized_response")(
            epsilon, domain=_domain(domain, unknown, nulls, column, data)
        )


def companion_columns(column: str, mechanism: Mechanism) -> list[str]:
    """The columns a mechanism writes beside the report column of ``column`` (Bloom RAPPOR:
    its cohort column)."""
    return list(mechanism.report_columns(column))[1:]


def memoizes(mechanism: Mechanism) -> bool:
    """Whether the mechanism memoizes permanent responses per (user, value)."""
    return Capability.MEMOIZATION in mechanism.capabilities


@dataclass(frozen=True)
class ReleasePlan:
    """What one ``privatize`` call will write: specs to record and guarantees to charge."""

    specs: dict[str, dict[str, Any]]
    guarantees: dict[str, PrivacyGuarantee]
    memo: RandomSource | None

    @property
    def guarantee(self) -> PrivacyGuarantee:
        """Per-person guarantee of the whole release."""
        return compose(self.guarantees.values())


def plan_release(
    columns: list[Any],
    mechanisms: Mapping[str, Mechanism],
    *,
    source: RandomSource,
    user: str | None,
    memo_key: bytes | None,
    fresh_keys: tuple[str, str] | None = None,
) -> ReleasePlan:
    """Validate the user column and memo key; the specs and guarantees of the release.

    Bloom RAPPOR with a user column memoizes its permanent responses under ``memo_key`` (a
    persistent secret); without one, under this call's key, which protects only within it.
    ``fresh_keys`` = (where, unit) names a backend that draws a fresh key per unit (``("on
    Dask", "each partition")``): there a user's permanent responses would differ between units
    (and the ledger, which folds them under one memo, would undercharge), so ``user=`` needs
    ``memo_key=`` or a caller's key.
    """
    blooms = [c for c, m in mechanisms.items() if memoizes(m)]
    if user is not None:
        require_column(columns, user)
        if not blooms:
            raise ParameterError(
                f"user={user!r} is only used by Bloom RAPPOR (encoding='bloom'); no column here "
                "uses it"
            )
        if user in mechanisms:
            raise ParameterError(f"user column {user!r} cannot also be privatized in this call")
    elif memo_key is not None:
        named = ", ".join(f"column {c!r}" for c in blooms or mechanisms)
        raise ParameterError(f"{named}: memo_key= needs user= (the column that identifies users)")
    for column, mechanism in mechanisms.items():
        for companion in companion_columns(column, mechanism):
            if companion in columns and companion not in mechanisms:
                raise ParameterError(
                    f"column {shown(column)}: its column {companion!r} (written beside the "
                    "reports) already exists; rename it first"
                )
    if fresh_keys is not None and user is not None and memo_key is None and source.is_fresh:
        where, unit = fresh_keys
        raise ParameterError(
            f"user={shown(user)} {where} needs memo_key= (or key=): {unit} draws its own fresh "
            "key, and a person's memoized permanent responses must be the same in all of them"
        )
    memo = RandomSource.from_key(memo_key) if memo_key is not None else None
    if user is not None and memo is None and not source.seeded:
        warnings.warn(
            "Bloom RAPPOR permanent responses are memoized under this call's key only; pass "
            "memo_key= (a persistent secret) so that later collections reuse them "
            "(longitudinal protection)",
            FrameLDPWarning,
            stacklevel=caller_stacklevel(),
        )
    specs: dict[str, dict[str, Any]] = {}
    guarantees: dict[str, PrivacyGuarantee] = {}
    for column, mechanism in mechanisms.items():
        spec = recorded_spec(mechanism, source)
        memo_id = None
        if memoizes(mechanism):
            memoizing = cast(Memoizing, mechanism)
            memo_id = None if user is None else memoizing.memo_id(memo or source, column)
            spec = {**spec, "memo": memo_id}
        companions = companion_columns(column, mechanism)
        if companions:  # read back by earlier releases, which named the cohort column so
            spec = {**spec, "cohort_column": companions[0]}
        guarantees[column] = _guarantee_of_spec(spec) if memo_id else _marked(mechanism, spec)
        specs[column] = spec
    return ReleasePlan(specs, guarantees, memo)


def recorded_spec(mechanism: Any, source: RandomSource) -> dict[str, Any]:
    """The spec recorded for reports of ``mechanism`` drawn from ``source``: a seeded run is
    marked (``"seeded": true``) wherever the spec goes (frames, files, guarantees), and warned
    about once per call."""
    spec = mechanism.to_spec()
    if not source.seeded:
        return spec
    warnings.warn(
        f"reports drawn from seed=: {INSECURE}. Use seed= for tests and simulations only",
        InsecureSeedWarning,
        stacklevel=caller_stacklevel(),
    )
    return {**spec, "seeded": True}


def is_seeded(specs: Mapping[Any, Any] | None, column: Any) -> bool:
    """Whether the recorded reports of ``column`` were drawn from a seed."""
    return bool((specs or {}).get(column, {}).get("seeded"))


def _marked(mechanism: Any, spec: Mapping[str, Any]) -> PrivacyGuarantee:
    guarantee: PrivacyGuarantee = mechanism.privacy
    return guarantee.insecure() if spec.get("seeded") else guarantee


def mechanisms_of(specs: Mapping[str, Any] | None) -> dict[str, Mechanism]:
    """Mechanisms rebuilt from recorded specs."""
    return {column: mechanism_from_spec(spec) for column, spec in (specs or {}).items()}


def find_mechanism(column: str, given: Mechanism | None, recorded: Mapping[str, Any] | None) -> Any:
    """The explicit mechanism, else the one recorded for ``column``, else a clear error; a
    mechanism decoded against candidates is refused (``decode`` is its estimator)."""
    specs = recorded or {}
    if given is not None and not is_mechanism(given):
        raise ParameterError(
            f"column {shown(column)}: mechanism must be a frameldp mechanism, got "
            f"{type(given).__name__}"
        )
    if given is not None and column in specs:
        refuse_other_mechanism(column, given, specs[column])
    if given is None and column in specs:
        given = mechanism_from_spec(specs[column])
    if given is None:
        known = f" (recorded: {sorted(specs)})" if specs else ""
        raise MechanismNotFoundError(
            f"column {shown(column)}: no mechanism recorded for this column{known}; pass it "
            "explicitly, e.g. debias(column, frameldp.Rappor(epsilon=..., domain=...))"
        )
    if Capability.CANDIDATES in given.capabilities:
        raise ParameterError(
            f"column {shown(column)}: {given.title} reports are decoded against candidate "
            f"strings: use decode({column!r}, candidates=[...])"
        )
    return given


_RELEASE_KEYS = ("seeded", "memo", "cohort_column")
"""What a release adds to a mechanism's spec (not part of the mechanism)."""


def refuse_other_mechanism(column: Any, given: Mechanism, spec: Mapping[str, Any]) -> None:
    """Refuse a mechanism other than the one a column's type records: the reports would be
    debiased (and their guarantee stated) as another mechanism's."""
    recorded = {k: v for k, v in spec.items() if k not in _RELEASE_KEYS}
    if given.to_spec() != recorded:
        raise ParameterError(
            f"column {shown(column)}: holds reports of {_described(spec)}, not of the "
            f"mechanism given ({_described(given.to_spec())}); drop mechanism= to use the "
            "recorded one"
        )


def unpack_reports(
    array: pa.Array | pa.ChunkedArray, mechanism: Mechanism, column: str
) -> tuple[NDArray[np.uint8], list[str]]:
    """Bit-vector reports as an ``(n, k)`` 0/1 array, with column names ``column=label``."""
    labels = mechanism.categories
    if Capability.BIT_VECTORS not in mechanism.capabilities or not labels:
        raise ParameterError(
            f"column {shown(column)}: only RAPPOR reports (bit vectors over a domain) unpack; "
            f"{mechanism.title} reports are not"
        )
    with column_context(column):
        packed = packed_bits(storage_of(array), len(labels), column)
    names = [f"{column}={label}" for label in labels]
    return unpack_bits(packed, len(labels)), names


class _DryRunError(Exception):
    """Raised inside a ledger transaction to roll it back after the checks passed."""


def check_budget(
    ledger: LedgerLike | None, budget: str | None, release: ReleasePlan | Mapping[str, Mechanism]
) -> None:
    """Raise now what :func:`charging` would raise for ``release`` (ledger without budget,
    unknown budget, over the cap), recording nothing: a lazy plan is charged at each
    execution, but a plan that could not run is refused when it is built."""
    try:
        with charging(ledger, budget, release):
            raise _DryRunError
    except _DryRunError:
        pass


def charging(
    ledger: LedgerLike | None, budget: str | None, release: ReleasePlan | Mapping[str, Mechanism]
) -> contextlib.AbstractContextManager[object]:
    """Check a release against ``budget`` before producing it; record it once produced.

    Entered before any report is drawn (an over-budget release raises
    :class:`~frameldp.errors.BudgetExceededError` and produces nothing) and left after the
    reports exist (a failure in between records nothing). A no-op without a ledger.
    """
    if ledger is None and budget is None:
        return contextlib.nullcontext()
    if ledger is None or budget is None:
        raise ParameterError(
            f"ledger= and budget= go together; got ledger={ledger!r}, budget={budget!r}"
        )
    book = ledger if isinstance(ledger, Ledger) else Ledger(ledger)
    if isinstance(release, ReleasePlan):
        guarantee, columns = release.guarantee, list(release.guarantees)
    else:
        guarantee, columns = compose(m.privacy for m in release.values()), list(release)
    return book.charge(budget, guarantee, description="privatize " + ", ".join(map(str, columns)))


def _guarantee(mechanism: Mechanism, memo: str | None) -> PrivacyGuarantee:
    """One report's guarantee; a memoizing mechanism's names its memoized permanent
    responses."""
    if memoizes(mechanism):
        return cast(Memoizing, mechanism).guarantee(memo)
    return mechanism.privacy


def _guarantee_of_spec(spec: Mapping[str, Any]) -> PrivacyGuarantee:
    guarantee = _guarantee(mechanism_from_spec(dict(spec)), spec.get("memo"))
    return guarantee.insecure() if spec.get("seeded") else guarantee


def guarantee_of(specs: Mapping[str, Any] | None) -> PrivacyGuarantee | None:
    """Composition of the guarantees of every recorded report column (None if none)."""
    if not specs:
        return None
    return compose(_guarantee_of_spec(spec) for spec in specs.values())


def find_decoder(
    column: str | None, given: Mechanism | None, recorded: Mapping[str, Any] | None
) -> tuple[str, Decoder, list[str], str | None]:
    """The report column to decode against candidates: ``(column, mechanism, its report
    columns, memo)``.

    ``column`` may be omitted when exactly one such column is recorded.
    """
    specs = {
        c: s
        for c, s in (recorded or {}).items()
        if Capability.CANDIDATES in mechanism_class(str(s.get("mechanism"))).capabilities
    }
    if column is None:
        if len(specs) != 1:
            found = sorted(specs) if specs else "none"
            raise MechanismNotFoundError(
                f"decode needs the report column: Bloom RAPPOR columns recorded here: {found}"
            )
        column = next(iter(specs))
    spec = specs.get(column, {})
    if given is not None:
        if not is_mechanism(given) or Capability.CANDIDATES not in given.capabilities:
            raise ParameterError(
                f"column {shown(column)}: decode needs a mechanism decoded against candidates "
                f"(BloomRappor), got {type(given).__name__}"
            )
        mechanism = given
    elif spec:
        mechanism = mechanism_from_spec(spec)
    else:
        raise MechanismNotFoundError(
            f"column {shown(column)}: no Bloom RAPPOR mechanism recorded for this column; pass it, "
            "e.g. decode(column, candidates=..., mechanism=frameldp.BloomRappor(...))"
        )
    return column, cast(Decoder, mechanism), report_names(column, mechanism, spec), spec.get("memo")


def report_names(column: str, mechanism: Mechanism, spec: Mapping[str, Any] | None) -> list[str]:
    """The report columns of ``column`` in a frame or file: the mechanism's, the companion
    column renamed where the spec records another name (``"cohort_column"``, as the reference
    RAPPOR reader writes)."""
    names = list(mechanism.report_columns(column))
    recorded = (spec or {}).get("cohort_column")
    if len(names) > 1 and isinstance(recorded, str):
        names[1] = recorded
    return names


def plan_shuffle(
    columns: list[Any],
    specs: Mapping[str, Any],
    keep: Any,
    rows: int | None,
    *,
    seed: int | None = None,
) -> tuple[list[Any], dict[str, Any]]:
    """The columns a shuffled frame keeps, and what the frame records of its shuffle.

    Kept are every report column (Bloom cohorts included) and the explicitly ``keep``-ed ones,
    which void the shuffle guarantee (warned, and recorded as ``"kept"``). ``rows`` is the
    number of shuffled reports (``None`` when a lazy frame counts them on use); see
    :func:`shuffle_record`. An order drawn from ``seed`` is recorded as ``"seeded"`` (its
    amplified guarantee is then marked insecure) and warned about.
    """
    if not specs:
        raise MechanismNotFoundError(
            "shuffle needs a frame of reports that records its mechanisms (the frame privatize "
            "returned); nothing here is known to be a report column"
        )
    reports: list[Any] = []
    for column, spec in specs.items():
        mechanism = mechanism_from_spec(spec)
        if Capability.SHUFFLER_MESSAGES in mechanism.capabilities:
            raise ParameterError(
                f"column {shown(column)}: {mechanism.title} messages are already the shuffler's "
                "output"
            )
        reports += report_names(column, mechanism, spec)
    for column in reports:
        require_column(columns, column)
    kept = [keep] if isinstance(keep, str) else list(keep)
    for column in kept:
        require_column(columns, column)
    extra = [column for column in kept if column not in reports]
    if extra:
        warnings.warn(
            f"shuffle keeps columns {extra}: they travel with each report, so the shuffle-model "
            "guarantee does not hold (the frame keeps its local guarantee only)",
            FrameLDPWarning,
            stacklevel=caller_stacklevel(),
        )
    record = shuffle_record(extra, rows)
    if seed is not None:
        warnings.warn(
            f"shuffle order drawn from seed=: {INSECURE}. Use seed= for tests and simulations only",
            InsecureSeedWarning,
            stacklevel=caller_stacklevel(),
        )
        record["seeded"] = True
    return reports + extra, record


def shuffle_record(kept: list[Any], rows: int | None) -> dict[str, Any]:
    """What a shuffled frame records: the kept extra columns, the number of shuffled reports,
    and a fresh identifier of this collection.

    A frame derived from one shuffled collection alone (a subset, a copy, rows repeated) is a
    post-processing of it and keeps its guarantee, amplified over the *recorded* ``reports``.
    The identifier makes the records of two collections differ even when their mechanisms and
    sizes agree, so pandas drops the record when they are concatenated, instead of claiming
    amplification over rows that are not one per person.
    """
    return {"kept": list(kept), "reports": rows, "collection": secrets.token_hex(16)}


def shuffle_stream(key: bytes | None, seed: int | None) -> KeyedStream:
    """The keyed stream whose per-row keys order a shuffle."""
    return resolve_source(key, seed).stream("shuffle")


def shuffle_keys(
    stream: KeyedStream, rows: NDArray[np.int64], columns: list[pa.Array | pa.ChunkedArray]
) -> NDArray[np.uint64]:
    """128-bit sort keys of rows bound to their position and to the content of ``columns``
    (:func:`~frameldp.core.randomness.content_sort_keys`): a reused key orders two different
    frames independently, and the same frame (in any chunking) the same way."""
    return content_sort_keys(stream, rows, row_content(columns, len(rows)))


def shuffle_order(
    columns: list[pa.Array | pa.ChunkedArray], num_rows: int, key: bytes | None, seed: int | None
) -> NDArray[np.int64]:
    """The order of a shuffle of ``num_rows`` rows of ``columns``: a uniformly random
    permutation (a fresh key unless ``key``/``seed``), bound to the rows' content."""
    rows = np.arange(num_rows, dtype=np.int64)
    return permutation_from_keys(shuffle_keys(shuffle_stream(key, seed), rows, columns))


def shuffled_privacy(
    specs: Mapping[str, Any] | None, shuffled: Mapping[str, Any] | None, rows: int | None
) -> PrivacyGuarantee | None:
    """The recorded columns' guarantee, amplified by shuffling when the frame was shuffled
    without extra columns (local otherwise).

    The number of shuffled reports is the one recorded at shuffle time (``rows``, the frame's
    current row count, only when none was recorded); with no reports there is nothing to
    amplify and the local guarantee is returned.
    """
    local = guarantee_of(specs)
    if local is None or not shuffled or shuffled.get("kept") or local.shuffled:
        return local
    reports = shuffled.get("reports")
    reports = rows if reports is None else int(reports)
    if not reports:
        return local
    amplified = amplify_by_shuffling(local, reports)
    # A seeded order is known to whoever knows the seed: the shuffle hides nothing from them.
    return amplified.insecure() if shuffled.get("seeded") else amplified


class FrameMethods:
    """What every frame accessor shares: ``rappor`` / ``krr`` and the recorded mechanisms.

    The pandas accessor and the polars namespaces provide the column names, a column as Arrow
    (only read for ``domain="infer"``), the recorded specs, and ``privatize``.
    """

    _frame: Any
    """The native frame the accessor was created on."""

    def _report_columns(self) -> dict[str, ReportMetadata]:
        """``{name: metadata}`` of the frame's report columns (read from their types)."""
        raise NotImplementedError

    def _specs(self) -> dict[str, Any]:
        """``{column: spec}`` of the frame's report columns."""
        return recorded_specs(self._report_columns())

    @property
    def mechanisms(self) -> dict[str, Mechanism]:
        """Mechanisms recorded for the report columns of this frame."""
        return mechanisms_of(self._specs())

    def _shuffled(self) -> dict[str, Any]:
        """What ``shuffle`` recorded (empty when the frame was not shuffled)."""
        return shuffled_record(self._report_columns())

    def _num_rows(self) -> int:
        raise NotImplementedError

    @property
    def privacy(self) -> PrivacyGuarantee | None:
        """Per-person guarantee of all recorded report columns (basic composition); for a
        shuffled frame, amplified by shuffling its rows (see
        :func:`frameldp.amplify_by_shuffling`)."""
        shuffled = self._shuffled()
        rows = self._num_rows() if shuffled else None
        return shuffled_privacy(self._specs(), shuffled, rows)

    def _table_privacy(self, mechanism: Mechanism, column: Any) -> PrivacyGuarantee | None:
        """The guarantee a debiased table carries (None: the mechanism's own): the frame's when
        it was shuffled, marked insecure when the column's reports were drawn from a seed."""
        shuffled = self._shuffled()
        if shuffled:
            specs = self._specs() or {"_": mechanism.to_spec()}
            return shuffled_privacy(specs, shuffled, self._num_rows())
        return mechanism.privacy.insecure() if is_seeded(self._specs(), column) else None

    def _messages_frame(self, column: str, messages: pa.ExtensionArray) -> Any:
        """A frame of one column, ``column``, holding ``messages``."""
        raise NotImplementedError

    def balcer_cheu(
        self,
        column: str,
        epsilon: float,
        delta: float,
        *,
        domain: Any,
        unknown: UnknownPolicy | None = None,
        nulls: NullPolicy | None = None,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
    ) -> Any:
        """The shuffler's view of ``column`` under the Balcer–Cheu histogram protocol.

        Every row is one person; each sends a message with their value and, for every bucket,
        a noise message with probability ``p`` (see :class:`frameldp.BalcerCheu`, whose
        parameters follow from ``epsilon``, ``delta`` and the number of rows). Returns a new
        frame with one column, ``column``, and one row per message (its bucket label only),
        in a keyed uniformly random order; ``debias(column)`` estimates the counts, with the
        central ``(epsilon, delta)`` guarantee attached.
        """
        require_column(self._columns(), column)
        with column_context(column):
            mechanism = mechanism_class("balcer_cheu")(
                epsilon,
                delta,
                n=self._num_rows(),
                domain=_domain(domain, unknown, nulls, column, lambda: self._column_arrow(column)),
            )
        if key is not None and Capability.CALLER_KEY not in mechanism.capabilities:
            # Everyone's noise messages would repeat in a re-run: the difference of two runs
            # over data that changed in one person is that person's own (true) message.
            raise ParameterError(
                f"column {shown(column)}: key= is refused for Balcer–Cheu: its guarantee comes "
                "from the other people's noise messages, which a reused key repeats, so two runs "
                "over data that differ in one person would reveal that person's value. Draw a "
                "fresh key (the default)"
            )
        source = resolve_source(key, seed)
        spec = recorded_spec(mechanism, source)
        release = ReleasePlan({column: spec}, {column: _marked(mechanism, spec)}, None)
        with charging(ledger, budget, release):
            messages = privatize_columns(
                {column: self._column_arrow(column)},
                {column: mechanism},
                specs=release.specs,
                source=source,
            )[column]
            messages = messages.take(permutation(source.stream(column, "shuffle"), len(messages)))
        return self._messages_frame(column, messages)

    def _column_arrow(self, column: str) -> pa.Array | pa.ChunkedArray:
        raise NotImplementedError

    def _columns(self) -> list[Any]:
        raise NotImplementedError

    def privatize(
        self,
        mechanisms: Mapping[str, Mechanism],
        *,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
        user: str | None = None,
        memo_key: bytes | None = None,
    ) -> Any:
        raise NotImplementedError

    def rappor(
        self,
        column: str,
        epsilon: float | None = None,
        *,
        f: float | None = None,
        domain: Any = None,
        max_weight: int = 1,
        unknown: UnknownPolicy | None = None,
        nulls: NullPolicy | None = None,
        encoding: Encoding = "onehot",
        num_bits: int = 128,
        num_hashes: int = 2,
        num_cohorts: int = 64,
        p: float | None = None,
        q: float | None = None,
        epsilon_infinity: float | None = None,
        hash: HashScheme = "fast",
        user: str | None = None,
        memo_key: bytes | None = None,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
    ) -> Any:
        """Replace ``column`` by RAPPOR reports.

        ``encoding="onehot"`` (default): bit-vector RAPPOR over the public ``domain`` (see
        :class:`frameldp.Rappor`). ``encoding="bloom"``: Bloom-filter RAPPOR for open domains
        (see :class:`frameldp.BloomRappor`), with ``num_bits``, ``num_hashes``,
        ``num_cohorts``, ``hash`` and either ``f``, ``p``, ``q`` or ``epsilon`` (one report)
        with ``epsilon_infinity``; ``user`` names the column identifying users (stable cohorts
        and memoized permanent responses under ``memo_key``), and a ``{column}_cohort`` column
        is written beside the reports.
        """
        require_column(self._columns(), column)
        if encoding == "bloom":
            if domain is not None or max_weight != 1 or unknown is not None or nulls is not None:
                raise ParameterError(
                    f"column {shown(column)}: encoding='bloom' takes no domain, max_weight, "
                    "unknown or nulls (its domain is open; decode against candidates instead)"
                )
            with column_context(column):
                bloom = mechanism_class("bloom_rappor")(
                    epsilon,
                    epsilon_infinity=epsilon_infinity,
                    f=f,
                    p=p,
                    q=q,
                    num_bits=num_bits,
                    num_hashes=num_hashes,
                    num_cohorts=num_cohorts,
                    hash=hash,
                )
            return self.privatize(
                {column: bloom},
                key=key,
                seed=seed,
                ledger=ledger,
                budget=budget,
                user=user,
                memo_key=memo_key,
            )
        if encoding != "onehot":
            raise ParameterError(
                f"column {shown(column)}: encoding must be 'onehot' or 'bloom', got {encoding!r}"
            )
        bloom_only = {"p": p, "q": q, "epsilon_infinity": epsilon_infinity, "user": user}
        given = [name for name, value in bloom_only.items() if value is not None]
        if given or memo_key is not None:
            raise ParameterError(
                f"column {shown(column)}: {', '.join(given) or 'memo_key'} only apply to "
                "encoding='bloom'"
            )
        mechanism = build_rappor(
            column,
            lambda: self._column_arrow(column),
            epsilon,
            f=f,
            domain=domain,
            max_weight=max_weight,
            unknown=unknown,
            nulls=nulls,
        )
        return self.privatize({column: mechanism}, key=key, seed=seed, ledger=ledger, budget=budget)

    def krr(
        self,
        column: str,
        epsilon: float,
        *,
        domain: Any,
        unknown: UnknownPolicy | None = None,
        nulls: NullPolicy | None = None,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
    ) -> Any:
        """Replace ``column`` by k-ary randomized response reports."""
        require_column(self._columns(), column)
        mechanism = build_krr(
            column,
            lambda: self._column_arrow(column),
            epsilon,
            domain=domain,
            unknown=unknown,
            nulls=nulls,
        )
        return self.privatize({column: mechanism}, key=key, seed=seed, ledger=ledger, budget=budget)

    def validate(
        self,
        mechanisms: Mapping[str, Any] | None = None,
        *,
        release: bool = False,
        passthrough: Iterable[str] | str = (),
        user: str | None = None,
        lazy: bool = True,
    ) -> Any:
        """Check this frame against its pandera schema; return the frame itself, unchanged.

        With ``mechanisms`` (``{column: mechanism or spec}``): the input of
        ``privatize(mechanisms, user=user)`` (see :func:`frameldp.schemas.input_schema`).
        With ``release=True``, or without ``mechanisms`` on a frame of reports that records
        them: the release (see :func:`frameldp.schemas.release_schema`), holding only report
        columns and the ``passthrough`` ones. Every failed check is collected
        (``lazy=False``: the first) into one :class:`~frameldp.errors.ValidationError`. A
        LazyFrame's checked columns are collected with the streaming engine; the LazyFrame is
        returned. Chains: ``df.ldp.validate(m).ldp.privatize(m)``.
        """
        try:
            from frameldp import schemas  # pandera is optional: imported on first use
        except ImportError as error:
            raise ImportError(
                f"validate needs pandera ({error}); install it with pip install 'frameldp[pandera]'"
            ) from None
        if mechanisms is not None and not release:
            if passthrough:
                raise ParameterError(
                    "passthrough= applies to a release (release=True); an input may hold any "
                    "other column"
                )
            return schemas.validate_input(self._frame, mechanisms, user=user, lazy=lazy)
        if user is not None:
            raise ParameterError(
                f"user={user!r} applies to an input (pass mechanisms=); in a release the user "
                "column is a passthrough column or absent"
            )
        recorded = self._specs()
        for column, given in (mechanisms or {}).items():
            if column in recorded and is_mechanism(given):
                refuse_other_mechanism(column, given, recorded[column])
        found = recorded if mechanisms is None else mechanisms
        if not found:
            raise MechanismNotFoundError(
                "validate needs mechanisms= (the {column: mechanism} to privatize, or of the "
                "reports with release=True); this frame records no mechanisms"
            )
        return schemas.validate_release(self._frame, found, passthrough=passthrough, lazy=lazy)


class ValueShortcuts:
    """``rappor`` / ``krr`` on one column of values: a pandas Series, a polars expression.

    Subclasses provide the name used in errors and stream labels, the values as Arrow (only
    read for ``domain="infer"``) and ``privatize``.
    """

    @property
    def _name(self) -> str:
        raise NotImplementedError

    def _values_arrow(self) -> pa.Array | pa.ChunkedArray:
        raise NotImplementedError

    def privatize(
        self,
        mechanism: Mechanism,
        *,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
    ) -> Any:
        raise NotImplementedError

    def rappor(
        self,
        epsilon: float | None = None,
        *,
        f: float | None = None,
        domain: Any,
        max_weight: int = 1,
        unknown: UnknownPolicy | None = None,
        nulls: NullPolicy | None = None,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
    ) -> Any:
        """RAPPOR reports of these values (see :class:`frameldp.Rappor`)."""
        mechanism = build_rappor(
            self._name,
            self._values_arrow,
            epsilon,
            f=f,
            domain=domain,
            max_weight=max_weight,
            unknown=unknown,
            nulls=nulls,
        )
        return self.privatize(mechanism, key=key, seed=seed, ledger=ledger, budget=budget)

    def krr(
        self,
        epsilon: float,
        *,
        domain: Any,
        unknown: UnknownPolicy | None = None,
        nulls: NullPolicy | None = None,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
    ) -> Any:
        """k-ary randomized response reports of these values."""
        mechanism = build_krr(
            self._name, self._values_arrow, epsilon, domain=domain, unknown=unknown, nulls=nulls
        )
        return self.privatize(mechanism, key=key, seed=seed, ledger=ledger, budget=budget)
