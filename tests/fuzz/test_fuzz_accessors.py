"""Fuzz the ``.ldp`` accessors with odd frames, dtypes, domains, epsilons and options.

Each example builds a frame (pandas, polars, polars lazy), privatizes one column through one of
the entry points (``df.ldp.krr`` / ``rappor`` / ``privatize``, ``series.ldp.*``,
``pl.col(c).ldp.*`` in ``select``), optionally charged to a ledger, and requires either

* a :class:`frameldp.FrameLDPError` whose message is short (< 500 characters, no long value
  echoed) and names the column or the parameter, with nothing charged to the ledger; or
* a correct release: the caller's type, one report per row, the report dtype and width of the
  mechanism, every report a bucket of the domain, the other columns untouched, exactly one
  ledger entry, and a debiased table over the domain's buckets;

and, either way, the input frame (data, dtypes, index, attrs) and the domain object unchanged.
Any other exception (``KeyError``, ``OverflowError``, a polars or pyarrow error, ...) is a
defect and fails the test with its traceback. Two oracles make the checks sharper than "no
crash": :func:`must_fail` lists inputs that have to be refused (a bad epsilon, a set as the
domain, a null without ``nulls='category'``, ...) and :func:`must_succeed` recognizes plain
valid calls (string values inside a string domain, a moderate epsilon) that have to work.

The regression tests at the end are the defects the fuzzer found, each reduced to one call.
"""

from __future__ import annotations

import copy
import itertools
import math
import numbers
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd  # type: ignore[import-untyped,unused-ignore]
import polars as pl
import polars.testing
import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import frameldp
from frameldp import FrameLDPError
from frameldp.frames.report_type import ReportMetadata, ReportType

pytestmark = pytest.mark.slow

EXAMPLES = 600
"""Examples of the accessor fuzz (about 4 s on an idle 2-core machine when every example
passes, 8 s under load)."""

DEBIAS_EXAMPLES = 300
"""Examples of the fuzz of ``debias`` on made-up report columns (about 1 s)."""

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    # Shrink the first defect found only, without the slow "explain" phase: a run that finds
    # defects stays bounded too (the regression tests below list them one by one).
    report_multiple_bugs=False,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
)

FUZZ_DEBIAS = settings(FUZZ, max_examples=DEBIAS_EXAMPLES)

MESSAGE_LIMIT = 500
"""Longest acceptable error message."""

ECHO_LIMIT = 60
"""A value longer than this must not appear whole in an error message (frameldp quotes 40)."""

HUGE = "h" * 1_000
SURROGATE = "\ud800"  # a Python str that is not valid UTF-8: Arrow cannot hold it
ODD_STRINGS = (
    "",
    " ",
    "a",
    "b",
    "A",
    "é",
    "e\u0301",
    "日本",
    "🙂",
    "\x00",
    "a\nb",
    "<other>",
    "None",
    "nan",
    "1",
    "True",
    HUGE,
    SURROGATE,
)

COLUMN = "x"
OTHER_COLUMN = "keep"
MISSING = "missing column"

LIBRARIES = ("pandas", "polars", "polars-lazy")
APIS = ("krr", "rappor", "privatize-krr", "privatize-rappor", "column-krr", "column-rappor")

VALID_UNKNOWN = (None, "raise", "other")
VALID_NULLS = (None, "raise", "category")

BAD_LEDGERS = (
    "no-budget",
    "unknown-budget",
    "tiny-budget",
    "int-name",
    "empty-name",
    "long-name",
    "missing-file",
    "directory",
)
"""Ledger keywords that must be refused: a ledger without ``budget=``, a budget never set, a
budget too small for any release, a budget name that is no string or empty, a ledger file that
does not exist (it must not be created), a directory."""

BAD_RANDOMNESS = ("short-key", "str-key", "key-and-seed", "float-seed", "bool-seed")
"""``key=`` / ``seed=`` that must be refused."""

PARAMETERS = (
    "epsilon",
    "domain",
    "unknown",
    "nulls",
    "max_weight",
    "f ",
    "f=",
    "f must",
    "ledger",
    "budget",
    "mechanism",
    "key",
    "seed",
)
"""Words of which an error message must hold one when it does not name the column."""


# -- strategies ----------------------------------------------------------------------------------

strings = st.one_of(st.sampled_from(ODD_STRINGS), st.text(max_size=4))
small_ints = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([2**31, 2**63 - 1, -(2**63), 2**63, 2**64, 10**30]),
)
floats = st.one_of(
    st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.0, 0.1, math.nan, math.inf, -math.inf, 1e308]),
    st.floats(),
)
scalars = st.one_of(strings, small_ints, floats, st.booleans())
odd_objects = st.one_of(
    st.none(),
    st.binary(max_size=3),
    st.lists(st.sampled_from(["a", "b", "c"]), max_size=3),
    st.tuples(st.just("a")),
    st.just(Decimal("1.5")),
    st.just(np.int64(1)),
    st.just(np.str_("a")),
    st.just(pd.NA),
    st.just(pd.NaT),
)

KINDS: dict[str, st.SearchStrategy[Any]] = {
    "str": strings,
    "int": small_ints,
    "float": floats,
    "bool": st.booleans(),
    "mixed": st.one_of(scalars, odd_objects),
    "null": st.none(),
}

PANDAS_DTYPES: dict[str, list[Any]] = {
    "str": [None, object, "string[pyarrow]", "string[python]", "category", "categorical+"],
    "int": [None, "int64", "int8", "uint64", "Int64", "float32", "category", object],
    "float": [None, "float64", "float32", "Float64", "category", object],
    "bool": [None, "bool", "boolean", "category", object],
    "mixed": [None, object],
    "null": [None, object, "float64", "Int64", "string[pyarrow]", "category"],
}
"""pandas dtypes per value kind; ``categorical+`` is a CategoricalDtype with an unused extra
category (None: let pandas infer)."""

