"""INSTALL TEST: the README's install line works for a newcomer, in a fresh virtual environment.

frameldp is on no package index, so the README installs it from a checkout or an unpacked
source archive: ``pip install "./frameldp[polars]"``. The default test runs that very line
(with ``--no-deps``) from a directory holding a copy of the sources as ``./frameldp``, into a
new virtual environment that has never seen this checkout, and imports the result from a
directory outside the checkout. It takes about 10 s and needs PyPI for one thing only: pip
fetches the build backend (hatchling) into its isolated build environment, as it does for the
newcomer.

What it proves: the package builds from the sources alone (no editable install, no ``src`` on
``sys.path``), the wheel holds every module of ``src/frameldp`` and ``py.typed``, declares the
extras the README names, installs the ``frameldp`` command, and imports and privatizes a polars
frame. Downloading the dependencies (about 150 MB) would take too long for ``make test``: the
fresh environment borrows them from the test's own environment through a plain ``.pth`` line,
which adds that directory to ``sys.path`` without processing its ``.pth`` files, so the
checkout's editable install stays invisible (asserted below).

``FRAMELDP_FULL_INSTALL_TEST=1`` also runs the line exactly as written, dependencies downloaded
from PyPI into a second fresh environment (about 150 MB; for a release check, not for CI).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
pytestmark = pytest.mark.slow

TIMEOUT = 300  # seconds per step; the whole default test takes about 10 s

# The probe run by the fresh interpreter: where frameldp came from and that it works.
PROBE = """
import json, sys, sysconfig
import polars as pl
import frameldp
from importlib import metadata
reports = pl.DataFrame({"c": ["a", "b"] * 10}).ldp.krr("c", 1.0, domain=["a", "b"])
print(json.dumps({
    "version": frameldp.__version__,
    "file": frameldp.__file__,
    "purelib": sysconfig.get_paths()["purelib"],
    "sys_path": sys.path,
    "extras": metadata.metadata("frameldp").get_all("Provides-Extra"),
    "rows": reports.height,
}))
"""


def _install_line() -> tuple[str, str, list[str]]:
    """The README's install command, the source directory it names, and its extras."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Installing", 1)[1].split("\n## ", 1)[0]
    match = re.search(r'^pip install "(\./[\w.-]+)\[([\w,]+)\]"', section, re.MULTILINE)
    assert match, 'the README\'s Installing section must give pip install "./DIR[extras]"'
    listed = re.search(r"extras: ([\w, ]+)", section)
    assert listed, "the README's install line must list the extras"
    command = match.group(0)
    extras = [extra.strip() for extra in listed.group(1).split(",")]
    return command, match.group(1), extras


def _run(args: list[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a command with no PYTHONPATH / PYTHONHOME leaking the checkout into it."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
    return done


def _fresh_venv(path: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A new virtual environment (without pip: the test's pip installs into it): its python and
    its scripts directory."""
    _run([sys.executable, "-m", "venv", "--without-pip", path], tmp_path)
    scripts = path / ("Scripts" if os.name == "nt" else "bin")
    return scripts / ("python.exe" if os.name == "nt" else "python"), scripts


def _source_archive(tmp_path: Path, directory: str) -> None:
    """What a clone or an unpacked source archive holds for the build, at ``tmp/<directory>``."""
    target = tmp_path / directory
    target.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, target / name)
    shutil.copytree(
        ROOT / "src", target / "src", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )


def test_the_readme_install_line_works_in_a_fresh_venv(tmp_path: Path) -> None:
    command, directory, extras = _install_line()
    _source_archive(tmp_path, directory)
    python, scripts = _fresh_venv(tmp_path / "fresh", tmp_path)
    pip = [sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check"]
    # The README's line, run where the sources sit as ./frameldp; dependencies borrowed below.
    _run([*pip, "install", "--quiet", "--no-deps", *shlex.split(command)[2:]], tmp_path)
    assert (scripts / "frameldp").exists() or (scripts / "frameldp.exe").exists()

    # Only now (pip must not see this checkout's frameldp while installing): the dependencies.
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = Path(_run([python, "-c", where], tmp_path).stdout.strip())
    borrowed = Path(sysconfig.get_paths()["purelib"]).resolve()
    (purelib / "_borrowed_dependencies.pth").write_text(f"{borrowed}\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    probe = json.loads(_run([python, "-c", PROBE], elsewhere).stdout)

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert probe["version"] == version
    installed = Path(probe["file"]).parent
    assert installed == Path(probe["purelib"]) / "frameldp", probe["file"]
    # Nothing of the checkout is importable but the borrowed dependencies: not its src/ (the
    # editable install's .pth file in the borrowed directory is never processed).
    checkout = [Path(p).resolve() for p in probe["sys_path"] if p]
    assert [p for p in checkout if p.is_relative_to(ROOT) and p != borrowed] == []
    assert probe["rows"] == 20
    assert set(extras) <= set(probe["extras"])
    source = ROOT / "src" / "frameldp"
    modules = {p.relative_to(source) for p in source.rglob("*.py")} | {Path("py.typed")}
    shipped = {p.relative_to(installed) for p in installed.rglob("*") if p.is_file()}
    assert modules <= shipped, sorted(map(str, modules - shipped))


@pytest.mark.skipif(
    os.environ.get("FRAMELDP_FULL_INSTALL_TEST") != "1",
    reason="downloads every dependency from PyPI (~150 MB): set FRAMELDP_FULL_INSTALL_TEST=1",
)
def test_the_readme_install_line_with_its_dependencies(tmp_path: Path) -> None:
    """The README's line exactly as written: frameldp and its dependencies from PyPI."""
    command, directory, _ = _install_line()
    _source_archive(tmp_path, directory)
    python, _ = _fresh_venv(tmp_path / "full", tmp_path)
    pip = [sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check"]
    _run([*pip, "install", "--quiet", *shlex.split(command)[2:]], tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    probe = json.loads(_run([python, "-c", PROBE], elsewhere).stdout)
    assert Path(probe["file"]).parent == Path(probe["purelib"]) / "frameldp"
    assert probe["rows"] == 20
