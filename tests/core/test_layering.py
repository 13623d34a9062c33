"""Layering: core and accounting run without any dataframe library and never import one."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import frameldp

FRAME_LIBRARIES = ("pandas", "polars", "dask", "pandera", "narwhals")
FORBIDDEN: dict[str, tuple[str, ...]] = {
    # Mechanisms declare their report columns' Arrow types and read and write Arrow arrays
    # (DESIGN.md: one mechanism protocol); pyarrow is a memory format, not a frame library.
    "core": FRAME_LIBRARIES,
    "accounting": (*FRAME_LIBRARIES, "pyarrow"),
}
PACKAGE = Path(frameldp.__file__).parent

_BLOCKED_RUN = textwrap.dedent(
    """
    import sys

    BLOCKED = {blocked!r}


    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ImportError(f"{{name}} is blocked by the layering test")
            return None


    sys.meta_path.insert(0, Blocker())

    import numpy as np

    import frameldp.accounting
    import frameldp.core
    from frameldp.core import RandomizedResponse, RandomSource, Rappor

    for library in BLOCKED:
        try:
            __import__(library)
        except ImportError:
            pass
        else:
            raise AssertionError(f"{{library}} was not blocked")

    source = RandomSource.from_seed(1)
    codes = np.arange(300, dtype=np.int64) % 3
    rappor = Rappor(1.0, domain=["a", "b", "c"])
    reports = rappor.randomize(rappor.encode(codes), source=source, label="x")
    assert rappor.estimate(reports).counts.shape == (3,)
    krr = RandomizedResponse(1.0, domain=["a", "b", "c"])
    assert krr.estimate(krr.randomize(codes, source=source, label="y")).n == 300
    assert frameldp.accounting.compose([rappor.privacy, krr.privacy]).epsilon > 0

    leaked = sorted(m for m in sys.modules if m.partition(".")[0] in BLOCKED)
    assert not leaked, leaked
    print("core ok")
    """
)


def test_core_runs_with_frame_libraries_blocked() -> None:
    code = _BLOCKED_RUN.format(blocked=set(FRAME_LIBRARIES))
    result = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "core ok"


def _module_name(path: Path) -> str:
    parts = ["frameldp", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_modules(path: Path) -> list[str]:
    """Absolute names of every module an import statement (relative ones resolved, and
    ``from package import submodule`` counted as the submodule) or a literal
    ``import_module`` / ``__import__`` call in ``path`` may load."""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.append(module)
            names.extend(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called in ("import_module", "__import__") and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    names.append(first.value)
    return names


def _sources(layer: str) -> list[Path]:
    files = sorted((PACKAGE / layer).rglob("*.py"))
    assert files, f"no sources under {PACKAGE / layer}"
    return files


@pytest.mark.parametrize("layer", ["core", "accounting"])
def test_no_dataframe_import_in_lower_layers(layer: str) -> None:
    offending = [
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in _sources(layer)
        for name in _imported_modules(path)
        if name.partition(".")[0] in FORBIDDEN[layer]
    ]
    assert not offending


@pytest.mark.parametrize(
    ("layer", "upper"),
    [
        ("core", ("frameldp.frames", "frameldp.schemas", "frameldp.cli")),
        ("accounting", ("frameldp.core", "frameldp.frames", "frameldp.schemas", "frameldp.cli")),
    ],
)
def test_imports_only_point_down(layer: str, upper: tuple[str, ...]) -> None:
    offending = [
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in _sources(layer)
        for name in _imported_modules(path)
        if any(name == module or name.startswith(f"{module}.") for module in upper)
    ]
    assert not offending


def _is_module(parts: list[str]) -> bool:
    path = PACKAGE.joinpath(*parts[1:])
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _private_owner(name: str) -> str | None:
    """The package that owns the first private (``_name``) module in ``name``, if any (a
    private function imported from a public module is not a module)."""
    parts = name.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not part.startswith("__") and _is_module(parts[: i + 1]):
            return ".".join(parts[:i])
    return None


def test_no_private_module_is_reached_from_outside_its_package() -> None:
    """``frameldp.frames._pandas`` is the frames package's own business: the command line,
    ``frameldp.io`` and the core use public modules only."""
    offending = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = _module_name(path)
        for name in _imported_modules(path):
            owner = _private_owner(name)
            if name.startswith("frameldp.") and owner and not here.startswith(owner):
                offending.append(f"{path.relative_to(PACKAGE)}: {name}")
    assert not offending
