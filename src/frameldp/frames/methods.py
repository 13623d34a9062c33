"""The ``.ldp`` methods, written once for every frame library.

:class:`FrameMethods` works on any frame through its adapter (:mod:`frameldp.frames.adapters`),
which converts the frame's columns to Arrow and back; :class:`ValueShortcuts` gives a column of
values (a pandas Series, a polars expression) the ``rappor`` / ``krr`` shortcuts. Plumbing only:
no formula lives here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, cast

import numpy as np
import pyarrow as pa

from frameldp.accounting import PrivacyGuarantee, compose
from frameldp.core.collected import collect_columns
from frameldp.core.encoding import (
    FAST_HASHES,
    HashScheme,
    NullPolicy,
    UnknownPolicy,
    chosen_hash_scheme,
)
from frameldp.core.estimation import normal_quantile
from frameldp.core.mechanisms import (
    Capability,
    Mechanism,
    Statistic,
    is_mechanism,
    mechanism_class,
    mechanism_from_spec,
)
from frameldp.core.randomness import permutation, resolve_source
from frameldp.errors import (
    MechanismNotFoundError,
    ParameterError,
    shown,
)
from frameldp.frames import register_engine_of
from frameldp.frames.adapters import in_memory_adapter_for
from frameldp.frames.engine import Engine, Gather, LocalEngine, Privatization, registered_engine
from frameldp.frames.grouping import check_group_columns, flat_reduction
from frameldp.frames.in_memory import InMemoryEngine
from frameldp.frames.inputs import (
    _domain,
    build_krr,
    build_rappor,
    require_column,
)
from frameldp.frames.lookup import (
    find_decoder,
    find_discoverer,
    find_mechanism,
    mechanisms_of,
    refuse_other_mechanism,
    report_names,
)
from frameldp.frames.pipeline import column_context, privatize_columns
from frameldp.frames.query import flat_query, joint_query
from frameldp.frames.release import (
    LedgerLike,
    ReleasePlan,
    _marked,
    charging,
    guarantee_of,
    is_seeded,
    recorded_spec,
)
from frameldp.frames.report_type import (
    ReportMetadata,
    recorded_specs,
    refuse_reports,
    with_shuffle,
)
from frameldp.frames.shuffling import (
    kept_columns,
    plan_shuffle,
    refuse_other_rows,
    shuffle_order,
    shuffled_columns,
    shuffled_privacy,
)
from frameldp.results.distribution import DistributionTable, RangeCount
from frameldp.results.mean import MeanEstimate
from frameldp.results.table import STAT_COLUMNS, FrequencyTable

__all__ = ["Encoding", "FrameMethods", "ValueShortcuts", "engine_for", "ldp"]


Encoding = Literal["onehot", "bloom"]


def _as_mechanism(column: str, given: Any) -> Mechanism:
    """A mechanism given as itself, its spec or the spec's JSON text."""
    if is_mechanism(given):
        mechanism: Mechanism = given
        return mechanism
    if isinstance(given, str | Mapping):
        with column_context(column):
            rebuilt: Mechanism = mechanism_from_spec(
                given if isinstance(given, str) else dict(given)
            )
        return rebuilt
    raise ParameterError(
        f"column {shown(column)}: expected a frameldp mechanism or its spec, got "
        f"{type(given).__name__}",
        column=column,
    )


def _names_a_pair(column: Any, columns: list[Any]) -> bool:
    """Whether ``debias(column)`` asks for a joint table: a list, array or tuple of names (a
    tuple that is itself a column's name is that column)."""
    if isinstance(column, str | bytes) or (isinstance(column, tuple) and column in columns):
        return False
    return isinstance(column, list | tuple) or hasattr(column, "__array__")


def ldp(obj: Any) -> Any:
    """The ``.ldp`` methods of any supported object, including those whose library has no
    accessor API (a pyarrow Table or RecordBatchReader, a DuckDB relation): ``obj.ldp`` where
    the library has an accessor (a pandas Series, a polars expression), else the frame methods
    over the object's engine (:mod:`frameldp.frames.engine`).

    >>> import pyarrow as pa, frameldp
    >>> table = pa.table({"carrier": ["AA", "DL", "UA"] * 100})
    >>> reports = frameldp.ldp(table).krr("carrier", 2.0, domain=["AA", "DL", "UA"])
    >>> frameldp.ldp(reports).debias("carrier").n
    300
    """
    accessor = getattr(type(obj), "ldp", None)
    if accessor is not None:
        return obj.ldp
    return FrameMethods(obj)


