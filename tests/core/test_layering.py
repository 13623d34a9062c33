"""Layering: core and accounting run without any dataframe library and never import one."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import frameldp

FRAME_LIBRARIES = ("pandas", "polars", "dask", "pandera", "narwhals", "duckdb", "pyspark")
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


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """Ids of the nodes under ``if TYPE_CHECKING:`` (never run: annotations only)."""
    return {
        id(sub)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for sub in ast.walk(node)
    }


def _imported_modules(path: Path, *, run_only: bool = False) -> list[str]:
    """Absolute names of every module an import statement (relative ones resolved, and
    ``from package import submodule`` counted as the submodule) or a literal
    ``import_module`` / ``__import__`` call in ``path`` may load; with ``run_only``, not those
    under ``if TYPE_CHECKING:``. Imports inside functions count."""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    names: list[str] = []
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skipped = _type_checking_nodes(tree) if run_only else set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
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


def _import_graph() -> dict[str, set[str]]:
    """frameldp module -> the frameldp modules it imports when it runs (module level and
    inside functions; a package's own ``__init__`` excepted, which Python runs first)."""
    modules = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for imported in _imported_modules(path, run_only=True):
            found = owner(imported) if imported.startswith("frameldp") else None
            if found and found != name and not name.startswith(f"{found}."):
                graph[name].add(found)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return circles


def test_no_import_circle_anywhere() -> None:
    """Every module can be read bottom-up: no two modules import each other, directly or
    through others, counting the imports inside functions (issue 38 removed the circles of
    tables, grouping and plots, of the accounting's shuffle guarantees, and of the pandas
    report dtype)."""
    assert _circles(_import_graph()) == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_results_import_nothing_from_the_engines() -> None:
    offending = [
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in _sources("results")
        for name in _imported_modules(path)
        if name.startswith(("frameldp.frames", "frameldp.schemas", "frameldp.cli"))
    ]
    assert not offending
