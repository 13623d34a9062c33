"""What ``frameldp privatize`` applies to each column, from options or from a spec file.

On the command line, ``--column`` may be repeated; ``--mechanism`` and ``--epsilon`` are given
once (for every column) or once per column, in order, and ``--domain-file`` once or once per
column that needs a domain (every mechanism but Bloom RAPPOR and prefix extending, whose domains
are open).
``--mechanism`` is ``auto`` (the frequency oracle with the smallest variance at that epsilon and
domain; with ``--bounds``, the mean mechanism of smallest worst-case variance), a registered
frequency oracle's name (``rappor``, ``optimized_unary_encoding``, ``local_hashing``, ...),
``krr``, ``bloom`` or ``pem`` (prefix extending, with ``--max-length``), or a numeric
mechanism (``duchi``, ``piecewise``, ``hybrid``, ``rounding``, ``squarewave``, with
``--bounds LO,HI`` and optionally ``--clip``, ``--levels`` or ``--buckets``). A spec file
(``--spec job.json``) says the same per column::

    {"dest": {"mechanism": "rappor", "epsilon": 1.0, "domain_file": "dests.txt"},
     "carrier": {"mechanism": "krr", "epsilon": 2.0, "domain": ["AA", "DL", "UA"]},
     "origin": {"mechanism": "auto", "epsilon": 4.0, "domain_file": "airports.txt"},
     "url": {"mechanism": "bloom", "epsilon": 1.0, "epsilon_infinity": 4.0},
     "query": {"mechanism": "pem", "epsilon": 4.0, "max_length": 12},
     "fare": {"mechanism": "piecewise", "epsilon": 2.0, "bounds": [39, 1500]}}

An option that does not apply to its column's mechanism is refused (in a spec file), or when no
column uses it (on the command line, where an option is given once for every column).
``epsilon_infinity`` applies to Bloom RAPPOR and, with ``--user``, to every mechanism that
memoizes permanent responses (``rappor``, ``krr``, ``optimized_unary_encoding``,
``local_hashing``, ``subset_selection``, and ``auto``, which then chooses among them).

A domain file holds one value per line (blank lines are skipped), or a JSON list (``.json``).
The domain is public input: it is never read from the data. Errors about a domain file never
quote what it holds when it does not look like a domain (not text, or a single value): it may be
a key file passed by mistake.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from frameldp.cli._inputs import read_text
from frameldp.core.encoding import Domain
from frameldp.core.mechanisms import (
    OPEN_DOMAIN,
    Capability,
    Mechanism,
    mechanism_class,
    mechanism_names,
)
from frameldp.core.mechanisms.choice import choose_mechanism
from frameldp.errors import DomainError, ParameterError, shown
from frameldp.frames.pipeline import column_context

__all__ = [
    "ColumnSpec",
    "build_mechanism",
    "memoized_where_used",
    "specs_from_file",
    "specs_from_options",
]

SHORT_NAMES = {
    "krr": "randomized_response",
    "bloom": "bloom_rappor",
    "pem": "prefix_extending",
    "rounding": "stochastic_rounding",
    "squarewave": "square_wave",
}
"""Command-line names of registered mechanisms (every registered name is accepted too)."""
AUTOMATIC = "auto"


def mechanism_choices() -> list[str]:
    """What ``--mechanism`` accepts: ``auto`` (the smallest variance), the frequency oracles
    and numeric mechanisms by their spec names, and the short names."""
    wanted = {Capability.FREQUENCY_ORACLE, Capability.NUMERIC}
    oracles = [name for name in mechanism_names() if wanted & mechanism_class(name).capabilities]
    return [AUTOMATIC, *sorted({*oracles, *SHORT_NAMES})]


@dataclass(frozen=True)
class ColumnSpec:
    """One column's mechanism and parameters, as the user gave them."""

    column: str
    mechanism: str
    epsilon: float | None = None
    domain: tuple[Any, ...] | None = None
    domain_file: Path | None = None
    unknown: str | None = None
    nulls: str | None = None
    max_weight: int | None = None
    epsilon_infinity: float | None = None
    num_bits: int | None = None
    num_hashes: int | None = None
    num_cohorts: int | None = None
    max_length: int | None = None
    bounds: tuple[float, float] | None = None
    clip: bool | None = None
    levels: int | None = None
    buckets: int | None = None

    @property
    def registered(self) -> str:
        """The mechanism's registered name (``krr`` is ``randomized_response``)."""
        return SHORT_NAMES.get(self.mechanism, self.mechanism)

    @property
    def numeric(self) -> bool:
        """Whether the column holds numbers on public bounds (a numeric mechanism, or ``auto``
        given ``bounds``)."""
        name = self.registered
        if name == AUTOMATIC:
            return self.bounds is not None
        return name in mechanism_names() and (
            Capability.NUMERIC in mechanism_class(name).capabilities
        )

    @property
    def needs_domain(self) -> bool:
        """Frequency oracles take a public domain; Bloom RAPPOR's and prefix extending's are
        open, and numbers have bounds instead."""
        if self.numeric:
            return False
        name = self.registered
        if name == AUTOMATIC or name not in mechanism_names():
            return True
        return not OPEN_DOMAIN & mechanism_class(name).capabilities

    @property
    def memoizes(self) -> bool:
        """Whether the mechanism can memoize permanent responses (with ``epsilon_infinity``
        and users; ``auto`` chooses among those that can)."""
        name = self.registered
        if name == AUTOMATIC:
            return True
        return name in mechanism_names() and (
            Capability.MEMOIZATION in mechanism_class(name).capabilities
        )

    def uses(self, option: str) -> bool:
        """Whether ``option`` (a field name) applies to this column's mechanism: a
        mechanism-specific option where the mechanism's constructor takes it."""
        if option == "epsilon_infinity":
            return self.memoizes
        if option in DOMAIN_OPTIONS:
            return self.needs_domain
        if option not in mechanism_options():
            return True
        name = self.registered
        if name == AUTOMATIC and option in AUTOMATIC_NUMERIC_OPTIONS:
            return True
        return name in mechanism_names() and option in _parameters(name)

    def given(self, name: str) -> dict[str, Any]:
        """The mechanism-specific options given here that mechanism ``name`` takes."""
        return {
            option: getattr(self, option)
            for option in mechanism_options()
            if getattr(self, option) is not None and option in _parameters(name)
        }