POLARS_DTYPES: dict[str, list[Any]] = {
    "str": [None, pl.String, pl.Categorical, "enum", "enum+"],
    "int": [None, pl.Int64, pl.Int8, pl.UInt64, pl.Float32],
    "float": [None, pl.Float64, pl.Float32],
    "bool": [None, pl.Boolean],
    "mixed": [None, pl.Object],
    "null": [None, pl.String, pl.Int64, pl.Null],
}
"""polars dtypes per value kind; ``enum`` is an Enum of the values, ``enum+`` with an extra one."""

EPSILONS = (
    0,
    0.0,
    -1.0,
    -0.0,
    math.nan,
    math.inf,
    -math.inf,
    1e-300,
    5e-324,
    10**400,
    -(10**400),
    "1",
    "",
    None,
    True,
    [1.0],
    1j,
    np.float64(1.0),
    np.float32(0.5),
    np.int64(2),
    np.float16(3.0),
    np.nan,
    Decimal("1.5"),
    Decimal("NaN"),
    Fraction(1, 2),
    1,
    2.5,
    90.0,
    1e308,
)


def mostly(valid: st.SearchStrategy[Any], odd: st.SearchStrategy[Any], odds: int = 8) -> Any:
    """``valid``, except one time in ``odds`` ``odd`` (shrinking towards ``valid``): each
    parameter is usually valid, so that most examples get past the first check."""
    return st.integers(0, odds - 1).flatmap(lambda i: odd if i == odds - 1 else valid)


valid_epsilons = st.one_of(
    st.floats(0.1, 10.0),
    st.sampled_from([1, 2, np.float64(1.0), np.float32(0.5), np.int64(2), Fraction(1, 2)]),
)
epsilons = mostly(valid_epsilons, st.one_of(st.sampled_from(EPSILONS), st.floats()), 6)
fs = mostly(st.none(), st.sampled_from([0.5, 1.0, 0.0, 1.5, -0.5, math.nan, "0.5", 10**400]))
max_weights = mostly(st.just(1), st.sampled_from([2, 0, -1, 1.5, True, 10**400, "2"]))
unknowns = mostly(
    st.sampled_from(VALID_UNKNOWN),
    st.sampled_from(["drop", "", "OTHER", 0, False, ["other"], "other ", np.str_("other")]),
)
nulls_options = mostly(
    st.sampled_from(VALID_NULLS),
    st.sampled_from(["drop", "", "Category", {}, False, 1, ("category",), np.str_("category")]),
)
domain_shapes = mostly(
    st.sampled_from(["list", "list", "list", "list", "tuple", "dtype", "array", "infer"]),
    st.sampled_from(
        [
            "duplicates",
            "with-none",
            "with-nan",
            "mixed",
            "floats",
            "set",
            "frozenset",
            "dict",
            "empty",
            "one",
            "string",
            "none",
            "int",
            "nested",
        ]
    ),
    4,
)
LONG_NAME = "n" * 600
names = mostly(st.just(COLUMN), st.sampled_from(["é 🙂", "", 0, 1.5, ("a", 1), True, LONG_NAME]), 4)
ledger_kinds = mostly(
    st.sampled_from(["none", "none", "object", "path"]), st.sampled_from(BAD_LEDGERS)
)
randomness_kinds = mostly(
    st.sampled_from(["none", "none", "none", "key", "seed", "negative-seed", "huge-seed"]),
    st.sampled_from(BAD_RANDOMNESS),
)
RANDOMNESS: dict[str, dict[str, Any]] = {
    "none": {},
    "key": {"key": bytes(range(32))},
    "seed": {"seed": 7},
    "negative-seed": {"seed": -7},
    "huge-seed": {"seed": 2**200},
    "short-key": {"key": bytes(31)},
    "str-key": {"key": "k" * 32},
    "key-and-seed": {"key": bytes(32), "seed": 7},
    "float-seed": {"seed": 7.0},
    "bool-seed": {"seed": True},
}


@dataclass(frozen=True)
class Case:
    """One fuzzed call (the frame is built from it in the test body)."""

    library: str
    api: str
    kind: str
    values: list[Any]
    dtype: Any
    name: Any
    duplicate: bool
    index: str
    shape: str
    domain: Any
    epsilon: Any
    f: Any
    max_weight: Any
    unknown: Any
    nulls: Any
    target: Any
    ledger: str
    randomness: str

    @property
    def rappor(self) -> bool:
        return self.api.endswith("rappor")

    @property
    def column_api(self) -> bool:
        return self.api.startswith("column")


def _hashable_scalars(values: list[Any]) -> list[Any]:
    """The distinct str/int/float/bool values (the domain's candidates), in first-seen order."""
    out: list[Any] = []
    for value in values:
        if isinstance(value, str | int | float | bool) and value not in out:
            out.append(value)
    return out


@st.composite
def domains(
    draw: st.DrawFn, values: list[Any], dtype: Any, same_kind: st.SearchStrategy[Any]
) -> tuple[str, Any]:
    """A domain shaped ``shape`` around the column's values (so that some calls succeed)."""
    present = _hashable_scalars(values)
    # Enough categories for two buckets, rarely of another kind than the values.
    extra = draw(
        st.lists(mostly(same_kind, scalars, 16), min_size=max(0, 2 - len(present)), max_size=3)
    )
    categories = draw(st.permutations(present)) if present else []
    categories = _hashable_scalars([*categories, *extra])
    shape = draw(domain_shapes)
    if shape == "dtype":
        if isinstance(dtype, pd.CategoricalDtype | pl.Enum):
            return shape, dtype
        shape = "list"
    if shape == "list":
        return shape, categories
    if shape == "tuple":
        return shape, tuple(categories)
    if shape == "duplicates":
        return shape, [*categories, *categories[:1]] if categories else ["a", "a"]
    if shape == "with-none":
        return shape, [*categories, None]
    if shape == "with-nan":
        return shape, [*categories, math.nan]
    if shape == "mixed":
        return shape, [*categories, "a", 1]
    if shape == "floats":
        return shape, [float(v) for v in range(3)] + [2.5]
    if shape in ("set", "frozenset"):
        return shape, {"set": set, "frozenset": frozenset}[shape](categories or ["a", "b"])
    if shape == "dict":
        return shape, dict.fromkeys(categories or ["a", "b"], 1)
    if shape == "empty":
        return shape, []
    if shape == "one":
        return shape, categories[:1]
    if shape == "string":
        return shape, draw(st.sampled_from(["ab", "", "a,b", HUGE]))
    if shape == "infer":
        return shape, "infer"
    if shape == "none":
        return shape, None
    if shape == "int":
        return shape, draw(st.sampled_from([5, 0, 10**400, math.nan]))
    if shape == "array":
        return shape, np.array(categories or ["a", "b"])
    return shape, [[v] for v in categories] or [["a"], ["b"]]  # nested


