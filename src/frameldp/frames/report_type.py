"""Report columns whose type carries their mechanism: the Arrow extension type
``frameldp.reports``.

Every report column frameldp writes is an Arrow extension array named ``frameldp.reports``
whose serialized metadata is a JSON object (:class:`ReportMetadata`): the recorded mechanism
spec (with ``"seeded"`` and ``"memo"`` where they apply), the privatized column's name, which of
the mechanism's report columns this is, and, after a shuffle, the shuffle record. The type is
registered with pyarrow (so Parquet files, IPC streams and ``to_pandas`` keep it), held by
pandas as a ``ReportDtype`` (:meth:`ReportType.to_pandas_dtype`) and by polars as an extension
dtype (:class:`frameldp.frames._polars.ReportsDtype`, same name and metadata). The mechanism
therefore travels with the column: through lazy ``collect``, ``with_columns``, ``filter``,
``concat``, ``group_by``, merges and Parquet files written by any library that keeps Arrow
extension types, and a column that already holds reports is recognised by its type.

Storage: bit-vector reports are ``large_binary``, reported labels (k-RR, Balcer–Cheu) the plain
label values (``large_string`` for text, ``int64``/``float64``/``bool`` otherwise), Bloom cohorts
their integer. Labels are stored as values, not as an Arrow dictionary: polars 2.1 can neither
export nor import an extension type over a dictionary through the Arrow C interface (``to_arrow``
and ``to_pandas`` of such a frame fail), and values read the same in any tool that ignores the
extension. ``tests/frames/test_report_type.py`` pins that polars behaviour.

Two types are equal only when their metadata is equal: pandas concatenates two releases of
different mechanisms (or one shuffled and one not) into an ``object`` column, which no longer
claims either mechanism, and polars refuses to. No formula lives here.

Writes. Values written into a report column are not reports of its release, yet the column's
type would still claim the release (debias, the stated privacy, the Parquet files). No check of
the values can tell them apart afterwards: a k-RR report is a domain label like any written
one, a RAPPOR report any bit vector, and binding each value to its row would need a tag beside
each value, which report columns read as plain values do not have (and a MAC over the whole
column would fail every filter and join). So the write itself is refused where Python code runs
in it: pandas writes go through :class:`~frameldp.frames._pandas_reports.ReportArray`, which
refuses values written into it and leaves values made into its type plain; a conversion of
Python values into this type with ``pa.array(values, type=...)`` goes through
:meth:`ReportType.wrap_array`, which refuses them too. Nulls pass (a shift, a reindex); debias
refuses them. Reads and row operations (filters, ``take``, sorts, ``concat``, merges, Parquet)
never convert values and keep working. Not caught, because Arrow's C++ or polars' Rust runs
them with no hook for this type: polars ``scatter``, ``set``, ``replace`` and item assignment;
a cast of storage values into this type (pyarrow ``cast``, ``Table.cast``, ``from_pandas``
with a schema, pandas ``astype(pd.ArrowDtype(type))``, polars ``.cast``), which a Dask fill
written to Parquet also does (Dask infers the fill's schema on an empty partition, which pandas
leaves typed). polars refuses ``fill_null``, ``when/then``, ``zip_with`` and ``update`` (no
supertype with an extension type). ``tests/privacy/test_raw_values.py`` pins both lists.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from frameldp.core.report_text import text_of_bits
from frameldp.errors import FrameLDPError, ParameterError, shown

__all__ = [
    "EXTENSION_NAME",
    "RELEASE_SEPARATOR",
    "ReportMetadata",
    "ReportType",
    "as_reports",
    "binary_text_bits",
    "described",
    "empty_reports",
    "legacy_report_columns",
    "metadata_of",
    "recorded_shuffle",
    "recorded_specs",
    "refuse_reports",
    "register_pandas_dtype",
    "release_ids",
    "report_types",
    "storage_of",
    "text_of",
    "with_shuffle",
]

EXTENSION_NAME = "frameldp.reports"
"""The registered name of the extension type (Arrow, polars)."""

_VERSION = 1


@dataclass(frozen=True)
class ReportMetadata:
    """What a report column's type records.

    ``spec`` is the recorded mechanism spec; ``column`` the privatized column's name (a Bloom
    RAPPOR cohort column names the column whose reports it belongs to); ``part`` the position of
    this column among ``mechanism.report_columns(column)`` (0: the reports); ``shuffled`` what
    ``shuffle`` recorded (empty when the rows were not shuffled).
    """

    spec: dict[str, Any]
    column: str
    part: int = 0
    shuffled: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        data: dict[str, Any] = {
            "version": _VERSION,
            "column": self.column,
            "part": self.part,
            "spec": self.spec,
        }
        if self.shuffled:
            data["shuffled"] = self.shuffled
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> ReportMetadata:
        """Parse the metadata of a report column (a :class:`ParameterError` if it is not)."""
        try:
            data = json.loads(text)
            valid = isinstance(data, dict) and isinstance(data.get("spec"), dict)
            version = int(data.get("version", _VERSION)) if valid else _VERSION
            valid = valid and _valid_shuffle(data.get("shuffled"))
        except (ValueError, TypeError, OverflowError, RecursionError):
            valid = False
        if not valid:
            shown_text = text if isinstance(text, str) else text[:80].decode(errors="replace")
            raise ParameterError(
                f"a {EXTENSION_NAME} column has metadata that is not valid: {shown(shown_text, 80)}"
            )
        if version > _VERSION:
            raise ParameterError(
                f"a {EXTENSION_NAME} column was written by a newer frameldp (version "
                f"{shown(version)}); upgrade frameldp to read it"
            )
        return cls(
            spec=dict(data["spec"]),
            column=str(data.get("column", "")),
            part=int(data.get("part", 0)) if isinstance(data.get("part", 0), int) else 0,
            shuffled=dict(data.get("shuffled") or {})
            if isinstance(data.get("shuffled"), dict)
            else {},
        )


def _valid_shuffle(record: object) -> bool:
    """A shuffle record is absent, or ``{"reports": int | None, "kept": [...], ...}``."""
    if record is None or record == {}:
        return True
    if not isinstance(record, dict):
        return False
    reports = record.get("reports")
    kept = record.get("kept", [])
    counted = reports is None or (isinstance(reports, int) and not isinstance(reports, bool))
    return counted and (reports is None or reports >= 0) and isinstance(kept, list)


class ReportType(pa.ExtensionType):  # type: ignore[misc]  # pyarrow has no type stubs
    """The Arrow type of a report column: storage type plus :class:`ReportMetadata` JSON."""

    def __init__(self, storage_type: pa.DataType, metadata: ReportMetadata | str) -> None:
        self._json = metadata if isinstance(metadata, str) else metadata.to_json()
        super().__init__(storage_type, EXTENSION_NAME)

    @property
    def metadata(self) -> ReportMetadata:
        """The recorded spec and column (parsed on each access: types are immutable)."""
        return ReportMetadata.from_json(self._json)

    def __arrow_ext_serialize__(self) -> bytes:
        return self._json.encode()

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> ReportType:
        # Never raise while Arrow reads a file: metadata that is not ours is refused when used.
        return cls(storage_type, serialized.decode(errors="replace"))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ReportType):
            return self._json == other._json and self.storage_type == other.storage_type
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash((EXTENSION_NAME, self._json, str(self.storage_type)))

    def __str__(self) -> str:
        try:
            name = str(self.metadata.spec.get("mechanism", "?"))[:40]
        except Exception:  # shown in messages and reprs: never raise
            name = "?"
        return f"{EXTENSION_NAME}<{name}>"

    def __repr__(self) -> str:
        return f"ReportType({self.storage_type!r}, {self._json!r})"

    def wrap_array(self, storage: Any) -> Any:
        """Refuse to make reports of other values (see "Writes" in the module docstring).

        pyarrow calls this when it builds a column of this type from values that are not
        reports already (``pa.array(values, type=...)``); pandas does so for every write of
        Python values into a report column. Nulls pass: they are never read as reports (debias
        refuses them, naming the column). frameldp itself builds reports with
        ``pa.ExtensionArray.from_storage``, which does not come here.
        """
        if storage.null_count == len(storage):
            return super().wrap_array(storage)
        self.refuse_values()

    def refuse_values(self) -> None:
        """Raise: values written into a column of this type are no reports of its release."""
        try:
            column = self.metadata.column
        except ParameterError:  # a type read from a file whose metadata is not ours
            column = "?"
        raise ParameterError(
            f"column {shown(column)}: values written into a column of {self} reports are "
            "not reports of its release, and would be debiased and counted in its privacy as "
            "if they were. Write them into a column of their own, or make the column plain "
            "values first (pandas: s.astype(object), or pa.Array.from_pandas(s).storage)"
        )

    @property
    def text_bits(self) -> int | None:
        """Bits in the text form of these reports (:mod:`frameldp.core.report_text`): the
        mechanism's ``num_bits`` for packed bit vectors, every stored bit for other binary
        reports; None when the reports are not binary (labels and integers are their own text).
        """
        if not pa.types.is_large_binary(self.storage_type):
            return None
        return _text_bits(self._json)

    def to_pandas_dtype(self) -> Any:
        """pandas holds report columns as :class:`~frameldp.frames._pandas_reports.ReportDtype`,
        which that module registers (:func:`register_pandas_dtype`) as pandas is imported:
        frameldp never imports pandas for a job that does not use it."""
        if _PANDAS_DTYPE:
            return _PANDAS_DTYPE[0](self)
        return super().to_pandas_dtype()


_PANDAS_DTYPE: list[Callable[[ReportType], Any]] = []


def register_pandas_dtype(dtype: Callable[[ReportType], Any]) -> None:
    """Make ``dtype(report_type)`` the pandas dtype of report columns (called once, by
    :mod:`frameldp.frames._pandas_reports`)."""
    _PANDAS_DTYPE[:] = [dtype]


@functools.lru_cache(maxsize=256)
def _text_bits(metadata: str) -> int | None:
    """See :attr:`ReportType.text_bits` (None for metadata that is not a known spec)."""
    # Imported here: this module is imported as pyarrow is (to register the type), which may
    # be while the mechanisms' own import of pyarrow is under way.
    from frameldp.core.mechanisms import mechanism_from_spec

    try:
        meta = ReportMetadata.from_json(metadata)
        mechanism = mechanism_from_spec(meta.spec)
        kinds = list(mechanism.report_columns(meta.column).values())
    except (FrameLDPError, TypeError, KeyError, ValueError):
        return None
    kind = kinds[meta.part] if meta.part < len(kinds) else None
    if kind is None or not (pa.types.is_fixed_size_binary(kind) or pa.types.is_binary(kind)):
        return None
    width = kind.byte_width if pa.types.is_fixed_size_binary(kind) else 0
    bits = getattr(mechanism, "num_bits", None)
    return int(bits) if isinstance(bits, int) else 8 * width or None


def binary_text_bits(metadata: ReportMetadata) -> int | None:
    """Bits in the text form of binary reports recorded as ``metadata`` (see
    :attr:`ReportType.text_bits`), for libraries that hold them as plain binary columns."""
    return _text_bits(metadata.to_json())


def text_of(array: pa.Array, kind: ReportType) -> pa.Array:
    """Storage values of reports of type ``kind`` as text-ready values: bit vectors in their
    text form, anything else as it is."""
    bits = kind.text_bits
    return array if bits is None else text_of_bits(array, bits)


def _register() -> None:
    """Register the type with pyarrow, once per process (this module's import does it)."""
    with contextlib.suppress(pa.ArrowKeyError):  # already registered
        pa.register_extension_type(ReportType(pa.null(), ReportMetadata({}, "")))


def _storage(array: pa.Array) -> pa.Array:
    """The storage a report array is kept in (see the module docstring)."""
    kind = _storage_type(array.type)
    if pa.types.is_dictionary(array.type):
        # Cast the (small) dictionary, then decode once into the storage type.
        dictionary = array.dictionary.cast(kind)
        array = pa.DictionaryArray.from_arrays(array.indices, dictionary, safe=False)
        array = array.dictionary_decode()
    return array if kind == array.type else array.cast(kind)


def as_reports(array: pa.Array, metadata: ReportMetadata) -> pa.ExtensionArray:
    """``array`` (a mechanism's output) as a ``frameldp.reports`` column."""
    storage = _storage(storage_of(array))
    return pa.ExtensionArray.from_storage(ReportType(storage.type, metadata), storage)


def empty_reports(kind: ReportType) -> pa.ExtensionArray:
    """An empty column of report type ``kind``."""
    return pa.ExtensionArray.from_storage(kind, pa.array([], type=kind.storage_type))


def storage_of(array: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """The storage values of a report column (any other column as it is)."""
    if isinstance(array.type, pa.BaseExtensionType):
        if isinstance(array, pa.ChunkedArray):
            storage = [chunk.storage for chunk in array.chunks]
            return pa.chunked_array(storage, array.type.storage_type)
        return array.storage
    return array


def metadata_of(
    kind: pa.DataType | None, field_metadata: Mapping[bytes, bytes] | None = None
) -> ReportMetadata | None:
    """The report metadata of a column of Arrow type ``kind``: from a :class:`ReportType`, or
    from the field metadata Arrow leaves on a column of an extension it did not know (a file
    read before the type was registered). None for any other column."""
    if isinstance(kind, ReportType):
        return kind.metadata
    meta = field_metadata or {}
    if meta.get(b"ARROW:extension:name") == EXTENSION_NAME.encode():
        return ReportMetadata.from_json(meta.get(b"ARROW:extension:metadata", b""))
    return None


def recorded_specs(columns: Mapping[str, ReportMetadata]) -> dict[str, dict[str, Any]]:
    """``{column: spec}`` of a frame's report columns (``{name: metadata}``), keyed by the
    names the columns have now; a companion column (Bloom cohorts) is named in its column's spec
    as ``"cohort_column"``, wherever it was renamed to."""
    specs: dict[str, dict[str, Any]] = {}
    companions: dict[tuple[str, str], str] = {}
    for name, meta in columns.items():
        if meta.part == 0:
            specs[name] = dict(meta.spec)
        else:
            companions[(meta.column, json.dumps(meta.spec, sort_keys=True))] = name
    originals = {name: meta.column for name, meta in columns.items() if meta.part == 0}
    for name, spec in specs.items():
        key = (originals[name], json.dumps(spec, sort_keys=True))
        if key in companions:
            spec["cohort_column"] = companions[key]
    return specs


def recorded_shuffle(columns: Mapping[str, ReportMetadata]) -> dict[str, Any]:
    """What ``shuffle`` recorded on a frame's report columns: one record when every report
    column carries the same one, else none (a frame assembled from parts of several
    collections is not one shuffled collection)."""
    records = {json.dumps(meta.shuffled, sort_keys=True) for meta in columns.values()}
    if len(records) != 1:
        return {}
    return dict(next(iter(columns.values())).shuffled)


def with_shuffle(
    array: pa.Array | pa.ChunkedArray, metadata: ReportMetadata, record: Mapping[str, Any]
) -> pa.ExtensionArray:
    """A report column (any chunking; typed, or recorded by an earlier release as
    ``metadata``) typed to record the shuffle ``record``."""
    meta = ReportMetadata(metadata.spec, metadata.column, metadata.part, dict(record))
    storage = storage_of(array)
    if isinstance(storage, pa.ChunkedArray):
        storage = storage.combine_chunks()
    return as_reports(storage, meta)


def legacy_report_columns(
    record: Mapping[str, Any], columns: list[Any]
) -> dict[str, ReportMetadata]:
    """The report columns an earlier release recorded beside the data rather than in the
    column types (``{"mechanisms": {column: spec}, "shuffled": {...}}``: pandas ``attrs``
    restored from a Parquet file it wrote, the key-value metadata of a CLI file), for those of
    ``columns`` that are present."""
    specs = record.get("mechanisms") or {}
    shuffled = dict(record.get("shuffled") or {})
    out: dict[str, ReportMetadata] = {}
    if not isinstance(specs, Mapping):
        return out
    for column, spec in specs.items():
        if column not in columns or not isinstance(spec, Mapping):
            continue
        out[column] = ReportMetadata(dict(spec), str(column), 0, shuffled)
        cohort = spec.get("cohort_column")
        if isinstance(cohort, str) and cohort in columns:
            out[cohort] = ReportMetadata(dict(spec), str(column), 1, shuffled)
    return out


def _storage_type(kind: pa.DataType) -> pa.DataType:
    """The storage type of reports a mechanism declares as ``kind`` (see :func:`_storage`)."""
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if pa.types.is_fixed_size_binary(kind) or pa.types.is_binary(kind):
        return pa.large_binary()
    if pa.types.is_string(kind):
        return pa.large_string()
    return kind


def report_types(mechanism: Any, column: str, spec: Mapping[str, Any]) -> dict[str, ReportType]:
    """The types of the report columns ``mechanism`` writes for ``column`` under ``spec``
    (known before any report is drawn: a lazy plan's schema)."""
    return {
        name: ReportType(_storage_type(kind), ReportMetadata(dict(spec), str(column), part))
        for part, (name, kind) in enumerate(mechanism.report_columns(column).items())
    }


_register()


def refuse_reports(column: Any, metadata: ReportMetadata) -> None:
    """Refuse to privatize a column whose type says it holds reports already."""
    raise ParameterError(
        f"column {shown(column)}: already holds frameldp reports "
        f"({described(metadata.spec)}); privatizing them again would bias debias "
        "and release the column twice. Privatize the raw column instead"
    )


RELEASE_SEPARATOR = "+"
"""Joins the ids of the releases a stacked column holds (``"id1+id2"``)."""


def release_ids(spec: Mapping[str, Any]) -> list[str]:
    """The ids of the releases whose rows a column holds (none for reports written before
    release ids were recorded)."""
    recorded = spec.get("release")
    return sorted(str(recorded).split(RELEASE_SEPARATOR)) if recorded else []


def described(spec: Mapping[str, Any]) -> str:
    """``mechanism=..., epsilon=...`` of a recorded spec, for messages."""
    kind = spec.get("mechanism", "a mechanism")
    epsilon = spec.get("epsilon")
    return f"{kind}, epsilon={epsilon:.4g}" if isinstance(epsilon, float) else str(kind)