def _parameters(name: str) -> frozenset[str]:
    """The parameters of the constructor of the mechanism registered as ``name``."""
    return frozenset(inspect.signature(mechanism_class(name)).parameters)


def mechanism_options() -> frozenset[str]:
    """The options of :class:`ColumnSpec` that only some mechanisms take, read from the
    mechanisms' own constructors (``max_weight``: RAPPOR; ``num_bits``, ``num_hashes``,
    ``num_cohorts``: Bloom RAPPOR; ``max_length``: prefix extending). ``epsilon``, ``domain``
    and ``epsilon_infinity`` (:attr:`ColumnSpec.memoizes`) are not among them."""
    taken = set().union(*(_parameters(name) for name in mechanism_names()))
    return frozenset(taken & {f.name for f in fields(ColumnSpec)} - COMMON_OPTIONS)


DOMAIN_OPTIONS = frozenset({"domain", "domain_file", "unknown", "nulls"})
"""The options of a public domain: every mechanism but those of an open domain takes them."""

AUTOMATIC_NUMERIC_OPTIONS = frozenset({"bounds", "clip"})
"""The options ``auto`` takes for numbers (it then chooses a mean mechanism)."""

COMMON_OPTIONS = frozenset(
    {"column", "mechanism", "epsilon"}
    | DOMAIN_OPTIONS
    | {"epsilon_infinity"}  # where the mechanism memoizes: ColumnSpec.memoizes
)
"""The options of every column, whatever mechanism (and plugin) is registered."""


def _flag(option: str) -> str:
    return "--" + option.replace("_", "-")


def _paired(name: str, values: Sequence[Any], count: int, what: str) -> list[Any]:
    """``values`` given once for all, or once per item, in order."""
    if len(values) == 1:
        return list(values) * count
    if len(values) == count:
        return list(values)
    raise ParameterError(
        f"{name} was given {len(values)} times for {count} {what}: give it once (for all) "
        "or once per column, in order"
    )


