"""``import frameldp`` and ``frameldp --help`` import only what they use (issue 14).

Each check runs in a fresh interpreter: which modules an import pulls in depends on what the
process imported before. The CPU cost itself is measured in ``benchmarks/bench_import.py``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

HEAVY = ("numpy", "pandas", "polars", "pyarrow", "dask", "scipy", "pandera", "matplotlib")


def _run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_import_frameldp_alone_imports_no_numeric_or_frame_library() -> None:
    out = _run(
        f"""
        import sys
        import frameldp
        print(sorted({{m.partition(".")[0] for m in sys.modules}} & set({HEAVY!r})))
        """
    )
    assert out == "[]"


def test_import_frameldp_after_the_frame_libraries_does_not_import_scipy_or_dask() -> None:
    out = _run(
        """
        import sys
        import pandas, pyarrow, polars
        import frameldp
        print(sorted({m.partition(".")[0] for m in sys.modules} & {"scipy", "dask", "pandera"}))
        """
    )
    assert out == "[]"


def test_accessors_are_registered_when_a_library_is_imported_after_frameldp() -> None:
    out = _run(
        """
        import frameldp
        import pandas as pd
        import polars as pl
        import dask.dataframe as dd

        frame = pd.DataFrame({"c": ["a", "b"] * 50})
        reports = frame.ldp.krr("c", 1.0, domain=["a", "b"])
        print(reports.ldp.debias("c").n)
        print(pl.from_pandas(frame).ldp.krr("c", 1.0, domain=["a", "b"]).height)
        print(type(dd.from_pandas(frame, npartitions=2).ldp).__name__)
        """
    )
    assert out.split() == ["100", "100", "DaskFrameAccessor"]


def test_pandas_gets_its_accessor_after_polars_looked_for_it() -> None:
    """polars looks for pandas (importlib.util.find_spec) when it is imported; pandas imported
    later still gets ``.ldp`` (before issue 37 it did not, in that order)."""
    out = _run(
        """
        import frameldp, polars
        import pandas as pd

        print(hasattr(pd.DataFrame, "ldp"), hasattr(polars.DataFrame, "ldp"))
        """
    )
    assert out == "True True"


def test_public_names_are_imported_on_first_use() -> None:
    out = _run(
        """
        import sys
        import frameldp
        before = "frameldp.core" in sys.modules
        from frameldp import Rappor, FrequencyTable, compose
        print(before, Rappor.__name__, FrequencyTable.__name__, compose.__name__)
        print("Rappor" in dir(frameldp))
        """
    )
    assert out.split() == ["False", "Rappor", "FrequencyTable", "compose", "True"]


def test_an_unknown_name_is_an_attribute_error() -> None:
    out = _run(
        """
        import frameldp
        try:
            frameldp.NoSuchThing
        except AttributeError as error:
            print("AttributeError", "NoSuchThing" in str(error))
        """
    )
    assert out == "AttributeError True"


def test_cli_help_imports_no_numeric_or_frame_library() -> None:
    out = _run(
        f"""
        import sys
        from frameldp.cli import app
        from typer.testing import CliRunner

        for args in (["--help"], ["privatize", "--help"], ["budget", "--help"]):
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 0, result.output
        print(sorted({{m.partition(".")[0] for m in sys.modules}} & set({HEAVY!r})))
        """
    )
    assert out == "[]"