@st.composite
def cases(draw: st.DrawFn) -> Case:
    library = draw(st.sampled_from(LIBRARIES))
    api = draw(st.sampled_from(APIS))
    kind = draw(st.sampled_from(list(KINDS)))
    element = KINDS[kind]
    if kind == "str":  # a few distinct values, so that domains can cover them
        element = st.sampled_from(draw(st.lists(strings, min_size=1, max_size=4)))
    if draw(mostly(st.just(False), st.just(True), 4)):
        element = st.one_of(element, st.none())
    values = draw(st.lists(element, max_size=8))
    dtypes = PANDAS_DTYPES if library == "pandas" else POLARS_DTYPES
    dtype = draw(st.sampled_from(dtypes[kind]))
    name = draw(names)
    if library != "pandas":
        name = str(name)
    same_kind = KINDS[kind] if kind in ("str", "int", "float", "bool") else strings
    shape, domain = draw(domains(values, dtype, same_kind))
    column_api = api.startswith("column")
    # A Series or an expression of a missing or duplicated column is the test's own mistake.
    target = name if column_api else draw(mostly(st.just(name), st.just(MISSING)))
    duplicate = (
        library == "pandas" and not column_api and draw(mostly(st.just(False), st.just(True)))
    )
    epsilon, f = draw(epsilons), None
    if api.endswith("rappor"):
        f = draw(fs)
        if f is not None and draw(mostly(st.just(True), st.just(False), 4)):
            epsilon = None
    return Case(
        library=library,
        api=api,
        kind=kind,
        values=values,
        dtype=dtype,
        name=name,
        duplicate=duplicate,
        index=draw(st.sampled_from(["default", "reversed", "duplicates", "strings"])),
        shape=shape,
        domain=domain,
        epsilon=epsilon,
        f=f,
        max_weight=draw(max_weights) if api.endswith("rappor") else None,
        unknown=draw(unknowns),
        nulls=draw(nulls_options),
        target=target,
        ledger=draw(ledger_kinds),
        randomness=draw(randomness_kinds),
    )


# -- building frames -----------------------------------------------------------------------------


def _pandas_series(values: list[Any], dtype: Any, name: Any) -> Any:
    if dtype == "categorical+":
        present = [v for v in _hashable_scalars(values) if isinstance(v, str)]
        dtype = pd.CategoricalDtype([*present, "unused category"])
    try:
        return pd.Series(values, dtype=dtype, name=name)
    except (TypeError, ValueError, OverflowError):  # values the dtype cannot hold: keep objects
        return pd.Series(values, dtype=object, name=name)


def _pandas_index(size: int, index: str) -> Any:
    if index == "reversed":
        return pd.RangeIndex(size, 0, -1)
    if index == "duplicates":
        return pd.Index([0] * size)
    if index == "strings":
        return pd.Index([f"row {i}" for i in range(size)])
    return pd.RangeIndex(size)


def _polars_series(values: list[Any], dtype: Any, name: str) -> pl.Series | None:
    if dtype in ("enum", "enum+"):
        present = [v for v in _hashable_scalars(values) if isinstance(v, str)]
        dtype = pl.Enum(present + (["unused category"] if dtype == "enum+" else []))
    loose = ({"dtype": dtype}, {"dtype": dtype, "strict": False}, {"dtype": pl.Object})
    for options in loose:
        try:
            return pl.Series(name, values, **options)
        except Exception:  # the test cannot build this column in polars: try a looser way
            continue
    return None


def build(case: Case) -> Any:
    """The native input frame of ``case`` (None when polars cannot hold its values)."""
    size = len(case.values)
    if case.library == "pandas":
        frame = pd.DataFrame(
            {
                "a": _pandas_series(case.values, case.dtype, case.name),
                "b": pd.Series(range(size), dtype="int64"),
            }
        )
        labels = [case.name, case.name if case.duplicate else OTHER_COLUMN]
        frame.columns = pd.Index(labels, dtype=object)
        frame.index = _pandas_index(size, case.index)
        frame.attrs = {"owner": ["fuzz"]}
        return frame
    series = _polars_series(case.values, case.dtype, case.name)
    if series is None:
        return None
    # A dict keeps an empty column name (a list of Series would rename it "column_0").
    frame = pl.DataFrame({case.name: series, OTHER_COLUMN: pl.Series(range(size), dtype=pl.Int64)})
    return frame.lazy() if case.library == "polars-lazy" else frame


def _eager(native: Any) -> Any:
    return native.collect() if isinstance(native, pl.LazyFrame) else native


def snapshot(native: Any) -> Any:
    """A deep copy of the input to compare with after the call."""
    if isinstance(native, pd.DataFrame | pd.Series):
        return pickle.loads(pickle.dumps(native))
    return _eager(native).clone()


def assert_unchanged(before: Any, native: Any) -> None:
    """The input still equals its snapshot: data, dtypes, labels, index and attrs."""
    if isinstance(native, pd.DataFrame | pd.Series):
        assert native.attrs == before.attrs
        if isinstance(native, pd.DataFrame):
            pd.testing.assert_frame_equal(native, before, check_exact=True)
        else:
            pd.testing.assert_series_equal(native, before, check_exact=True)
        return
    after = _eager(native)
    assert after.schema == before.schema
    for name in before.columns:
        if before.schema[name] == pl.Object:  # polars cannot compare Object columns itself
            assert _same(after[name].to_list(), before[name].to_list())
        else:
            polars.testing.assert_series_equal(after[name], before[name])