def specs_from_options(
    columns: Sequence[str],
    mechanisms: Sequence[str],
    epsilons: Sequence[float],
    domain_files: Sequence[Path],
    **shared: Any,
) -> list[ColumnSpec]:
    """Column specs from repeated ``--column``/``--mechanism``/``--epsilon``/``--domain-file``
    options; ``shared`` holds the options that apply to every column (``unknown``, ``nulls``,
    ``max_weight``, Bloom sizes; ``None``: :class:`ColumnSpec`'s default)."""
    if not columns:
        raise ParameterError("name the columns to privatize with --column (or use --spec)")
    if len(set(columns)) != len(columns):
        twice = sorted({c for c in columns if list(columns).count(c) > 1})
        raise ParameterError(f"--column {twice[0]!r} is given more than once")
    if not mechanisms:
        raise ParameterError("--mechanism is required: one of " + ", ".join(mechanism_choices()))
    if not epsilons:
        raise ParameterError("--epsilon is required")
    kinds = _paired("--mechanism", mechanisms, len(columns), "columns")
    eps = _paired("--epsilon", epsilons, len(columns), "columns")
    given = {name: value for name, value in shared.items() if value is not None}
    if "bounds" in given:
        given["bounds"] = parse_bounds(given["bounds"])
    specs = [
        ColumnSpec(column, kind, epsilon, **given)
        for column, kind, epsilon in zip(columns, kinds, eps, strict=True)
    ]
    for spec in specs:
        _check_kind(spec)
    for option in given:
        if not any(spec.uses(option) for spec in specs):
            raise ParameterError(
                f"{_flag(option)} does not apply to {', '.join(sorted(set(kinds)))}: no column "
                "here uses it"
            )
    need = [spec for spec in specs if spec.needs_domain]
    if need and not domain_files:
        raise ParameterError(
            f"column {need[0].column!r}: --domain-file is required for {need[0].mechanism} "
            "(or, for numbers, --bounds LO,HI) "
            "(the domain is public input, never read from the data)"
        )
    if not need and domain_files:
        raise ParameterError(
            "--domain-file is not used: Bloom RAPPOR (bloom) and prefix extending (pem) have open "
            "domains"
        )
    files = iter(_paired("--domain-file", domain_files, len(need), "columns that take a domain"))
    return [replace(spec, domain_file=next(files)) if spec.needs_domain else spec for spec in specs]


def memoized_where_used(specs: list[ColumnSpec], user: str | None) -> list[ColumnSpec]:
    """Command-line specs with the shared ``--epsilon-infinity`` kept where it applies: Bloom
    RAPPOR, and with ``--user`` every mechanism that memoizes permanent responses (without
    users a permanent response would protect nothing beyond one report); refused when it
    applies to no column."""
    kept = [
        spec
        if spec.registered == "bloom_rappor" or (user is not None and spec.memoizes)
        else replace(spec, epsilon_infinity=None)
        for spec in specs
    ]
    given = any(spec.epsilon_infinity is not None for spec in specs)
    if given and not any(spec.epsilon_infinity is not None for spec in kept):
        raise ParameterError(
            "--epsilon-infinity needs --user (the column identifying people, whose permanent "
            f"responses are memoized) for {', '.join(sorted({s.mechanism for s in specs}))}"
        )
    return kept


