"""Fuzz ``frameldp privatize`` (and ``frameldp estimate`` of what it wrote) in process.

Each example writes a small input (CSV or Parquet, sometimes no valid file at all), a domain
file (sometimes empty, binary, a single value, bad JSON...) or a ``--spec`` file, and runs the
command through typer's ``CliRunner`` with fuzzed options: mechanisms, epsilons as typed on a
command line (``nan``, ``1e400``, ``abc``), ``--unknown``, ``--nulls``, ``--keep``,
``--chunk-rows``, keys and seeds, ledgers, and odd outputs (a wrong suffix, a missing directory,
a directory in the way, the input itself, an older release to replace). It requires either

* exit status 0, a readable release holding one report per input row and only the report and
  ``--keep`` columns (a CSV with its sidecar), which ``frameldp estimate`` reads back, and one
  ledger entry; or
* exit status 1, nothing on standard output, one ``error: ...`` line on standard error (only
  ``warning:`` lines before it, and the indented list of a failed validation after it), no
  traceback, a short message that echoes no long value, and nothing written: no output, no
  sidecar, no temporary file, an older release left as it was, nothing charged;

and, either way, an input file that is byte for byte unchanged. An exception escaping the
command (``CliRunner`` records it) is a defect and is re-raised with its traceback.
"""

from __future__ import annotations

import itertools
import json
import math
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pyarrow.csv as pacsv  # type: ignore[import-untyped,unused-ignore]
import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import frameldp
from frameldp.cli import app

pytestmark = pytest.mark.slow

EXAMPLES = 90
"""Examples of the privatize fuzz: each runs the command once in process, and ``estimate`` on
success (about 4 s on an idle 2-core machine when every example passes)."""

ESTIMATE_EXAMPLES = 100
"""Examples of the fuzz of ``estimate`` on releases and files that are none (about 2 s)."""

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    # Shrink the first defect found only, without the slow "explain" phase.
    report_multiple_bugs=False,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
)

MESSAGE_LIMIT = 500
ECHO_LIMIT = 60

COLUMN = "c"
KEEP = "k"
MISSING = "nope"
HUGE = "h" * 1_000
TOKENS = ("AA", "DL", "UA", "WN", "é", "日本")
"""Values that every reader keeps as they are (no number, boolean or null spelling)."""
ODD_VALUES = ("", " ", "a,b", 'say "hi"', "a\nb", "NA", "null", "1", "True", "🙂", "<other>", HUGE)

UNSET = ("FRAMELDP_LEDGER", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")
"""Variables that would change what the commands print or which ledger they charge."""


def mostly(valid: st.SearchStrategy[Any], odd: st.SearchStrategy[Any], odds: int = 8) -> Any:
    """``valid``, except one time in ``odds`` ``odd`` (shrinking towards ``valid``)."""
    return st.integers(0, odds - 1).flatmap(lambda i: odd if i == odds - 1 else valid)


# -- what one example runs ----------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """One fuzzed ``frameldp privatize`` run (files are written from it in the test body)."""

    source: str  # "csv", "parquet", "parquet-dictionary", or a broken input (see SOURCES)
    kind: str  # what the privatized column holds (see VALUES)
    values: list[Any]
    domain: str  # how the domain file is written (see DOMAINS)
    extra: list[Any]  # values of the domain that are not in the column
    mechanism: str
    epsilon: str
    unknown: str | None
    nulls: str | None
    column: str
    keep: str | None
    chunk_rows: str | None
    max_weight: str | None
    randomness: str
    validate: bool
    ledger: str
    spec: str  # "none" (options), or how a --spec file is written (see SPECS)
    output: str  # see OUTPUTS


SOURCES = ("csv", "parquet", "parquet-dictionary")
BROKEN_SOURCES = ("empty", "garbage", "ragged", "missing", "directory", "txt", "header-only")
"""Inputs that are no CSV or Parquet file (a CSV of a header only may go either way)."""
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "token": st.sampled_from(TOKENS),
    "int": st.integers(-3, 3),
    "float": st.sampled_from([0.5, 1.0, 2.25, -0.0, math.nan]),
    "bool": st.booleans(),
    "odd": st.sampled_from(ODD_VALUES),
}
DOMAINS = ("lines", "json", "huge")
FILLERS: dict[str, tuple[Any, ...]] = {"int": (7, 8), "float": (7.5, 8.5), "bool": (True, False)}
BROKEN_DOMAINS = (
    "empty",
    "single",
    "binary",
    "duplicates",
    "bad-json",
    "json-object",
    "json-nested",
    "missing",
)
"""Domain files that must be refused (a key file given by mistake is ``binary``)."""
EPSILONS = ("0.5", "1", "2", "3.5")
BAD_EPSILONS = ("0", "-1", "nan", "inf", "-inf", "1e-300", "1e400", "abc", "", "1,5", "0x10")
OUTPUTS = ("out.parquet", "out.csv")
ODD_OUTPUTS = ("out.txt", "missing-dir", "directory", "input", "older-parquet", "older-csv")
"""Outputs that must be refused, and an older release to replace (kept as it was on failure)."""
LEDGERS = ("none", "none", "ledger")
BAD_LEDGERS = ("unknown-budget", "tiny-budget", "missing-file", "no-budget")
SPECS = ("good",)
BAD_SPECS = ("bad-json", "list", "unknown-option", "string-epsilon", "domain-string", "no-domain")