def _same(left: list[Any], right: list[Any]) -> bool:
    """Equal lists of Python objects, NaN equal to itself, types compared too."""
    return len(left) == len(right) and all(
        type(a) is type(b) and (a is b or a == b or (a != a and b != b))
        for a, b in zip(left, right, strict=True)
    )


# -- oracles -------------------------------------------------------------------------------------


def _real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def _valid_epsilon(value: Any) -> bool:
    """A finite positive real number (realizability aside; a Decimal may go either way)."""
    if isinstance(value, Decimal):
        return value.is_finite() and value > 0
    try:
        return _real(value) and 0 < float(value) < math.inf
    except (OverflowError, ValueError):
        return False


def _null(value: Any) -> bool:
    """What pandas takes for a missing value (polars: None only)."""
    nan = isinstance(value, float) and math.isnan(value)
    return value is None or value is pd.NA or value is pd.NaT or nan


def _categories(case: Case) -> list[Any] | None:
    """The domain's categories when it is a list-like the library must accept as such."""
    if case.shape in ("list", "tuple", "one", "empty", "duplicates", "with-none", "mixed"):
        return list(case.domain)
    return None


def _domain_problem(case: Case) -> str | None:
    """Why the domain must be refused, if it must."""
    if case.shape in ("set", "frozenset", "dict", "string", "none", "int", "nested"):
        return f"a {case.shape} is not a domain"
    if case.shape in ("duplicates", "with-none", "with-nan", "mixed"):
        return f"a domain with {case.shape}"
    if case.shape == "infer" and case.column_api and case.library != "pandas":
        return "an expression has no data to infer from"
    categories = _categories(case)
    if categories is not None:
        plain = [v.item() if isinstance(v, np.generic) else v for v in categories]
        kinds = {_scalar_kind(v) for v in plain}
        if None in kinds:
            return "a category that is not a str, int, float or bool (or is NaN)"
        if len(kinds) > 1:
            return "categories of several kinds"
        if any(plain[i] in plain[:i] for i in range(len(plain))):
            return "duplicate categories"
        reserved = (case.unknown == "other") + (case.nulls == "category")
        if len(plain) + reserved < 2:
            return "fewer than 2 buckets"
    return None


def _scalar_kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "str"
    if isinstance(value, int | float) and value == value:
        return "number"
    return None


@dataclass(frozen=True)
class Column:
    """The privatized column as built (a dtype may have changed the drawn values)."""

    values: list[Any]
    nulls: bool
    """Whether the column holds a null (pandas: NaN too; polars: a null, not NaN)."""


def column_of(case: Case, before: Any) -> Column:
    """The facts the oracles need about the input column."""
    if case.library == "pandas":
        series = before.iloc[:, 0]
        return Column(series.tolist(), bool(series.isna().any()))
    series = before[case.name]
    if series.dtype == pl.Object:  # polars cannot say which Python objects are nulls
        return Column(series.to_list(), False)
    return Column(series.to_list(), series.null_count() > 0)


def must_fail(case: Case, column: Column) -> str | None:
    """Why ``case`` has to be refused (None when it may succeed)."""
    if case.target == MISSING:
        return "the column does not exist"
    if case.unknown not in VALID_UNKNOWN:
        return f"unknown={case.unknown!r}"
    if case.nulls not in VALID_NULLS:
        return f"nulls={case.nulls!r}"
    if case.rappor:
        if case.epsilon is None and case.f is None:
            return "neither epsilon nor f"
        if case.epsilon is not None and case.f is not None:
            return "both epsilon and f"
        if case.f is not None and not (_real(case.f) and 0 < case.f <= 1):
            return f"f={case.f!r}"
        if case.epsilon is not None and not _valid_epsilon(case.epsilon):
            return f"epsilon={case.epsilon!r}"
        weight = case.max_weight
        if weight is not True and not (isinstance(weight, int) and weight >= 1):
            return f"max_weight={weight!r}"
    elif not _valid_epsilon(case.epsilon):
        return f"epsilon={case.epsilon!r}"
    problem = _domain_problem(case)
    if problem:
        return problem
    if case.ledger in BAD_LEDGERS:
        return f"ledger: {case.ledger}"
    if case.randomness in BAD_RANDOMNESS:
        return f"randomness: {case.randomness}"
    if case.randomness != "none" and case.column_api and case.library != "pandas":
        return "key= or seed= on an expression"
    if column.nulls and case.nulls != "category":
        return "a null without nulls='category'"
    categories = _categories(case)
    if (
        case.kind == "str"
        and case.unknown != "other"
        and categories is not None
        and all(isinstance(c, str) for c in categories)
        and any(isinstance(v, str) and v not in categories for v in column.values)
    ):
        return "a string outside the domain"
    return None


def must_succeed(case: Case, column: Column) -> bool:
    """Whether ``case`` is a plain valid call: values that are strings in a list of distinct
    string categories (a surrogate is no UTF-8 string), a moderate epsilon, valid options and
    a well-formed ledger."""
    categories = _categories(case)
    texts = [*column.values, *(categories or [])]
    if (
        must_fail(case, column) is not None
        or case.kind != "str"
        or case.dtype is pl.Object
        or case.duplicate
        or categories is None
        or not all(isinstance(v, str) and SURROGATE not in v for v in texts if not _null(v))
        or (case.unknown == "other" and "<other>" in categories)
    ):
        return False
    if case.rappor and (case.f is not None or case.max_weight != 1):
        return False
    return _real(case.epsilon) and 0.05 <= float(case.epsilon) <= 20.0


# -- calling -------------------------------------------------------------------------------------

_ledgers = itertools.count()


