"""Every declared dependency earns its place, and the README says what it is for.

A runtime dependency (pyproject ``[project] dependencies``) must be imported by the
library (``crawlkit/``) or the CLI (``cli/``): one that only a test or a benchmark uses
belongs in an extra. Every dependency, runtime or extra, must be named in the README's
"Dependencies and why" paragraph.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Distribution names whose import name is not the name with "-" turned into "_".
IMPORT_NAMES = {"ada-url": "ada_url", "pyyaml": "yaml", "google-re2": "re2"}


def distribution(requirement: str) -> str:
    """``"ada-url>=1.15,<5"`` -> ``"ada-url"`` (lower case, extras and markers dropped)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, f"not a requirement: {requirement!r}"
    return match.group(1).lower()


def import_name(dist: str) -> str:
    return IMPORT_NAMES.get(dist, dist.replace("-", "_").replace(".", "_"))


def imported_modules(roots: Iterable[Path]) -> set[str]:
    """Top-level names of every absolute import in the .py files under ``roots``,
    function-local imports included."""
    names: set[str] = set()
    for root in roots:
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
                if isinstance(node, ast.Import):
                    names.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names.add(node.module.split(".")[0])
    return names


def dependency_paragraph(readme: str) -> str:
    """The README paragraph that starts with "Dependencies and why"."""
    start = readme.find("Dependencies and why")
    assert start >= 0, 'README has no "Dependencies and why" paragraph'
    end = readme.find("\n\n", start)
    return readme[start : end if end >= 0 else len(readme)]


def not_imported(deps: Iterable[str], imported: set[str]) -> list[str]:
    return [d for d in deps if import_name(d) not in imported]


def not_named(deps: Iterable[str], paragraph: str) -> list[str]:
    text = paragraph.lower()
    return [d for d in deps if not re.search(rf"(?<![\w-]){re.escape(d)}(?![\w-])", text)]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))


def runtime_dependencies() -> list[str]:
    return [distribution(r) for r in _pyproject()["project"]["dependencies"]]


def extra_dependencies() -> list[str]:
    extras = _pyproject()["project"]["optional-dependencies"]
    deps = {distribution(r) for reqs in extras.values() for r in reqs}
    deps.discard("crawlkit")  # crawlkit[testweb]: the test extra includes another extra
    return sorted(deps)


def test_every_runtime_dependency_is_imported_by_the_library_or_the_cli() -> None:
    imported = imported_modules([ROOT / "crawlkit", ROOT / "cli"])
    missing = not_imported(runtime_dependencies(), imported)
    assert not missing, (
        f"runtime dependencies that crawlkit/ and cli/ never import: {missing}; "
        "move them to an extra (test, bench) or drop them"
    )


def test_every_dependency_is_named_in_the_readme() -> None:
    paragraph = dependency_paragraph((ROOT / "README.md").read_text("utf-8"))
    missing = not_named(runtime_dependencies() + extra_dependencies(), paragraph)
    assert not missing, f'README\'s "Dependencies and why" does not name: {missing}'


def test_the_checks_catch_an_unused_or_unexplained_dependency() -> None:
    """The two checks above report what they should (so they can fail)."""
    assert distribution("uvloop>=0.19,<1; sys_platform != 'win32'") == "uvloop"
    assert distribution("crawlkit[testweb]") == "crawlkit"
    imported = imported_modules([ROOT / "cli"])
    assert "typer" in imported
    assert not_imported(["typer", "ada-url", "sortedcontainers"], {"typer", "ada_url"}) == [
        "sortedcontainers"
    ]
    paragraph = "Dependencies and why: numpy (Bloom probes), ada-url (URLs)."
    assert not_named(["numpy", "ada-url", "url", "httpx"], paragraph) == ["url", "httpx"]