def specs_from_file(path: Path) -> list[ColumnSpec]:
    """Column specs from a JSON spec file (see the module docstring)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ParameterError(f"--spec {str(path)!r}: cannot read it: {reason}") from None
    except UnicodeDecodeError:
        raise ParameterError(f"--spec {str(path)!r}: cannot read it: not UTF-8 text") from None
    except ValueError as error:
        raise ParameterError(f"--spec {str(path)!r}: cannot read it: {error}") from None
    if not isinstance(data, dict) or not data:
        raise ParameterError(f"--spec {str(path)!r}: expected a JSON object {{column: {{...}}}}")
    known = {f.name for f in fields(ColumnSpec)} - {"column"}
    specs = []
    for column, options in data.items():
        if not isinstance(options, dict):
            raise ParameterError(
                f"--spec: column {shown(column)}: expected an object, got {shown(options)}"
            )
        unknown = sorted(set(options) - known)
        if unknown:
            raise ParameterError(
                f"--spec: column {shown(column)}: unknown option {shown(unknown[0])}; known: "
                f"{sorted(known)}"
            )
        if "mechanism" not in options:
            raise ParameterError(f"--spec: column {shown(column)}: 'mechanism' is required")
        options = dict(options)
        if options.get("domain") is not None:
            if not isinstance(options["domain"], list):
                raise ParameterError(
                    f"--spec: column {shown(column)}: 'domain' must be a list of values, got "
                    f"{shown(options['domain'])}"
                )
            options["domain"] = tuple(options["domain"])
        if options.get("bounds") is not None:
            options["bounds"] = parse_bounds(options["bounds"], f"--spec: column {shown(column)}")
        if options.get("domain_file") is not None:
            if not isinstance(options["domain_file"], str):
                raise ParameterError(
                    f"--spec: column {shown(column)}: 'domain_file' must be a path, got "
                    f"{shown(options['domain_file'])}"
                )
            options["domain_file"] = path.parent / options["domain_file"]
        spec = ColumnSpec(column, **options)
        _check_kind(spec)
        for option, value in options.items():
            if value is not None and not spec.uses(option):
                raise ParameterError(
                    f"--spec: column {shown(column)}: {option!r} does not apply to {spec.mechanism}"
                )
        if spec.needs_domain and spec.domain is None and spec.domain_file is None:
            raise ParameterError(
                f"--spec: column {shown(column)}: {spec.mechanism} needs 'domain' or 'domain_file'"
            )
        specs.append(spec)
    return specs


def parse_bounds(value: Any, where: str = "--bounds") -> tuple[float, float]:
    """``LO,HI`` (text) or ``[lo, hi]`` (JSON) as a pair of floats; the mechanism checks that
    ``lo < hi`` and both are finite."""
    parts = value.split(",") if isinstance(value, str) else value
    if not isinstance(parts, list | tuple) or len(parts) != 2:
        raise ParameterError(f"{where}: bounds must be LO,HI, got {shown(value)}")
    try:
        low, high = (float(part) for part in parts)
    except (TypeError, ValueError):
        raise ParameterError(
            f"{where}: bounds must be two numbers LO,HI, got {shown(value)}"
        ) from None
    return low, high


def _check_kind(spec: ColumnSpec) -> None:
    choices = mechanism_choices()
    if spec.mechanism not in choices and spec.mechanism not in SHORT_NAMES.values():
        raise ParameterError(
            f"column {shown(spec.column)}: mechanism must be one of {', '.join(choices)}, got "
            f"{shown(spec.mechanism)}"
        )


def read_domain(path: Path, column: str) -> list[Any]:
    """Values of a domain file: a JSON list (``.json``) or one value per line.

    A file that is not UTF-8 text, or that holds a single value, is refused without quoting it:
    a 32-byte key file given as ``--domain-file`` by mistake must not be echoed into a log.
    """
    where = f"column {shown(column)}: --domain-file {str(path)!r}"
    text = read_text(
        path,
        where,
        hint=" (is it a key file?); a domain file holds one value per line or a JSON list",
        error=DomainError,
    )
    if path.suffix.lower() == ".json":
        try:
            values = json.loads(text)
        except ValueError as error:
            raise DomainError(f"{where}: not a JSON list: {error}") from None
        if not isinstance(values, list):
            raise DomainError(f"{where} must hold a JSON list")
    else:
        values = [line for line in text.splitlines() if line.strip()]
    if len(values) < 2:
        raise DomainError(
            f"{where} holds {len(values)} value(s); a domain needs at least 2 (is it a key file?)"
        )
    return values


def _typed(values: list[Any], kind: pa.DataType, column: str) -> list[Hashable]:
    """Text domain values as the column's type (a Parquet column of integers, say)."""
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if not all(isinstance(v, str) for v in values) or not (
        pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)
    ):
        return values
    try:
        return list(pa.array(values, type=pa.string()).cast(kind).to_pylist())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise DomainError(
            f"column {shown(column)}: the domain values cannot be read as the column's type "
            f"{kind} (first values: {', '.join(shown(v) for v in values[:3])})"
        ) from None