@dataclass
class Ledgered:
    """The ledger keywords of a case, and where to look for what was charged or created."""

    keywords: dict[str, Any]
    ledger: frameldp.Ledger | None
    budget: str
    absent: Path | None = None
    """A ledger file that does not exist and must not be created."""

    def entries(self) -> int:
        if self.ledger is None:
            return 0
        try:
            return len(self.ledger.history(self.budget))
        except frameldp.UnknownBudgetError:
            return 0


def ledgered(case: Case, folder: Path) -> Ledgered:
    """A fresh ledger file holding one budget, passed as the case says."""
    path = folder / f"ledger-{next(_ledgers)}.sqlite"
    if case.ledger == "none":
        return Ledgered({}, None, "")
    if case.ledger == "missing-file":
        return Ledgered({"ledger": str(path), "budget": "fuzz"}, None, "", absent=path)
    if case.ledger == "directory":
        return Ledgered({"ledger": str(folder), "budget": "fuzz"}, None, "")
    ledger = frameldp.Ledger(path)
    budget = "fuzz"
    ledger.set_budget(budget, epsilon=1e-9 if case.ledger == "tiny-budget" else 1e9)
    if case.ledger == "no-budget":
        return Ledgered({"ledger": ledger}, ledger, budget)
    names = {"unknown-budget": "never set", "int-name": 123, "empty-name": "", "long-name": HUGE}
    given = str(path) if case.ledger == "path" else ledger
    return Ledgered({"ledger": given, "budget": names.get(case.ledger, budget)}, ledger, budget)


def _rappor_keywords(case: Case) -> dict[str, Any]:
    return {
        "f": case.f,
        "max_weight": case.max_weight,
        "domain": case.domain,
        "unknown": case.unknown,
        "nulls": case.nulls,
    }


def _mechanism(case: Case) -> Any:
    """The mechanism object that ``privatize-*`` passes (its errors are the user's too)."""
    domain = frameldp.Domain.coerce(case.domain, unknown=case.unknown, nulls=case.nulls)
    if case.rappor:
        return frameldp.Rappor(case.epsilon, f=case.f, domain=domain, max_weight=case.max_weight)
    return frameldp.RandomizedResponse(case.epsilon, domain=domain)


def call(case: Case, native: Any, keywords: dict[str, Any]) -> Any:
    """Run the case's entry point; a LazyFrame result is collected (that is the release)."""
    if case.column_api:
        method = "rappor" if case.rappor else "krr"
        options = (
            _rappor_keywords(case)
            if case.rappor
            else {"domain": case.domain, "unknown": case.unknown, "nulls": case.nulls}
        )
        if case.library == "pandas":
            series = native[case.target]
            return getattr(series.ldp, method)(case.epsilon, **options, **keywords)
        column: Any = pl.col(case.target)
        expression = getattr(column.ldp, method)(case.epsilon, **options, **keywords)
        return _eager(native.select(expression))
    if case.api.startswith("privatize"):
        out = native.ldp.privatize({case.target: _mechanism(case)}, **keywords)
    elif case.rappor:
        out = native.ldp.rappor(case.target, case.epsilon, **_rappor_keywords(case), **keywords)
    else:
        out = native.ldp.krr(
            case.target,
            case.epsilon,
            domain=case.domain,
            unknown=case.unknown,
            nulls=case.nulls,
            **keywords,
        )
    if isinstance(native, pl.LazyFrame):
        assert type(out) is pl.LazyFrame
        plan: Any = out
        mechanism = plan.ldp.mechanisms[case.target]  # known for the plan, not for its collect
        return _eager(plan), mechanism
    return out


# -- checks --------------------------------------------------------------------------------------


def _long_values(case: Case) -> Iterator[str]:
    names = [case.name, HUGE if case.ledger == "long-name" else None]
    for value in [*case.values, *(_categories(case) or []), case.domain, case.epsilon, *names]:
        if isinstance(value, str) and len(value) > ECHO_LIMIT:
            yield value
    if isinstance(case.epsilon, int) and len(str(case.epsilon)) > ECHO_LIMIT:
        yield str(case.epsilon)


POLARS_CONTEXT = "\n\nThis error occurred in the following expression:"