@st.composite
def jobs(draw: st.DrawFn) -> Job:
    kind = draw(st.sampled_from(list(VALUES)))
    element = VALUES[kind]
    if draw(mostly(st.just(False), st.just(True), 4)):
        element = st.one_of(element, st.none())
    values = draw(st.lists(element, max_size=6))
    mechanism = draw(mostly(st.sampled_from(["rappor", "krr"]), st.sampled_from(["bloom", "x"])))
    return Job(
        source=draw(mostly(st.sampled_from(SOURCES), st.sampled_from(BROKEN_SOURCES), 10)),
        kind=kind,
        values=values,
        domain=draw(mostly(st.sampled_from(DOMAINS), st.sampled_from(BROKEN_DOMAINS))),
        extra=draw(st.lists(mostly(VALUES[kind], VALUES["odd"], 10), max_size=2)),
        mechanism=mechanism,
        epsilon=draw(mostly(st.sampled_from(EPSILONS), st.sampled_from(BAD_EPSILONS))),
        unknown=draw(
            mostly(st.sampled_from([None, "raise", "other"]), st.sampled_from(["drop", ""]))
        ),
        nulls=draw(
            mostly(st.sampled_from([None, "raise", "category"]), st.sampled_from(["drop", ""]))
        ),
        column=draw(mostly(st.just(COLUMN), st.just(MISSING), 12)),
        keep=draw(mostly(st.sampled_from([None, KEEP]), st.sampled_from([COLUMN, MISSING]))),
        chunk_rows=draw(
            mostly(st.sampled_from([None, "1", "2", "1000"]), st.sampled_from(["0", "-1", "x"]))
        ),
        max_weight=draw(mostly(st.just(None), st.sampled_from(["2", "0", "-1", "x"]), 12)),
        randomness=draw(
            mostly(
                st.sampled_from(["none", "seed", "key-file"]),
                st.sampled_from(["short-key", "missing-key", "seed-and-key"]),
            )
        ),
        validate=draw(mostly(st.just(True), st.just(False))),
        ledger=draw(mostly(st.sampled_from(LEDGERS), st.sampled_from(BAD_LEDGERS))),
        spec=draw(mostly(st.just("none"), st.sampled_from([*SPECS, *BAD_SPECS]), 6)),
        output=draw(mostly(st.sampled_from(OUTPUTS), st.sampled_from(ODD_OUTPUTS))),
    )


