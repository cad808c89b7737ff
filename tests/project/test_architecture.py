"""The import structure: the library stands alone, and no import hides a cycle.

Every module's imports are read with ``ast`` (imports inside functions and under
``if TYPE_CHECKING:`` included), never by importing the module.

* The library (``crawlkit/``) never imports the CLI (``crawlkit_cli``, from ``cli/``).
* Inside the library, a crawlkit module is imported at module level: an import in a
  function body (or under TYPE_CHECKING) is how a cycle gets dodged, so there are none.
* The library's module-level imports of its own modules form no cycle.
* A function-local import of another package is allowed only for the packages in
  ``LAZY``, each with its reason (start-up time of commands that do not need it, or
  an optional package).
* The library reads bottom-up in layers (``LAYERS``): core, domain packages, stages,
  compositions. A module imports only from its own layer or the layers below.
* Every exception class the package exports is raised somewhere (or is the base of one
  that is).
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "crawlkit"

# Function-local imports of crawlkit modules inside crawlkit/ that are allowed, as
# (importing module, imported module): reason. None today; add one only with a reason
# that is not "it would be a cycle".
ALLOWED_LOCAL: dict[tuple[str, str], str] = {}

# `python -m crawlkit` runs the CLI: the one library file that may import it.
CLI_ENTRY_POINTS = {"crawlkit.__main__"}

# Third-party packages the library may import inside a function, and why.
LAZY: dict[str, str] = {
    "aiohttp": "HTTP client (with its yarl): ~0.1 s to import, only fetching needs it",
    "yarl": "comes with aiohttp (see above)",
    "uvloop": "event loop installed only when a fetch or testweb loop starts",
    "dnslib": "only for fetch --dns-server and testweb --dns",
    "cryptography": "optional (the testweb extra): only testweb --tls needs it",
    "publicsuffixlist": "only its data file's path is needed, at the first PSL lookup",
}


# The library's layers, bottom-up: each top-level module or package of crawlkit is in
# exactly one, and imports only from its own layer or those below (crawlkit/README.md).
CORE = {
    "",
    "errors",
    "streams",
    "decoders",
    "deflate",
    "diag",
    "times",
    "records",
    "durable",
    "state",
    "early_signals",
}
CORE |= {"masking", "heap", "collector", "tempdirs", "totals"}
DOMAIN = {"url", "robots", "sitemap", "html", "warc", "fetch", "frontier", "seen", "dedup"}
DOMAIN |= {"recrawl", "shard", "report", "testweb", "patterns"}
LAYERS: list[tuple[str, frozenset[str]]] = [
    ("core", frozenset(CORE)),
    ("domain", frozenset(DOMAIN)),
    ("stages", frozenset({"stages"})),
    ("compositions", frozenset({"crawl", "fleet", "demo", "__main__"})),
]


def layer_of(module: str) -> int:
    """The index in LAYERS of a crawlkit module (``crawlkit.warc.read`` is in warc's)."""
    parts = module.split(".")
    part = parts[1] if len(parts) > 1 else ""
    for number, (_, members) in enumerate(LAYERS):
        if part in members:
            return number
    raise AssertionError(f"{module} is in no layer: add crawlkit.{part} to LAYERS")


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, e.g. crawlkit.fetch.dns
    target: str  # what it imports, e.g. crawlkit.errors or dnslib
    line: int
    local: bool  # in a function body or under `if TYPE_CHECKING:`


def module_name(path: Path, root: Path, package: str) -> str:
    parts = [package, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(
    source: str, module: str, modules: set[str], is_package: bool = False
) -> list[Import]:
    """Every import of one module's source: what it names (``from pkg import sub``
    names the module ``pkg.sub`` when ``modules`` holds it, else ``pkg``)."""
    found: list[Import] = []

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        if node.level:  # relative: resolve against the importing package
            base = module.split(".")
            base = base if is_package else base[:-1]
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join([*base, node.module] if node.module else base)
        else:
            prefix = node.module or ""
        named = {f"{prefix}.{alias.name}" for alias in node.names}
        return sorted({n if n in modules else prefix for n in named})

    def walk(node: ast.AST, local: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                for target in targets(child):
                    found.append(Import(module, target, child.lineno, local))
            inner = local or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            if isinstance(child, ast.If) and _is_type_checking(child):
                inner = True
            walk(child, inner)

    walk(ast.parse(source), False)
    return found


def library_imports() -> list[Import]:
    out: list[Import] = []
    for path in sorted(LIBRARY.rglob("*.py")):
        name = module_name(path, LIBRARY, "crawlkit")
        source = path.read_text("utf-8")
        out += imports_of(source, name, library_modules(), path.name == "__init__.py")
    return out


@functools.cache
def library_modules() -> frozenset[str]:
    return frozenset(module_name(p, LIBRARY, "crawlkit") for p in LIBRARY.rglob("*.py"))


def _top(name: str) -> str:
    return name.split(".")[0]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_library_never_imports_the_cli() -> None:
    bad = [
        i
        for i in library_imports()
        if _top(i.target) == "crawlkit_cli" and i.module not in CLI_ENTRY_POINTS
    ]
    assert not bad, [f"{i.module}:{i.line} imports {i.target}" for i in bad]


def test_no_function_local_import_of_a_crawlkit_module_in_the_library() -> None:
    modules = library_modules()
    bad = sorted(
        f"{i.module}:{i.line} imports {i.target} inside a function"
        for i in library_imports()
        if i.local and i.target in modules and (i.module, i.target) not in ALLOWED_LOCAL
    )
    assert not bad, (
        "import crawlkit modules at module level; a cycle that forbids it is a layering "
        f"problem to fix, not to hide: {bad}"
    )


def test_allowed_local_imports_are_still_there() -> None:
    """An entry of ALLOWED_LOCAL whose import is gone must go too."""
    present = {(i.module, i.target) for i in library_imports() if i.local}
    assert set(ALLOWED_LOCAL) <= present, set(ALLOWED_LOCAL) - present


def test_function_local_imports_of_other_packages_are_on_the_lazy_list() -> None:
    bad = sorted(
        f"{i.module}:{i.line} imports {i.target} inside a function"
        for i in library_imports()
        if i.local and _top(i.target) != "crawlkit" and _top(i.target) not in LAZY
    )
    assert not bad, f"import at module level, or add the package to LAZY with why: {bad}"


def test_the_library_has_no_import_cycle() -> None:
    modules = library_modules()
    edges: dict[str, set[str]] = {}
    for i in library_imports():
        if not i.local and i.target in modules and i.target != i.module:
            edges.setdefault(i.module, set()).add(i.target)
    found = cycles(edges)
    assert not found, f"module-level import cycles: {found}"


def test_every_module_is_in_a_layer() -> None:
    for module in library_modules():
        layer_of(module)  # raises, naming the module, when it is in none


def test_no_layer_imports_a_layer_above_it() -> None:
    modules = library_modules()
    bad = sorted(
        f"{i.module}:{i.line} ({LAYERS[layer_of(i.module)][0]}) imports {i.target} "
        f"({LAYERS[layer_of(i.target)][0]})"
        for i in library_imports()
        if i.target in modules
        and i.module not in CLI_ENTRY_POINTS
        and layer_of(i.target) > layer_of(i.module)
    )
    assert not bad, f"an import reaches up a layer: {bad}"


def test_the_checks_see_what_they_look_for() -> None:
    """The scanner finds local, TYPE_CHECKING and relative imports, and cycles."""
    source = (
        "import os\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from crawlkit.b import B\n"
        "def f():\n"
        "    from crawlkit import c\n"
        "    import numpy\n"
        "from . import d\n"
    )
    modules = {"crawlkit.a", "crawlkit.b", "crawlkit.c", "crawlkit.d"}
    found = {(i.target, i.local) for i in imports_of(source, "crawlkit.a", modules)}
    assert ("os", False) in found
    assert ("crawlkit.b", True) in found
    assert ("crawlkit.c", True) in found
    assert ("numpy", True) in found
    assert ("crawlkit.d", False) in found
    assert ("crawlkit", False) not in found  # `from crawlkit import c` names crawlkit.c
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert layer_of("crawlkit.warc.read") < layer_of("crawlkit.stages.fetch")
    assert layer_of("crawlkit.errors") < layer_of("crawlkit.url")
    assert layer_of("crawlkit.stages.audit") < layer_of("crawlkit.crawl.loop")


def raised_names(roots: list[Path]) -> set[str]:
    """Names of the exception classes raised (``raise X(...)``, ``raise m.X``) under roots."""
    names: set[str] = set()
    for root in roots:
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if isinstance(node, ast.Raise) and node.exc is not None:
                    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                    if isinstance(exc, ast.Name):
                        names.add(exc.id)
                    elif isinstance(exc, ast.Attribute):
                        names.add(exc.attr)
    return names


def test_every_exported_error_is_raised() -> None:
    """The public exception tree holds only errors something raises (a subclass that is
    raised keeps its base in use, as for CrawlkitError)."""
    import crawlkit

    exported = [
        obj
        for name in crawlkit.__all__
        if isinstance(obj := getattr(crawlkit, name), type) and issubclass(obj, Exception)
    ]
    raised = raised_names([LIBRARY, ROOT / "cli"])
    unused = [
        cls.__name__
        for cls in exported
        if not any(sub.__name__ in raised for sub in exported if issubclass(sub, cls))
    ]
    assert not unused, f"exported and never raised: {unused}"