def check_message(case: Case, error: FrameLDPError) -> None:
    """Short, names the column or a parameter, never echoes a long value whole.

    polars appends the expression an error came from to any error raised inside one; for a
    privatizing expression that context shows the report type (the spec, domain included).
    That part is polars' (documented in docs/guide.md); frameldp's own message is checked."""
    message = str(error).split(POLARS_CONTEXT)[0]
    assert len(message) < MESSAGE_LIMIT, (len(message), message[:1000])
    for value in _long_values(case):
        assert value[: ECHO_LIMIT + 1] not in message, message[:1000]
    named = repr(case.target)[: ECHO_LIMIT // 2] in message  # a long name may be cut short
    assert named or any(word in message for word in PARAMETERS), message


def _labels(mechanism: Any) -> list[Any]:
    return list(mechanism.domain.labels)


def _report_column(out: Any, case: Case) -> Any:
    if isinstance(out, pd.Series):
        return out
    return out[case.target]


def check_release(case: Case, before: Any, out: Any, mechanism: Any) -> None:
    """A correct release of ``case``: see the module docstring."""
    rows = len(before)
    if case.column_api and case.library != "pandas":
        assert out.columns == [case.target], "the expression renamed the column"
    reports = _report_column(out, case)
    assert len(out) == rows
    if case.library == "pandas":
        expected_type = pd.Series if case.column_api else pd.DataFrame
        assert type(out) is expected_type
        pd.testing.assert_index_equal(out.index, before.index)
        if not case.column_api:
            assert list(out.columns) == list(before.columns)
            pd.testing.assert_series_equal(out[OTHER_COLUMN], before[OTHER_COLUMN])
    else:
        assert type(out) is pl.DataFrame
        if not case.column_api:
            assert out.columns == before.columns
            polars.testing.assert_series_equal(out[OTHER_COLUMN], before[OTHER_COLUMN])
    labels = _labels(mechanism)
    values = reports.tolist() if isinstance(reports, pd.Series) else reports.to_list()
    storage = _report_storage(reports)
    assert storage.metadata.spec == recorded_mechanism(case, out).to_spec() | _marks(storage)
    if isinstance(mechanism, frameldp.Rappor):
        width = -(-mechanism.num_bits // 8)
        assert storage.type == pa.large_binary()
        assert all(isinstance(v, bytes) and len(v) == width for v in values), values[:3]
    else:
        # Reports are the buckets' own labels, stored as values of the labels' type (none
        # rounded onto another).
        kinds = {type(c) for c in labels if c is not None}
        if kinds == {str}:
            assert storage.type == pa.large_string()
        values = [None if _null(v) else v for v in values]
        assert all(v in labels for v in values), (values[:3], labels)
    if case.shape != "infer" and not case.api.startswith("privatize"):
        domain = frameldp.Domain.coerce(case.domain, unknown=case.unknown, nulls=case.nulls)
        assert _labels(mechanism) == list(domain.labels)
    check_debias(case, out, mechanism, rows)


def check_debias(case: Case, out: Any, mechanism: Any, rows: int) -> None:
    """The reports debias into a table over the mechanism's buckets (or, without reports, a
    frameldp error)."""
    error: FrameLDPError | None = None
    try:
        if isinstance(out, pd.Series):
            table = out.ldp.debias()
        elif case.column_api or case.library == "polars-lazy":
            table = out.ldp.debias(case.target, mechanism)
        else:
            table = out.ldp.debias(case.target)
    except FrameLDPError as caught:
        error = caught
    if error is not None:
        # Without reports, or from pure noise (f = 1), there is nothing to estimate.
        assert rows == 0 or mechanism.privacy.epsilon == 0, error
        check_message(case, error)
        return
    assert table.n == rows
    assert len(table.frame) == len(_labels(mechanism))
    assert table.mechanism.to_spec() == mechanism.to_spec()


@dataclass(frozen=True)
class _Storage:
    type: pa.DataType
    metadata: ReportMetadata


def _report_storage(reports: Any) -> _Storage:
    """The storage type and the recorded metadata of a report column (pandas or polars),
    which must be of the report type."""
    if isinstance(reports, pd.Series):
        assert isinstance(reports.dtype, pd.ArrowDtype), reports.dtype
        kind = reports.dtype.pyarrow_dtype
        assert isinstance(kind, ReportType), kind
        return _Storage(kind.storage_type, kind.metadata)
    assert isinstance(reports.dtype, pl.BaseExtension), reports.dtype
    assert reports.dtype.ext_name() == "frameldp.reports"
    storage = pl.Series([], dtype=reports.dtype.ext_storage()).to_arrow().type
    return _Storage(storage, ReportMetadata.from_json(reports.dtype.ext_metadata()))


def _marks(storage: _Storage) -> dict[str, Any]:
    """What a release adds to a mechanism's spec (a seed, a memo)."""
    marks = ("seeded", "memo", "release", "rows", "rows_per_user", "fingerprint")
    return {k: v for k, v in storage.metadata.spec.items() if k in marks}


def recorded_mechanism(case: Case, out: Any) -> Any:
    """The mechanism recorded with the release (the caller's for an expression)."""
    if isinstance(out, pd.Series):
        return frameldp.mechanism_from_spec(_report_storage(out).metadata.spec)
    if case.column_api:
        return _mechanism(case)
    return out.ldp.mechanisms[case.target]


# -- the fuzz tests ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the examples' ledger files (one per example)."""
    return tmp_path_factory.mktemp("ledgers")


def run_case(case: Case, ledgers: Path) -> None:
    """Call, then check the outcome (see the module docstring)."""
    native = build(case)
    if native is None:
        return  # polars cannot build such a column: nothing to privatize
    before = snapshot(native)
    domain = copy.deepcopy(case.domain)
    ledger = ledgered(case, ledgers)
    keywords = {**ledger.keywords, **RANDOMNESS[case.randomness]}
    column = column_of(case, before)
    required_failure = must_fail(case, column)
    error: FrameLDPError | None = None
    try:
        out = call(case, native, keywords)
    except FrameLDPError as caught:
        error = caught
    finally:
        assert_unchanged(before, native)
        if not isinstance(case.domain, np.ndarray):
            assert case.domain == domain or case.domain != case.domain, "the domain was modified"
    if error is not None:
        check_message(case, error)
        assert not must_succeed(case, column), f"a valid call was refused: {error}"
        assert ledger.entries() == 0, "a failed call was charged"
        assert ledger.absent is None or not ledger.absent.exists(), "a ledger file was created"
    else:
        assert required_failure is None, f"accepted although {required_failure}"
        out, mechanism = out if isinstance(out, tuple) else (out, recorded_mechanism(case, out))
        check_release(case, before, out, mechanism)
        assert ledger.entries() == (0 if case.ledger == "none" else 1)


@pytest.mark.filterwarnings("ignore::frameldp.DomainInferenceWarning")
@FUZZ
@given(case=cases())
def test_accessors_refuse_or_release_correctly(case: Case, ledgers: Path) -> None:
    """Every entry point, on odd frames, domains, epsilons, options and ledgers."""
    run_case(case, ledgers)


# -- debias of report columns the caller made up ---------------------------------------------------


@dataclass(frozen=True)
class Reports:
    """A column that claims to hold reports of ``mechanism`` (rarely all valid ones)."""

    library: str
    rappor: bool
    labels: list[str]
    unknown: str
    nulls: str
    epsilon: float
    values: list[Any]
    level: Any
    given: bool
    """Whether the mechanism is passed to ``debias`` (else none is recorded: must fail)."""

    def mechanism(self) -> Any:
        domain = frameldp.Domain(tuple(self.labels), self.unknown, self.nulls)  # type: ignore[arg-type]
        if self.rappor:
            return frameldp.Rappor(self.epsilon, domain=domain)
        return frameldp.RandomizedResponse(self.epsilon, domain=domain)

    def valid(self, value: Any) -> bool:
        """Whether ``value`` is a report the mechanism can produce."""
        mechanism = self.mechanism()
        if not self.rappor:  # a null reports the null bucket
            return value in mechanism.domain.as_reported().labels
        k = mechanism.num_bits
        if not isinstance(value, bytes) or len(value) != -(-k // 8):
            return False
        bits = np.unpackbits(np.frombuffer(value, dtype=np.uint8))
        return not bits[k:].any()  # padding bits are zero


@st.composite
def report_columns(draw: st.DrawFn) -> Reports:
    rappor = draw(st.booleans())
    plain = [s for s in ODD_STRINGS if s not in ("<other>", HUGE, SURROGATE)]
    labels = draw(st.lists(st.sampled_from(plain), min_size=2, max_size=9, unique=True))
    unknown = draw(st.sampled_from(["raise", "other"]))
    nulls = draw(st.sampled_from(["raise", "category"]))
    k = len(labels) + (unknown == "other") + (nulls == "category")
    reported = [*labels, *(["<other>"] if unknown == "other" else [])]
    valid = (
        st.lists(st.integers(0, 1), min_size=k, max_size=k).map(
            lambda bits: np.packbits(np.array(bits, dtype=np.uint8)).tobytes()
        )
        if rappor
        else st.sampled_from([*reported, *([None] if nulls == "category" else [])])
    )
    odd = st.one_of(st.none(), st.binary(max_size=3), strings, small_ints, st.just(b"\xff" * 2))
    element = mostly(valid, odd, 12)
    return Reports(
        library=draw(st.sampled_from(LIBRARIES)),
        rappor=rappor,
        labels=labels,
        unknown=unknown,
        nulls=nulls,
        epsilon=draw(st.floats(0.1, 10.0)),
        values=draw(st.lists(element, max_size=8)),
        level=draw(mostly(st.floats(0.01, 0.99), st.sampled_from(LEVELS))),
        given=draw(mostly(st.just(True), st.just(False), 12)),
    )


LEVELS = (0.0, 1.0, -0.5, 1.5, math.nan, math.inf, "0.95", None, 95)


def _report_frame(reports: Reports) -> Any:
    """The frame of ``reports`` (None when polars cannot hold the values)."""
    if reports.library == "pandas":
        kinds = {type(v) for v in reports.values if v is not None}
        dtype = pd.ArrowDtype(pa.binary()) if kinds == {bytes} else None
        return pd.DataFrame({COLUMN: _pandas_series(reports.values, dtype, COLUMN)})
    series = _polars_series(reports.values, None, COLUMN)
    if series is None:
        return None
    frame = series.to_frame()
    return frame.lazy() if reports.library == "polars-lazy" else frame


@FUZZ_DEBIAS
@given(reports=report_columns())
def test_debias_refuses_or_estimates(reports: Reports) -> None:
    """``debias`` of a column that may not hold reports: a frameldp error, or a table of every
    bucket over all rows; the column is unchanged either way."""
    native = _report_frame(reports)
    if native is None:
        return
    before = snapshot(native)
    mechanism = reports.mechanism()
    level = reports.level
    bad_level = not (_real(level) and 0 < level < 1)
    built = _eager(before)[COLUMN].to_list() if reports.library != "pandas" else before[COLUMN]
    values = [None if _null(v) else v for v in built]  # as built (polars may cast)
    valid = all(reports.valid(v) for v in values)
    try:
        table = native.ldp.debias(COLUMN, mechanism if reports.given else None, level=level)
    except FrameLDPError as error:
        message = str(error)
        assert len(message) < MESSAGE_LIMIT, message[:1000]
        assert repr(COLUMN) in message or "level" in message, message
        assert bad_level or not valid or not reports.values or not reports.given, message
    else:
        assert reports.given, "debias found a mechanism that was never recorded"
        assert not bad_level, f"accepted level={level!r}"
        assert valid, f"accepted reports the mechanism cannot produce: {values}"
        assert table.n == len(reports.values)
        assert len(table.frame) == len(mechanism.domain.labels)
    finally:
        assert_unchanged(before, native)


# -- defects the fuzzer found, one call each ---------------------------------------------------


EXPRESSION: Any = pl.col
"""``pl.col`` typed ``Any``: the ``.ldp`` namespace of expressions is registered at import."""


def native(library: str, data: dict[str, Any]) -> Any:
    """A pandas or polars frame of ``data`` (typed ``Any``: ``.ldp`` is registered at import)."""
    return pd.DataFrame(data) if library == "pandas" else pl.DataFrame(data)


def released_or_refused(make: Callable[[], Any]) -> Any:
    """``make()``, which may raise a frameldp error (returned then) and nothing else."""
    try:
        return make()
    except FrameLDPError as error:
        return error


@pytest.mark.parametrize(
    "option", [{"unknown": ""}, {"unknown": False}, {"unknown": 0}, {"nulls": ""}, {"nulls": {}}]
)
def test_a_falsy_policy_is_refused_not_taken_for_the_default(option: dict[str, Any]) -> None:
    """``unknown=""`` or ``nulls={}`` silently meant "raise" (``policy or "raise"``)."""
    frame = pd.DataFrame({COLUMN: ["a"]})
    with pytest.raises(frameldp.ParameterError, match=r"unknown|nulls"):
        frame.ldp.krr(COLUMN, 1.0, domain=["a", "b"], **option)


def test_an_int_beyond_int64_in_an_object_column_is_a_frameldp_error() -> None:
    """pandas object column of Python ints: was OverflowError from pyarrow."""
    frame = pd.DataFrame({COLUMN: [10**30]})
    released_or_refused(lambda: frame.ldp.krr(COLUMN, 1.0, domain=[10**30, 1]))


def test_a_polars_int128_column_is_a_frameldp_error_or_privatized() -> None:
    """polars infers Int128 for 10**30: was ArrowInvalid ('_pli128') from ``to_arrow``."""
    frame = native("polars", {COLUMN: [10**30]})
    released_or_refused(lambda: frame.ldp.krr(COLUMN, 1.0, domain=[10**30, 0]))


def test_polars_krr_with_an_int_category_beyond_int64() -> None:
    """The report column is built with the input's dtype: was TypeError from polars."""
    frame = native("polars", {COLUMN: pl.Series([1, 1], dtype=pl.Int8)})
    released_or_refused(lambda: frame.ldp.krr(COLUMN, 1.0, domain=[1, 10**30]))


@pytest.mark.parametrize("method", ["krr", "rappor"])
@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_a_release_over_an_int_category_beyond_int64_debiases(library: str, method: str) -> None:
    """privatize accepts the domain, so its own reports must debias: was OverflowError (pandas
    k-RR) and TypeError (polars table)."""
    privatize = getattr(native(library, {COLUMN: [1, 0]}).ldp, method)
    reports = released_or_refused(lambda: privatize(COLUMN, 1.0, domain=[1, 0, 10**30]))
    if not isinstance(reports, FrameLDPError):
        assert reports.ldp.debias(COLUMN).n == 2


@pytest.mark.parametrize("library", ["pandas", "polars"])
@pytest.mark.parametrize("domain", [[0.5, 2**53, 2**53 + 1], [1.0, 2**63 - 1]])
def test_report_labels_equal_the_categories_exactly(library: str, domain: list[Any]) -> None:
    """A numeric domain mixing ints and floats: the report labels were rounded to float64, so
    2**53 and 2**53 + 1 merged (polars: silently; pandas: ValueError "categories must be
    unique") and 2**63 - 1 became 2**63."""
    frame = native(library, {COLUMN: [domain[0]] * 4})
    reports = released_or_refused(lambda: frame.ldp.krr(COLUMN, 1.0, domain=domain))
    if isinstance(reports, FrameLDPError):
        return
    column = reports[COLUMN]
    labels = (
        column.dtype.categories.tolist()
        if library == "pandas"
        else pl.Series(domain, dtype=column.dtype, strict=False).to_list()
    )
    assert all(a == b for a, b in zip(labels, domain, strict=True)), labels


def test_a_list_among_scalars_in_an_object_column_is_a_frameldp_error() -> None:
    """The error path itself failed: ``unique()`` of unhashable lists gave TypeError."""
    frame = pd.DataFrame({COLUMN: [["a"], 1]})
    released_or_refused(lambda: frame.ldp.rappor(COLUMN, 1.0, domain=[1, 2]))


@pytest.mark.parametrize(
    "make",
    [
        lambda: pd.DataFrame({COLUMN: ["a"]}).ldp.krr(COLUMN, 1.0, domain=["a", SURROGATE]),
        # object dtype: pandas' own default string dtype refuses the value when the frame is made
        lambda: pd.DataFrame({COLUMN: pd.Series([SURROGATE], dtype=object)}).ldp.krr(
            COLUMN, 1.0, domain=["a", "b"]
        ),
        lambda: native("polars", {COLUMN: ["a"]}).select(
            EXPRESSION(COLUMN).ldp.krr(1.0, domain=["a", SURROGATE])
        ),
    ],
    ids=["pandas-domain", "pandas-value", "polars-expression-domain"],
)
def test_a_string_that_is_not_utf8_is_a_frameldp_error(make: Callable[[], Any]) -> None:
    """A lone surrogate: was UnicodeEncodeError (and TypeError "function takes exactly 5
    arguments" when polars re-raised it from an expression)."""
    released_or_refused(make)


def test_an_unknown_budget_error_is_short(tmp_path: Path) -> None:
    """The message quoted a long budget name whole and listed every budget of the ledger."""
    ledger = frameldp.Ledger(tmp_path / "budget.sqlite")
    for i in range(50):
        ledger.set_budget(f"nightly-release-{i:03d}", epsilon=1.0)
    frame = pd.DataFrame({COLUMN: ["a"]})
    for budget in ("n" * 5000, "nightly-release"):
        with pytest.raises(frameldp.UnknownBudgetError) as caught:
            frame.ldp.krr(COLUMN, 1.0, domain=["a", "b"], ledger=ledger, budget=budget)
        assert len(str(caught.value)) < MESSAGE_LIMIT, len(str(caught.value))


def test_a_long_column_label_is_quoted_short() -> None:
    """Errors prefixed with ``column {column!r}:`` quoted a 600-character label whole (the
    "not found" error already quotes it short)."""
    frame = pd.DataFrame({LONG_NAME: ["z"]})
    with pytest.raises(frameldp.DomainError) as caught:
        frame.ldp.krr(LONG_NAME, 1.0, domain=["a", "b"])
    assert len(str(caught.value)) < MESSAGE_LIMIT, len(str(caught.value))


def test_an_expression_keeps_an_empty_column_name() -> None:
    """``pl.col("")`` came back as a column named "reports" (an empty name is a name)."""
    frame = native("polars", {"": ["a", "b"]})
    out = frame.select(EXPRESSION("").ldp.krr(1.0, domain=["a", "b"]))
    assert out.columns == [""]


def test_duplicate_column_labels_are_a_frameldp_error() -> None:
    """pandas frame with two columns named "x": was KeyError(0) (fixed in the tree while the
    fuzz suite was written; kept as a regression test)."""
    frame = pd.DataFrame([[1, 2]], columns=[COLUMN, COLUMN])
    for method in ("krr", "rappor"):
        with pytest.raises(FrameLDPError, match=repr(COLUMN)):
            getattr(frame.ldp, method)(COLUMN, 1.0, domain=[1, 2])


def test_a_string_among_rappor_reports_is_refused() -> None:
    """An object column of report bytes holding a str: pyarrow read "4" as its UTF-8 bytes and
    ``debias`` counted it as a report (a value is never converted, elsewhere in frameldp)."""
    frame = pd.DataFrame({COLUMN: pd.Series([b"\x80", "4"], dtype=object)})
    mechanism = frameldp.Rappor(1.0, domain=frameldp.Domain(tuple("abcdefg")))
    with pytest.raises(FrameLDPError):
        frame.ldp.debias(COLUMN, mechanism)