def engine_for(frame: object) -> Engine:
    """The engine of ``frame``: the one registered for its type (or nearest base class), else
    the in-memory engine over its library's in-memory adapter."""
    register_engine_of(frame)  # a library whose engine module is imported on demand
    engine = registered_engine(frame)
    if engine is not None:
        return engine(frame)
    return InMemoryEngine(frame, in_memory_adapter_for(frame))


class FrameMethods:
    """Every frame accessor: ``rappor`` / ``krr`` / ``privatize``, ``debias`` / ``decode``,
    ``shuffle``, ``validate`` and the recorded mechanisms, on any frame the adapter registry
    (:mod:`frameldp.frames.adapters`) adapts.

    Every method is written here once, on top of the frame's engine
    (:mod:`frameldp.frames.engine`), which is all that differs between libraries: how reports
    are produced, how their additive statistics are reduced, where the rows are. Accessor
    classes subclass it without overriding anything. No formula is written here.
    """

    def __init__(self, frame: Any) -> None:
        self._frame = frame
        self._engine = engine_for(frame)

    def _report_columns(self) -> dict[Any, ReportMetadata]:
        """``{name: metadata}`` of the frame's report columns (read from their types)."""
        return self._engine.report_columns()

    def _columns(self) -> list[Any]:
        return self._engine.columns()

    def _num_rows(self) -> int:
        return self._engine.num_rows()

    def _domain_values(self, column: Any) -> pa.Array | pa.ChunkedArray:
        """Values of ``column`` whose distinct ones are its inferred domain
        (``domain="infer"``); a deferred frame may give the distinct values only."""
        return self._engine.distinct(column)

    def _local(self, what: str, method: str, column: Any = None) -> LocalEngine:
        """The engine, when its rows can come to one machine (``what`` permutes every report
        together); otherwise a refusal naming how the frame is brought there."""
        expression = self._engine.one_machine
        if expression is None:
            return cast(LocalEngine, self._engine)  # as it declares
        verb = "compute" if "compute" in expression else "collect"
        named = "" if column is None else f"column {shown(column)}: "
        raise ParameterError(
            f"{named}{what} permutes every report together, which needs one machine; {verb} the "
            f"frame to pandas first: {expression}.ldp.{method}(...)"
        )

    def _specs(self) -> dict[str, Any]:
        """``{column: spec}`` of the frame's report columns."""
        return recorded_specs(self._report_columns())

    @property
    def mechanisms(self) -> dict[str, Mechanism]:
        """Mechanisms recorded for the report columns of this frame."""
        return mechanisms_of(self._specs())

    @property
    def specs(self) -> dict[str, Any]:
        """The spec each report column's type records (the mechanism's, with ``"seeded"``,
        ``"memo"`` and ``"cohort_column"`` where they apply), by column."""
        return self._specs()

    def plain(self, *, text: bool = False) -> Any:
        """This frame with its report columns as plain columns of their storage values
        (labels, integers, packed bytes), for operations a library refuses on extension types
        (polars compares, casts and writes CSV only on plain columns). With ``text``, bit-vector
        reports are in their text form, ``"b"`` and one ``0``/``1`` per bucket, as CSV and
        JSON need them. The result claims no release: ``debias(column, mechanism)`` reads it
        back when the mechanism is named."""
        return self._engine.plain(text=text)

    def _shuffled(self) -> dict[str, Any]:
        """What ``shuffle`` recorded (empty when the frame was not shuffled)."""
        return self._engine.recorded_shuffle()

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
        it was shuffled; the recorded release's when its reports were drawn from a seed (marked
        insecure), share memoized permanent responses (their memo's guarantee) or were released
        with ``user=`` (one person's rows) or under ``collect=`` (one column of the row at
        random)."""
        shuffled = self._shuffled()
        if shuffled:
            specs = self._specs() or {"_": mechanism.to_spec()}
            return shuffled_privacy(specs, shuffled, self._num_rows())
        recorded = (self._specs() or {}).get(column)
        marks = ("memo", "seeded", "rows_per_user", "collection")
        if recorded is not None and any(recorded.get(mark) for mark in marks):
            return guarantee_of({column: recorded})
        return None

    # -- privatizing ---------------------------------------------------------------------------

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
        max_rows_per_user: int | None = None,
        contributions: str = "all",
        collect: str = "split",
        fake_prior: Mapping[str, Any] | None = None,
    ) -> Any:
        """Replace each column by its reports; one fresh key for the call unless given.

        Every column is randomized before anything is assembled, so a bad column raises
        without producing any output. The returned frame's report columns record their
        mechanisms in their type. With ``ledger`` and ``budget``, the release is checked
        against the budget first and recorded once the reports exist. Bloom RAPPOR columns
        also get a ``{column}_cohort`` column.

        ``user`` names the column that identifies people: a person is then the privacy unit,
        and the release states (and charges) the loss of the person holding the most rows,
        or of ``max_rows_per_user`` rows when given (a person holding more is refused).
        ``contributions="sample"`` keeps one row of each person instead, drawn uniformly at
        random under the call's key (the release then has one row per person; index reset).
        Without ``user``, each row is taken to be a different person. Mechanisms with
        ``epsilon_infinity`` memoize their permanent responses per (user, value) under
        ``memo_key`` (a persistent secret); see :meth:`rappor`.

        ``collect`` says how the columns share a person's budget: ``"split"`` (the default)
        reports every column, and a person loses their composition; ``"sample"`` reports one
        column per row, chosen uniformly under the call's key (the others are null), each
        through its own mechanism, and a person loses the largest of their epsilons;
        ``"sample+fake"`` fills the other columns with reports of fake values (the same
        guarantee, the real column hidden, about ``d`` times the variance): drawn uniformly
        from the column's buckets, or from ``fake_prior[column]``, a public law ``{category:
        weight}`` or the :class:`~frameldp.FrequencyTable` of an earlier release (RS+RFD:
        closer to the data, a smaller variance); ``"auto"`` splits or samples at split's
        budget, whichever has the smaller total variance (docs/multiple_columns.md).
        """
        priors = None if fake_prior is None else _prior_weights(fake_prior)
        return self._engine.privatize(
            Privatization(
                collect_columns(mechanisms, collect, priors),
                key=key,
                seed=seed,
                ledger=ledger,
                budget=budget,
                user=user,
                memo_key=memo_key,
                max_rows_per_user=max_rows_per_user,
                contributions=contributions,
            )
        )

    def shuffle(
        self, *, keep: Sequence[Any] | str = (), key: bytes | None = None, seed: int | None = None
    ) -> Any:
        """The report columns only, rows in a keyed uniformly random order (index reset).

        Every column that is not a recorded report column is dropped (a pandas index too: it
        may identify people), unless named in ``keep``, which voids the shuffle guarantee (the
        frame then keeps its local guarantee; a warning says so). ``ldp.privacy`` of the result
        is amplified by shuffling its rows, one per person
        (:func:`frameldp.amplify_by_shuffling`). The same key gives the same order on every
        backend.
        """
        engine = self._local("shuffle", "shuffle")
        reports = self._report_columns()
        specs = recorded_specs(reports)
        shuffled_columns(specs)  # refused before a row is read
        read = dict.fromkeys([*reports, *kept_columns(self._columns(), keep)])
        local = engine.gather(list(read))  # a plan runs once: its rows are counted in this run
        frame, adapter = local.frame, local.adapter
        num_rows = adapter.num_rows(frame)
        columns, record = plan_shuffle(self._columns(), specs, keep, num_rows, seed=seed)
        refuse_other_rows(specs, lambda name: adapter.to_arrow(frame, name))
        arrays = [adapter.to_arrow(frame, name) for name in columns]
        order = shuffle_order(arrays, num_rows, key, seed)
        shuffled = {
            name: with_shuffle(array.take(order), reports[name], record)
            for name, array in zip(columns, arrays, strict=True)
            if name in reports
        }
        return engine.returned(adapter.with_arrow(adapter.take(frame, columns, order), shuffled))

    # -- estimating ----------------------------------------------------------------------------

    def _statistic(self, column: str, names: list[Any], mechanism: Mechanism) -> Statistic:
        """The additive statistic of the report columns ``names`` of ``column``."""
        grouped = self._engine.reduce(flat_reduction(column, names, mechanism), ())
        return cast(Statistic, grouped.only())

    def debias(
        self,
        column: str | Sequence[str],
        mechanism: Mechanism | Sequence[Mechanism] | None = None,
        *,
        by: str | Sequence[str] | None = None,
        level: float = 0.95,
    ) -> FrequencyTable | MeanEstimate | DistributionTable:
        """Debiased frequency table of a report column (or of Balcer–Cheu messages), with
        standard errors and intervals at ``level``; ``mechanism`` defaults to the recorded
        one (another one is refused).

        ``by`` names public columns (one or several): the table then holds one debiased
        table per group of rows, each from its own reports and its own ``n``, computed in one
        pass. The group sizes are released as they are (they are public columns, not
        privatized); a report column cannot be a group key. Two report columns
        (``debias(["a", "b"])``, each privatized by any frequency oracle) give their joint
        table over the product of the two domains (:mod:`frameldp.core.joint`).

        A numeric report column gives its mechanism's natural estimate: a
        :class:`~frameldp.results.mean.MeanEstimate` for a mean mechanism (as :meth:`mean`),
        a :class:`~frameldp.results.distribution.DistributionTable` for Square Wave (as
        :meth:`distribution`).
        """
        if _names_a_pair(column, self._columns()):
            return self._debias_joint(tuple(column), mechanism, by=by, level=level)
        found = self._recorded_mechanism(cast(str, column), cast(Mechanism | None, mechanism))
        result = self._flat(cast(str, column), found, by=by, level=level)
        return cast(FrequencyTable | MeanEstimate | DistributionTable, result)

    def mean(
        self,
        column: str,
        mechanism: Mechanism | None = None,
        *,
        by: str | Sequence[str] | None = None,
        level: float = 0.95,
    ) -> MeanEstimate:
        """The unbiased mean of a numeric report column (privatized by a mean mechanism:
        Duchi et al.'s, Piecewise, Hybrid or stochastic rounding), with its standard error, an
        interval at ``level`` and the total (:class:`~frameldp.results.mean.MeanEstimate`);
        ``by`` names public columns, one mean per group, computed in one pass."""
        normal_quantile(level)  # a bad level is refused before any work
        found = self._numeric_mechanism(column, mechanism, "a mean")
        result = self._flat(column, found, by=by, level=level)
        if isinstance(result, DistributionTable):  # Square Wave: the distribution's mean
            return result.mean()
        return cast(MeanEstimate, result)

    def distribution(
        self,
        column: str,
        mechanism: Mechanism | None = None,
        *,
        by: str | Sequence[str] | None = None,
        level: float = 0.95,
    ) -> DistributionTable:
        """The estimated distribution of a numeric report column privatized by Square Wave:
        a histogram with standard errors, the CDF, :meth:`~DistributionTable.quantile`,
        :meth:`~DistributionTable.mean` and :meth:`~DistributionTable.range_count`
        (:class:`~frameldp.results.distribution.DistributionTable`); ``by`` names public
        columns, one distribution per group."""
        normal_quantile(level)  # a bad level is refused before any work
        found = self._numeric_mechanism(column, mechanism, "a distribution")
        if Capability.MEAN in found.capabilities:
            raise ParameterError(
                f"column {shown(column)}: {found.title} reports estimate a mean, not a "
                "distribution: privatize with SquareWave for distributions and quantiles",
                column=column,
            )
        return cast(DistributionTable, self._flat(column, found, by=by, level=level))

    def range_count(
        self, column: str, low: float, high: float, mechanism: Mechanism | None = None
    ) -> RangeCount:
        """How many values of a Square Wave report column lie in ``[low, high]``, with its
        standard error (from :meth:`distribution`)."""
        return self.distribution(column, mechanism).range_count(low, high)

    def _numeric_mechanism(self, column: str, mechanism: Mechanism | None, what: str) -> Mechanism:
        """The mechanism of a numeric report column (a frequency oracle's is refused)."""
        found = self._recorded_mechanism(column, mechanism)
        if Capability.NUMERIC not in found.capabilities:
            raise ParameterError(
                f"column {shown(column)}: holds reports of {found.title}, which estimates "
                f"frequencies, not {what}; use debias()",
                column=column,
            )
        return found

    def _recorded_mechanism(self, column: str, mechanism: Mechanism | None) -> Mechanism:
        """The mechanism of report column ``column``: the recorded one (``mechanism``, if
        given, must be it)."""
        require_column(self._columns(), column)
        found: Mechanism = find_mechanism(column, mechanism, self._specs())
        return found

    def _flat(
        self, column: str, found: Mechanism, *, by: str | Sequence[str] | None, level: float
    ) -> Any:
        """The estimate of one report column of ``found`` (flat or by groups), of the result
        type of the mechanism's estimate."""
        columns = self._columns()
        names = report_names(column, found, self._specs().get(column))
        for name in names:
            require_column(columns, name)
        keys = self._group_columns(by, (column,))
        if keys and Capability.SHUFFLER_MESSAGES in found.capabilities:
            raise ParameterError(
                f"column {shown(column)}: {found.title} messages are the shuffler's output, not "
                "one report per person: they have no groups",
                column=column,
            )
        query = flat_query(column, found, names, keys)
        return query.run(self._engine, level=level, privacy=self._table_privacy(found, column))

    def _debias_joint(
        self,
        pair: tuple[Any, ...],
        mechanisms: Any,
        *,
        by: str | Sequence[str] | None,
        level: float,
    ) -> FrequencyTable:
        """The joint table of two report columns (:meth:`debias`)."""
        if len(pair) != 2:
            raise ParameterError(f"a joint table needs two report columns, got {shown(list(pair))}")
        given = (None, None) if mechanisms is None else mechanisms
        if not isinstance(given, list | tuple) or len(given) != 2:
            raise ParameterError("a joint table takes a pair of mechanisms (or none)")
        columns = self._columns()
        recorded = self._specs()
        found = []
        names = []
        for column, mechanism in zip(pair, given, strict=True):
            require_column(columns, column)
            chosen = find_mechanism(column, mechanism, recorded)
            if column in STAT_COLUMNS:
                raise ParameterError(
                    f"column {shown(column)}: a joint table names its label columns after the "
                    "report columns, and this one clashes with its estimate columns; rename it",
                    column=column,
                )
            found.append(chosen)
            listed = report_names(column, chosen, recorded.get(column))
            for name in listed:
                require_column(columns, name)
            names.append(listed)
        first, second = found
        types = self._report_columns()
        query = joint_query(
            (pair[0], pair[1]),
            (first, second),
            (names[0], names[1]),
            (types.get(pair[0]), types.get(pair[1])),
            self._group_columns(by, pair),
        )
        privacy = self._joint_privacy(pair, (first, second))
        return cast(FrequencyTable, query.run(self._engine, level=level, privacy=privacy))

    def _joint_privacy(
        self, pair: tuple[Any, ...], mechanisms: tuple[Mechanism, Mechanism]
    ) -> PrivacyGuarantee:
        """Both reports' guarantees composed (the frame's when it was shuffled)."""
        own = [
            self._table_privacy(mechanism, column) or mechanism.privacy
            for column, mechanism in zip(pair, mechanisms, strict=True)
        ]
        if self._shuffled():
            return own[0]  # the frame's shuffled guarantee already covers every column
        return compose(own)

    def _group_columns(
        self, by: str | Sequence[str] | None, debiased: Sequence[Any]
    ) -> tuple[str, ...]:
        """The public group columns named by ``by``, checked (:func:`check_group_columns`)."""
        recorded = self._specs()
        reported = set(self._report_columns())
        for column, mechanism in self.mechanisms.items():
            reported.update(report_names(column, mechanism, recorded.get(column)))
        return check_group_columns(by, self._columns(), reported, debiased)

    def unpack(self, column: str, mechanism: Mechanism | None = None) -> Any:
        """Bit-vector reports (RAPPOR, OUE, subset selection) as one 0/1 ``uint8`` column per
        bucket, named ``column=label``; a lazy frame's are unpacked as it runs."""
        require_column(self._columns(), column)
        return self._engine.unpack(column, find_mechanism(column, mechanism, self._specs()))

    def decode(
        self,
        column: str | None = None,
        *,
        candidates: Sequence[object],
        mechanism: Mechanism | None = None,
        significance: float = 0.05,
        level: float = 0.95,
    ) -> FrequencyTable:
        """Decode Bloom RAPPOR reports against candidate strings (see
        :func:`frameldp.core.estimation.decode_bloom`).

        The table lists the detected candidates with counts, standard errors, intervals at
        ``level`` and p-values; ``table.decoding.unexplained`` is the share of reports they do
        not explain. ``column`` may be omitted when the frame holds one Bloom report column.
        """
        recorded = self._specs()
        column, found, names, memo = find_decoder(column, mechanism, recorded)
        columns = self._columns()
        for name in names:
            require_column(columns, name)
        with column_context(column):
            return FrequencyTable.decoded(
                found,
                self._statistic(column, names, found),
                candidates,
                memo=memo,
                significance=significance,
                column=column,
                level=level,
                backend=self._engine.backend,
                seeded=is_seeded(recorded, column),
            )

    def discover(
        self,
        column: str | None = None,
        *,
        top: int = 20,
        width: int | None = None,
        mechanism: Mechanism | None = None,
        significance: float = 0.05,
        level: float = 0.95,
    ) -> FrequencyTable:
        """The most frequent strings of a prefix-extending report column, found without a
        candidate list (see :class:`frameldp.PrefixExtending`).

        The search reads the reports once per level, keeping the ``width`` (default
        ``2 * top``) most frequent prefixes at each. The table lists up to ``top`` strings whose
        one-sided p-value is below ``significance`` over the number of final candidates, by
        decreasing count, with standard errors, intervals at ``level``, a ``truncated`` column
        (the string was cut at ``max_length`` bytes) and ``p_value``. ``column`` may be
        omitted when the frame holds one prefix-extending report column.
        """
        recorded = self._specs()
        column, found, names = find_discoverer(column, mechanism, recorded)
        columns = self._columns()
        for name in names:
            require_column(columns, name)

        gather: Gather = self._engine.gatherer(tuple(names), column)
        with column_context(column):
            discovery = found.discover(
                gather, column=column, top=top, width=width, significance=significance
            )
            return FrequencyTable.discovered(
                found,
                discovery,
                column=column,
                level=level,
                backend=self._engine.backend,
                seeded=is_seeded(recorded, column),
            )

    # -- shortcuts -----------------------------------------------------------------------------

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
        reports = self._report_columns()
        if column in reports:
            refuse_reports(column, reports[column])
        engine = self._local("the Balcer–Cheu shuffler", "balcer_cheu", column)
        # One read: the people counted (n) are the people whose messages are sent, even for a
        # LazyFrame whose source could change between two executions.
        local = engine.gather([column])
        values = local.adapter.to_arrow(local.frame, column)
        with column_context(column):
            mechanism = mechanism_class("balcer_cheu")(
                epsilon,
                delta,
                n=len(values),
                domain=_domain(domain, unknown, nulls, column, lambda: values),
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
                {column: values},
                {column: mechanism},
                specs=release.specs,
                source=source,
            )[column]
            messages = messages.take(permutation(source.stream(column, "shuffle"), len(messages)))
        return engine.returned(local.adapter.from_arrow({column: messages}))

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
        hash_scheme: HashScheme = FAST_HASHES,
        user: str | None = None,
        memo_key: bytes | None = None,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
        hash: HashScheme | None = None,
        max_rows_per_user: int | None = None,
        contributions: str = "all",
    ) -> Any:
        """Replace ``column`` by RAPPOR reports.

        ``encoding="onehot"`` (default): bit-vector RAPPOR over the public ``domain`` (see
        :class:`frameldp.Rappor`). ``encoding="bloom"``: Bloom-filter RAPPOR for open domains
        (see :class:`frameldp.BloomRappor`), with ``num_bits``, ``num_hashes``,
        ``num_cohorts``, ``hash_scheme`` (``hash=`` is its deprecated name) and either ``f``,
        ``p``, ``q`` or ``epsilon`` (one report) with ``epsilon_infinity``; ``user`` names the
        column identifying users (stable cohorts and memoized permanent responses under
        ``memo_key``), and a ``{column}_cohort`` column is written beside the reports.

        One-hot and k-hot RAPPOR take ``epsilon_infinity`` too (longitudinal RAPPOR): ``user``
        names the column identifying people, whose permanent responses are memoized per (user,
        value) under ``memo_key``, so that any number of collections of one unchanged value
        cost at most ``epsilon_infinity`` (see :class:`frameldp.Rappor`). A person is the
        privacy unit: the release states the loss of the person holding the most rows (or
        ``max_rows_per_user``), whatever their values (see :meth:`privatize`).
        """
        require_column(self._columns(), column)
        hash_scheme = chosen_hash_scheme("df.ldp.rappor", hash_scheme, hash)
        if encoding == "bloom":
            if domain is not None or max_weight != 1 or unknown is not None or nulls is not None:
                raise ParameterError(
                    f"column {shown(column)}: encoding='bloom' takes no domain, max_weight, "
                    "unknown or nulls (its domain is open; decode against candidates instead)"
                )
            with column_context(column):
                mechanism = mechanism_class("bloom_rappor")(
                    epsilon,
                    epsilon_infinity=epsilon_infinity,
                    f=f,
                    p=p,
                    q=q,
                    num_bits=num_bits,
                    num_hashes=num_hashes,
                    num_cohorts=num_cohorts,
                    hash_scheme=hash_scheme,
                )
        elif encoding != "onehot":
            raise ParameterError(
                f"column {shown(column)}: encoding must be 'onehot' or 'bloom', got {encoding!r}"
            )
        else:
            given = [name for name, value in {"p": p, "q": q}.items() if value is not None]
            if given:
                raise ParameterError(
                    f"column {shown(column)}: {', '.join(given)} only apply to encoding='bloom' "
                    "(one-hot RAPPOR takes epsilon, or f)"
                )
            mechanism = build_rappor(
                column,
                lambda: self._domain_values(column),
                epsilon,
                f=f,
                domain=domain,
                max_weight=max_weight,
                unknown=unknown,
                nulls=nulls,
                epsilon_infinity=epsilon_infinity,
            )
        return self.privatize(
            {column: mechanism},
            key=key,
            seed=seed,
            ledger=ledger,
            budget=budget,
            user=user,
            memo_key=memo_key,
            max_rows_per_user=max_rows_per_user,
            contributions=contributions,
        )

    def krr(
        self,
        column: str,
        epsilon: float,
        *,
        domain: Any,
        unknown: UnknownPolicy | None = None,
        nulls: NullPolicy | None = None,
        epsilon_infinity: float | None = None,
        user: str | None = None,
        memo_key: bytes | None = None,
        key: bytes | None = None,
        seed: int | None = None,
        ledger: LedgerLike | None = None,
        budget: str | None = None,
        max_rows_per_user: int | None = None,
        contributions: str = "all",
    ) -> Any:
        """Replace ``column`` by k-ary randomized response reports.

        With ``epsilon_infinity``, longitudinal k-RR (see :class:`frameldp.RandomizedResponse`):
        permanent responses are memoized per (user, value) under ``memo_key`` (a persistent
        secret), so that any number of collections of one unchanged value cost at most
        ``epsilon_infinity``. ``user`` makes a person the privacy unit (see :meth:`privatize`).
        """
        require_column(self._columns(), column)
        mechanism = build_krr(
            column,
            lambda: self._domain_values(column),
            epsilon,
            domain=domain,
            unknown=unknown,
            nulls=nulls,
            epsilon_infinity=epsilon_infinity,
        )
        return self.privatize(
            {column: mechanism},
            key=key,
            seed=seed,
            ledger=ledger,
            budget=budget,
            user=user,
            memo_key=memo_key,
            max_rows_per_user=max_rows_per_user,
            contributions=contributions,
        )

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
            if column in recorded:
                refuse_other_mechanism(column, _as_mechanism(column, given), recorded[column])
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


def _prior_weights(fake_prior: Any) -> Any:
    """``fake_prior`` with each :class:`~frameldp.FrequencyTable` replaced by its estimated
    shares ``{label: frequency}`` (negative estimates at 0: the public result of an earlier
    release) and each pandas Series of weights by its ``{index: weight}``."""
    if not isinstance(fake_prior, Mapping):
        return fake_prior  # refused by collect_columns, naming what it got
    return {column: _weights_of(value) for column, value in fake_prior.items()}


def _weights_of(value: Any) -> Any:
    if isinstance(value, FrequencyTable):
        shares = np.clip(value.estimate.frequencies, 0.0, None)
        return dict(zip(value.labels, shares, strict=True))
    if not isinstance(value, Mapping) and hasattr(value, "index") and hasattr(value, "to_dict"):
        return value.to_dict()  # a pandas Series: {category: weight}
    return value