def build_mechanism(spec: ColumnSpec, kind: pa.DataType) -> Mechanism:
    """The mechanism of ``spec`` for a column of Arrow type ``kind``; errors name the column."""
    with column_context(spec.column):
        # Checked for every mechanism, so a bad value never passes unnoticed where unused.
        if spec.unknown not in (None, "raise", "other"):
            raise ParameterError(f"--unknown must be 'raise' or 'other', got {shown(spec.unknown)}")
        if spec.nulls not in (None, "raise", "category"):
            raise ParameterError(f"--nulls must be 'raise' or 'category', got {shown(spec.nulls)}")
        if spec.max_weight is not None and (
            not isinstance(spec.max_weight, int) or spec.max_weight < 1
        ):
            raise ParameterError(
                f"--max-weight must be an integer >= 1, got {shown(spec.max_weight)}"
            )
        name = spec.registered
        if spec.numeric:
            return _numeric_mechanism(spec, name)
        if name != AUTOMATIC and OPEN_DOMAIN & mechanism_class(name).capabilities:
            given = spec.given(name)  # Bloom RAPPOR's sizes, prefix extending's max_length
            if spec.epsilon_infinity is not None:
                if not spec.memoizes:
                    raise ParameterError(
                        f"--epsilon-infinity: {spec.mechanism} has no permanent response to memoize"
                    )
                given["epsilon_infinity"] = spec.epsilon_infinity
            opened: Mechanism = mechanism_class(name)(spec.epsilon, **given)
            return opened
        if spec.epsilon is None:
            raise ParameterError(f"{spec.mechanism} needs epsilon")
        values = (
            list(spec.domain)
            if spec.domain is not None
            else read_domain(spec.domain_file, spec.column)
            if spec.domain_file is not None
            else None
        )
        domain = Domain.coerce(
            None if values is None else _typed(values, kind, spec.column),
            unknown=spec.unknown,  # type: ignore[arg-type]
            nulls=spec.nulls,  # type: ignore[arg-type]
        )
        if spec.max_weight not in (None, 1) and not spec.uses("max_weight"):
            raise ParameterError(
                f"--max-weight applies to rappor only (set-valued cells), not to {spec.mechanism}"
            )
        if spec.epsilon_infinity is not None and not spec.memoizes:
            raise ParameterError(
                f"--epsilon-infinity: {spec.mechanism} has no permanent response to memoize"
            )
        options: dict[str, Any] = {"domain": domain}
        if spec.epsilon_infinity is not None:
            options["epsilon_infinity"] = spec.epsilon_infinity
        if name == AUTOMATIC:
            chosen: Mechanism = choose_mechanism(spec.epsilon, **options)
            return chosen
        oracle: Mechanism = mechanism_class(name)(spec.epsilon, **options, **spec.given(name))
        return oracle


def _numeric_mechanism(spec: ColumnSpec, name: str) -> Mechanism:
    """The numeric mechanism of ``spec`` (``auto``: the mean mechanism of smallest worst-case
    variance at its epsilon)."""
    if spec.epsilon is None:
        raise ParameterError(f"{spec.mechanism} needs epsilon")
    if spec.bounds is None:
        raise ParameterError(
            f"--bounds LO,HI is required for {spec.mechanism}: the public interval of the "
            "column's values (never read from the data)"
        )
    if spec.epsilon_infinity is not None and not spec.memoizes:
        raise ParameterError(
            f"--epsilon-infinity: {spec.mechanism} has no permanent response to memoize "
            "(of the numeric mechanisms, rounding has one)"
        )
    options: dict[str, Any] = {"bounds": spec.bounds}
    if spec.clip:
        options["clip"] = True
    if spec.epsilon_infinity is not None:
        options["epsilon_infinity"] = spec.epsilon_infinity
    if name == AUTOMATIC:
        chosen: Mechanism = choose_mechanism(spec.epsilon, **options)
        return chosen
    given = {key: value for key, value in spec.given(name).items() if key not in options}
    numeric: Mechanism = mechanism_class(name)(spec.epsilon, **options, **given)
    return numeric