# -- writing the files ------------------------------------------------------------------------


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _arrow_column(job: Job) -> pa.Array:
    if job.kind == "odd":  # mixed spellings: written as text
        return pa.array([None if v is None else str(v) for v in job.values], type=pa.string())
    types = {"token": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
    return pa.array(job.values, type=types[job.kind])


def write_source(job: Job, folder: Path) -> Path:
    """The input file of ``job`` (or the broken thing that stands in its place)."""
    if job.source in ("csv", "parquet", "parquet-dictionary"):
        column = _arrow_column(job)
        if job.source == "parquet-dictionary":
            column = column.dictionary_encode()
        keep = pa.array(range(len(job.values)), type=pa.int64())
        table = pa.table({COLUMN: column, KEEP: keep})
        if job.source == "csv":
            path = folder / "in.csv"
            pacsv.write_csv(table, path)
        else:
            path = folder / "in.parquet"
            pq.write_table(table, path)
        return path
    path = folder / ("in.txt" if job.source == "txt" else "in.csv")
    if job.source == "empty":
        path.write_bytes(b"")
    elif job.source == "garbage":
        path.write_bytes(bytes(range(256)))
    elif job.source == "header-only":
        path.write_text(f"{COLUMN},{KEEP}\n")
    elif job.source == "ragged":
        path.write_text(f"{COLUMN},{KEEP}\nAA,1\nDL\nUA,3,4\n")
    elif job.source == "directory":
        path.mkdir()
    elif job.source == "txt":
        path.write_text(f"{COLUMN},{KEEP}\nAA,1\n")
    return path  # "missing": never written


def domain_values(job: Job) -> list[Any]:
    """The domain the job means: the column's distinct values, then the extra ones."""
    out: list[Any] = []
    for value in [*job.values, *job.extra]:
        missing = value is None or (isinstance(value, float) and math.isnan(value))
        if not missing and value not in out and _text(value) not in map(_text, out):
            out.append(value)
    return out


def write_domain(job: Job, folder: Path) -> Path:
    values = domain_values(job)
    if len(values) < 2:  # two buckets at least, of the column's kind
        fillers = FILLERS.get(job.kind, TOKENS)
        values = [*values, *(v for v in fillers if v not in values)][:2]
    if job.domain in ("json", "bad-json", "json-object", "json-nested"):
        path = folder / "domain.json"
        content = {
            "json": json.dumps(values),
            "bad-json": json.dumps(values)[:-1],
            "json-object": json.dumps({_text(v): 1 for v in values}),
            "json-nested": json.dumps([[v] for v in values]),
        }[job.domain]
        path.write_text(content, encoding="utf-8")
        return path
    path = folder / "domain.txt"
    lines = [_text(v) for v in values]
    if job.domain == "empty":
        path.write_text("")
    elif job.domain == "single":
        path.write_text(lines[0] + "\n")
    elif job.domain == "binary":
        path.write_bytes(bytes(range(200, 232)))  # 32 bytes: a key file given by mistake
    elif job.domain == "duplicates":
        path.write_text("\n".join([*lines, lines[0]]) + "\n")
    elif job.domain == "huge":
        path.write_text("\n".join([*lines, HUGE]) + "\n")
    elif job.domain != "missing":
        path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    return path


def write_spec(job: Job, folder: Path, domain: Path) -> Path:
    path = folder / "job.json"
    options: dict[str, Any] = {"mechanism": job.mechanism, "epsilon": _spec_epsilon(job.epsilon)}
    if job.mechanism == "bloom":
        options["epsilon_infinity"] = 4.0
    elif job.spec != "no-domain":
        options["domain_file"] = domain.name
    for name in ("unknown", "nulls"):
        if getattr(job, name) is not None:
            options[name] = getattr(job, name)
    if job.spec == "unknown-option":
        options["colour"] = "blue"
    if job.spec == "string-epsilon":
        options["epsilon"] = job.epsilon
    if job.spec == "domain-string":
        options.pop("domain_file", None)
        options["domain"] = "AA,DL"
    content = json.dumps({job.column: options})
    if job.spec == "bad-json":
        content = content[:-1]
    if job.spec == "list":
        content = json.dumps([options])
    path.write_text(content, encoding="utf-8")
    return path


def _spec_epsilon(text: str) -> Any:
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


@dataclass
class Files:
    """The files of one example, and what the checks compare with."""

    folder: Path
    source: Path
    output: Path
    args: list[str]
    ledger: frameldp.Ledger | None = None
    older: dict[Path, bytes] = field(default_factory=dict)
    """An older release at the output path, and its sidecar (they must survive a failure)."""
    inputs: dict[Path, bytes] = field(default_factory=dict)
    """Every other file the run may read: it must not change them."""
    absent: Path | None = None
    """A ledger file that does not exist and must not be created."""


_ledgers = itertools.count()


def prepare(job: Job, folder: Path) -> Files:
    """Write every file of ``job`` into ``folder`` and build the command line."""
    source = write_source(job, folder)
    domain = write_domain(job, folder)
    output = _output(job, folder, source)
    args = ["privatize", str(source), str(output)]
    if job.spec == "none":
        args += ["--column", job.column, "--mechanism", job.mechanism, "--epsilon", job.epsilon]
        if job.mechanism == "bloom":
            args += ["--epsilon-infinity", "4"]
        else:
            args += ["--domain-file", str(domain)]
        for name in ("unknown", "nulls", "max_weight"):
            if getattr(job, name) is not None:
                args += [f"--{name.replace('_', '-')}", getattr(job, name)]
    else:
        args += ["--spec", str(write_spec(job, folder, domain))]
    if job.keep is not None:
        args += ["--keep", job.keep]
    if job.chunk_rows is not None:
        args += ["--chunk-rows", job.chunk_rows]
    if not job.validate:
        args.append("--no-validate")
    key = folder / "secret.key"
    if job.randomness in ("seed", "seed-and-key"):
        args += ["--seed", "3"]
    if job.randomness in ("key-file", "seed-and-key", "short-key", "missing-key"):
        if job.randomness != "missing-key":
            key.write_bytes(bytes(range(31 if job.randomness == "short-key" else 32)))
        args += ["--key-file", str(key)]
    files = Files(folder, source, output, args)
    _ledger(job, files)
    if job.output.startswith("older"):
        pair = [output, output.with_name(output.name + ".frameldp.json")]
        files.older = {path: path.read_bytes() for path in pair if path.is_file()}
    files.inputs = {
        path: path.read_bytes()
        for path in sorted(folder.iterdir())
        if path.is_file() and path not in files.older and path.suffix != ".sqlite"
    }
    return files


def _output(job: Job, folder: Path, source: Path) -> Path:
    if job.output == "missing-dir":
        return folder / "no such directory" / "out.parquet"
    if job.output == "directory":
        (folder / "out.parquet").mkdir()
        return folder / "out.parquet"
    if job.output == "input":
        return source
    if job.output.startswith("older"):
        # An older release: the same job on two rows, which a failed run must leave as it was.
        older = folder / ("out.csv" if job.output == "older-csv" else "out.parquet")
        first = folder / "first.csv"
        first.write_text(f"{COLUMN}\nAA\nDL\n")
        domain = folder / "first.txt"
        domain.write_text("AA\nDL\n")
        command = ["privatize", first, older, "--column", COLUMN, "--mechanism", "krr"]
        run = invoke(*command, "--epsilon", "1", "--domain-file", domain)
        assert run.exit_code == 0, run.stderr
        return older
    return folder / job.output


def _ledger(job: Job, files: Files) -> None:
    if job.ledger == "none":
        return
    path = files.folder / f"ledger-{next(_ledgers)}.sqlite"
    if job.ledger == "missing-file":
        files.args += ["--ledger", str(path), "--budget", "fuzz"]
        files.absent = path
        return
    files.ledger = frameldp.Ledger(path)
    files.ledger.set_budget("fuzz", epsilon=1e-9 if job.ledger == "tiny-budget" else 1e9)
    if job.ledger == "no-budget":
        files.args += ["--ledger", str(path)]
        return
    budget = "never set" if job.ledger == "unknown-budget" else "fuzz"
    files.args += ["--ledger", str(path), "--budget", budget]


# -- running --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    exit_code: int
    stdout: str
    stderr: str


def invoke(*args: Any) -> Run:
    """``frameldp *args`` in process; an exception escaping the command is re-raised."""
    variables: dict[str, str | None] = {name: None for name in UNSET}
    variables["COLUMNS"] = "200"
    result = CliRunner().invoke(app, [str(a) for a in args], env=variables)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Run(result.exit_code, result.stdout, result.stderr)


def must_fail(job: Job) -> str | None:
    """Why the command has to fail (None when it may succeed)."""
    problems = {
        "source": job.source not in (*SOURCES, "header-only"),
        "domain": job.domain in BROKEN_DOMAINS and job.mechanism != "bloom",
        "mechanism": job.mechanism not in ("rappor", "krr", "bloom"),
        "epsilon": job.epsilon in BAD_EPSILONS and job.epsilon != "1e-300",
        "unknown": job.unknown not in (None, "raise", "other"),
        "nulls": job.nulls not in (None, "raise", "category"),
        "column": job.column == MISSING,
        "keep": job.keep in (COLUMN, MISSING),
        "chunk_rows": job.chunk_rows in ("0", "-1", "x"),
        # An invalid value is refused whatever the mechanism (it is never silently ignored).
        "max_weight": job.max_weight == "x"
        or (job.max_weight in ("0", "-1") and job.spec == "none"),
        "randomness": job.randomness in ("short-key", "missing-key", "seed-and-key"),
        "ledger": job.ledger in BAD_LEDGERS,
        "spec": job.spec in BAD_SPECS
        and not (job.spec == "no-domain" and job.mechanism == "bloom"),
        "output": job.output in ("out.txt", "missing-dir", "directory", "input"),
        # A CSV reads a missing text as "" (and "" is no null), a Parquet file keeps the null.
        "nulls in the column": any(v is None for v in job.values)
        and job.nulls != "category"
        and (job.source != "csv" or job.kind in ("int", "float", "bool")),
    }
    return next((name for name, failed in problems.items() if failed), None)


def must_succeed(job: Job) -> bool:
    """A plain valid job: tokens in a domain file that lists them, valid options."""
    return (
        must_fail(job) is None
        and job.kind == "token"
        and all(v is not None for v in job.values)
        and all(v in TOKENS for v in job.extra)
        and job.mechanism in ("rappor", "krr")
        and job.epsilon != "1e-300"
        and job.max_weight is None
        and job.spec in ("none", "good")
    )


# -- checks ----------------------------------------------------------------------------------------


def leftovers(folder: Path) -> list[str]:
    """Temporary files left anywhere under ``folder``."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.name.endswith(".tmp"))


def _long_values(job: Job) -> Iterator[str]:
    for value in [*job.values, *job.extra, HUGE if job.domain == "huge" else None]:
        if isinstance(value, str) and len(value) > ECHO_LIMIT:
            yield value


def check_failure(job: Job, files: Files, run: Run) -> None:
    """Exit 1, one ``error:`` line, nothing written or charged."""
    assert run.exit_code == 1, (run.exit_code, run.stderr)
    assert run.stdout == "", run.stdout
    assert "Traceback" not in run.stderr, run.stderr
    lines = run.stderr.splitlines()
    errors = [i for i, line in enumerate(lines) if line.startswith("error: ")]
    assert len(errors) == 1, run.stderr
    assert all(line.startswith("warning: ") for line in lines[: errors[0]]), run.stderr
    assert all(line.startswith("  ") for line in lines[errors[0] + 1 :]), run.stderr
    message = lines[errors[0]]
    assert len(message) < MESSAGE_LIMIT, (len(message), message[:1000])
    for value in _long_values(job):
        assert value[: ECHO_LIMIT + 1] not in run.stderr, run.stderr[:1000]
    assert leftovers(files.folder) == [], leftovers(files.folder)
    for path, content in files.older.items():
        assert path.read_bytes() == content, f"a failed run changed the older {path.name}"
    if not files.older and job.output not in ("directory", "input"):
        assert not files.output.exists(), "a failed run left an output"
        assert not files.output.with_name(files.output.name + ".frameldp.json").exists()
    if files.ledger is not None:
        assert files.ledger.history("fuzz") == [], "a failed run was charged"
    assert files.absent is None or not files.absent.exists(), "a ledger file was created"


# A null report of a one-column CSV release is an empty line (docs/cli.md): read as a row.
KEEP_EMPTY_LINES = pacsv.ParseOptions(ignore_empty_lines=False)


def released_rows(path: Path) -> tuple[int, list[str]]:
    if path.suffix == ".parquet":
        table = pq.read_table(path)
    else:
        assert path.with_name(path.name + ".frameldp.json").is_file(), "no sidecar"
        table = pacsv.read_csv(path, parse_options=KEEP_EMPTY_LINES)
    return table.num_rows, table.column_names


def check_success(job: Job, files: Files, run: Run) -> None:
    """A readable release of every row, which ``estimate`` reads back; one ledger entry."""
    assert run.exit_code == 0
    assert all(line.startswith("warning: ") for line in run.stderr.splitlines()), run.stderr
    assert leftovers(files.folder) == [], leftovers(files.folder)
    rows, names = released_rows(files.output)
    assert rows == (0 if job.source == "header-only" else len(job.values))
    reports = [job.column, *([f"{job.column}_cohort"] if job.mechanism == "bloom" else [])]
    assert sorted(names) == sorted([*reports, *([job.keep] if job.keep else [])])
    if files.ledger is not None:
        assert len(files.ledger.history("fuzz")) == 1
    estimate = invoke("estimate", files.output)
    if rows and job.mechanism != "bloom":  # Bloom reports are decoded against candidates
        assert estimate.exit_code == 0, estimate.stderr
    else:
        assert estimate.exit_code in (0, 1), estimate.stderr
        assert "Traceback" not in estimate.stderr


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The parent of the examples' folders (one per example)."""
    parent = tmp_path_factory.mktemp("cli-fuzz")
    yield parent
    shutil.rmtree(parent, ignore_errors=True)


_examples = itertools.count()


def run_job(job: Job, parent: Path) -> None:
    folder = parent / f"example-{next(_examples)}"
    folder.mkdir()
    files = prepare(job, folder)
    run = invoke(*files.args)
    required = must_fail(job)
    if run.exit_code == 0:
        assert required is None, f"succeeded although {required}: {run.stdout}"
        check_success(job, files, run)
    else:
        assert not must_succeed(job), f"a valid job failed: {run.stderr}"
        check_failure(job, files, run)
    for path, content in files.inputs.items():
        if path != files.output or run.exit_code != 0:
            assert path.read_bytes() == content, f"{path.name} was modified"


@pytest.mark.filterwarnings("ignore::frameldp.InsecureSeedWarning")
@FUZZ
@given(job=jobs())
def test_privatize_fails_cleanly_or_writes_a_valid_release(job: Job, folders: Path) -> None:
    """``frameldp privatize`` on odd files and options (see the module docstring)."""
    run_job(job, folders)


# -- frameldp estimate on files that may not be releases ----------------------------------------


@dataclass(frozen=True)
class Estimate:
    """One fuzzed ``frameldp estimate`` run."""

    source: str  # see REPORT_FILES
    column: str | None
    level: str | None
    top: str | None
    delta: str | None
    out: str | None  # see TABLES


REPORT_FILES = ("release.parquet", "release.csv")
BAD_REPORT_FILES = (
    "tampered-csv",
    "no-sidecar",
    "plain-parquet",
    "plain-csv",
    "garbage",
    "empty",
    "missing",
    "directory",
)
TABLES = ("table.csv", "table.parquet")
BAD_TABLES = ("table.txt", "missing-dir", "directory", "release")


@st.composite
def estimates(draw: st.DrawFn) -> Estimate:
    return Estimate(
        source=draw(mostly(st.sampled_from(REPORT_FILES), st.sampled_from(BAD_REPORT_FILES), 4)),
        column=draw(mostly(st.sampled_from([None, COLUMN]), st.sampled_from([MISSING, KEEP]))),
        level=draw(mostly(st.sampled_from([None, "0.9"]), st.sampled_from(["0", "1", "nan", "x"]))),
        top=draw(mostly(st.sampled_from([None, "1", "10"]), st.sampled_from(["0", "-1", "x"]))),
        delta=draw(mostly(st.sampled_from([None, "1e-9"]), st.sampled_from(["0", "2", "nan"]))),
        out=draw(mostly(st.sampled_from([None, *TABLES]), st.sampled_from(BAD_TABLES))),
    )


@pytest.fixture(scope="module")
def releases(folders: Path) -> dict[str, Path]:
    """A Parquet and a CSV release (with its sidecar) of a k-RR column, made once."""
    folder = folders / "releases"
    folder.mkdir()
    source = folder / "in.parquet"
    pq.write_table(pa.table({COLUMN: ["AA", "DL", "UA"] * 4, KEEP: range(12)}), source)
    domain = folder / "domain.txt"
    domain.write_text("AA\nDL\nUA\n")
    out = {}
    for name in REPORT_FILES:
        out[name] = folder / name
        command = ["--column", COLUMN, "--mechanism", "krr", "--epsilon", "1", "--keep", KEEP]
        run = invoke("privatize", source, out[name], *command, "--domain-file", domain)
        assert run.exit_code == 0, run.stderr
    return out


def _report_file(job: Estimate, folder: Path, releases: dict[str, Path]) -> Path:
    csv = releases["release.csv"]
    if job.source in (*REPORT_FILES, "tampered-csv", "no-sidecar"):
        original = releases["release.parquet" if job.source == "release.parquet" else "release.csv"]
        path = folder / original.name
        shutil.copy(original, path)
        if original.suffix == ".csv" and job.source != "no-sidecar":
            shutil.copy(csv.with_name(csv.name + ".frameldp.json"), folder)
        if job.source == "tampered-csv":  # one report changed, whichever labels were drawn
            text = path.read_text()
            label = next(f'"{c}"' for c in ("AA", "DL", "UA") if f'"{c}"' in text)
            other = '"DL"' if label == '"AA"' else '"AA"'
            path.write_text(text.replace(label, other, 1))
        return path
    path = folder / ("plain.parquet" if job.source == "plain-parquet" else "plain.csv")
    if job.source == "plain-parquet":
        pq.write_table(pa.table({COLUMN: ["AA", "DL"]}), path)
    elif job.source == "plain-csv":
        path.write_text(f"{COLUMN}\nAA\nDL\n")
    elif job.source == "garbage":
        path.write_bytes(bytes(range(256)))
    elif job.source == "empty":
        path.write_bytes(b"")
    elif job.source == "directory":
        path.mkdir()
    return path


def _table(job: Estimate, folder: Path, source: Path) -> Path | None:
    if job.out is None:
        return None
    if job.out == "missing-dir":
        return folder / "no such directory" / "table.csv"
    if job.out == "directory":
        (folder / "table.csv").mkdir()
        return folder / "table.csv"
    if job.out == "release":
        return source
    return folder / job.out


def estimate_must_fail(job: Estimate) -> str | None:
    problems = {
        "file": job.source in BAD_REPORT_FILES,
        "column": job.column in (MISSING, KEEP),
        "level": job.level in ("0", "1", "nan", "x"),
        "top": job.top == "x",
        "delta": job.delta in ("0", "2", "nan"),
        "out": job.out in BAD_TABLES,
    }
    return next((name for name, failed in problems.items() if failed), None)


@settings(FUZZ, max_examples=ESTIMATE_EXAMPLES)
@given(job=estimates())
def test_estimate_fails_cleanly_or_prints_tables(
    job: Estimate, folders: Path, releases: dict[str, Path]
) -> None:
    """``frameldp estimate`` of releases, tampered releases and files that are none, with odd
    options: tables (and a readable ``--out``), or one error line and nothing written."""
    folder = folders / f"estimate-{next(_examples)}"
    folder.mkdir()
    source = _report_file(job, folder, releases)
    table = _table(job, folder, source)
    before = {p: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    args: list[Any] = ["estimate", source]
    for option in ("column", "level", "top", "delta"):
        if getattr(job, option) is not None:
            args += [f"--{option}", getattr(job, option)]
    if table is not None:
        args += ["--out", table]
    run = invoke(*args)
    required = estimate_must_fail(job)
    if run.exit_code == 0:
        assert required is None, f"succeeded although {required}: {run.stdout}"
        assert "RandomizedResponse" in run.stdout
        if table is not None:
            kind = pq.read_table if table.suffix == ".parquet" else pacsv.read_csv
            assert kind(table).num_rows == 3  # AA, DL, UA
    else:
        assert job.source not in BAD_REPORT_FILES or required is not None
        assert required is not None or job.top in ("0", "-1"), f"valid job failed: {run.stderr}"
        assert run.exit_code == 1, run.stderr
        assert run.stdout == "", run.stdout
        assert "Traceback" not in run.stderr, run.stderr
        lines = run.stderr.splitlines()
        assert len(lines) == 1, run.stderr
        assert lines[0].startswith("error: "), run.stderr
        assert len(lines[0]) < MESSAGE_LIMIT, lines[0]
        if table is not None and job.out not in ("directory", "release"):
            assert not table.exists(), "a failed run wrote its --out table"
    assert leftovers(folder) == [], leftovers(folder)
    for path, content in before.items():
        if path != table or run.exit_code != 0:
            assert path.read_bytes() == content, f"{path.name} was modified"


# -- defects the fuzzer found, one command each ------------------------------------------------


def _release(
    folder: Path, values: list[Any], out: str, *options: Any, epsilon: str = "5"
) -> tuple[Run, Path]:
    """``frameldp privatize`` of a one-column Parquet file with a JSON domain of ``values``."""
    source = folder / "in.parquet"
    pq.write_table(pa.table({COLUMN: values}), source)
    domain = folder / "domain.json"
    domain.write_text(json.dumps(sorted({v for v in values if v is not None})))
    target = folder / out
    command = ["--column", COLUMN, "--epsilon", epsilon, "--domain-file", domain, *options]
    return invoke("privatize", source, target, *command), target


@pytest.mark.parametrize("option", [["--nulls", ""], ["--unknown", ""]])
def test_an_empty_policy_is_refused(tmp_path: Path, option: list[str]) -> None:
    """``--nulls ''`` ran as ``--nulls raise`` (an empty policy is falsy, taken as unset)."""
    run, target = _release(tmp_path, ["AA", "DL"], "out.parquet", "--mechanism", "krr", *option)
    assert run.exit_code == 1, run.stdout
    assert not target.exists()


@pytest.mark.parametrize(
    "options",
    [
        ["--mechanism", "bloom", "--epsilon-infinity", "4", "--unknown", "drop"],
        ["--mechanism", "krr", "--max-weight", "0"],
    ],
    ids=["bloom-unknown-drop", "krr-max-weight-0"],
)
def test_an_invalid_option_value_is_refused_whatever_the_mechanism(
    tmp_path: Path, options: list[str]
) -> None:
    """An invalid value of an option the mechanism does not use was silently ignored."""
    source = tmp_path / "in.parquet"
    pq.write_table(pa.table({COLUMN: ["AA", "DL"]}), source)
    domain = tmp_path / "domain.txt"
    domain.write_text("AA\nDL\n")
    args: list[Any] = ["--column", COLUMN, "--epsilon", "1", *options]
    if "krr" in options:
        args += ["--domain-file", domain]
    run = invoke("privatize", source, tmp_path / "out.parquet", *args)
    assert run.exit_code == 1, run.stdout
    assert run.stderr.startswith("error: ")


def test_null_reports_of_a_one_column_csv_release_are_rows(tmp_path: Path) -> None:
    """k-RR with ``--nulls category`` into a one-column CSV writes the null bucket as empty
    lines (CSV has no other spelling of a null in a one-column file): they are rows for a
    reader that keeps empty lines, as frameldp's does, and ``estimate`` counts every one."""
    # epsilon 40 with a seed: the reports are the values (nulls give null reports).
    options = ["--mechanism", "krr", "--nulls", "category", "--seed", "1"]
    run, target = _release(tmp_path, [None, None, "AA", "DL"], "out.csv", *options, epsilon="40")
    assert run.exit_code == 0, run.stderr
    assert pacsv.read_csv(target, parse_options=KEEP_EMPTY_LINES).num_rows == 4
    estimate = invoke("estimate", target)
    assert estimate.exit_code == 0, estimate.stderr
    assert "n = 4" in estimate.stdout or "4 reports" in estimate.stdout, estimate.stdout


def test_a_csv_release_of_labels_spelled_like_nulls_estimates(tmp_path: Path) -> None:
    """Labels "null", "NA" and "" were written as text that the CSV reader takes for nulls,
    so ``frameldp estimate`` refused the release privatize had just written."""
    run, target = _release(tmp_path, ["null", "NA", "", "x"], "out.csv", "--mechanism", "krr")
    assert run.exit_code == 0, run.stderr
    estimate = invoke("estimate", target)
    assert estimate.exit_code == 0, estimate.stderr


@pytest.mark.parametrize("out", ["out.parquet", "out.csv"])
def test_estimate_never_writes_its_table_over_the_release(tmp_path: Path, out: str) -> None:
    """``frameldp estimate R --out R`` replaced the release with its table (privatize refuses
    an output that would overwrite its input)."""
    run, target = _release(tmp_path, ["AA", "DL", "AA"], out, "--mechanism", "krr")
    assert run.exit_code == 0, run.stderr
    release = target.read_bytes()
    estimate = invoke("estimate", target, "--out", target)
    assert estimate.exit_code == 1, estimate.stdout
    assert target.read_bytes() == release
