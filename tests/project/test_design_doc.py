"""The contract ships with the project: docs/design.md lists every invariant the code
cites, and the README links it instead of a file outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design.md"
SELF = Path(__file__).resolve()
# "invariant 4", "invariants 2 and 3", "invariants 2, 3, 7", "Invariant 1"
CITATION = re.compile(r"[Ii]nvariants? (\d+(?:(?:, | and )\d+)*)")


def listed_invariants() -> set[int]:
    text = DESIGN.read_text("utf-8")
    section = text.split("## Invariants", 1)[1].split("\n## ", 1)[0]
    return {int(n) for n in re.findall(r"^(\d+)\. ", section, re.M)}


def cited_invariants() -> dict[int, list[str]]:
    cited: dict[int, list[str]] = {}
    for folder in ("crawlkit", "cli", "tests", "bench"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix not in (".py", ".md") or not path.is_file() or path == SELF:
                continue
            for match in CITATION.finditer(path.read_text("utf-8", errors="replace")):
                for n in re.findall(r"\d+", match.group(1)):
                    cited.setdefault(int(n), []).append(str(path.relative_to(ROOT)))
    return cited


def test_every_cited_invariant_is_listed_in_docs_design_md() -> None:
    listed = listed_invariants()
    assert listed == set(range(1, len(listed) + 1))
    missing = {n: where[:3] for n, where in cited_invariants().items() if n not in listed}
    assert not missing, f"cited but not in docs/design.md: {missing}"


def test_the_checker_finds_a_citation_of_a_missing_invariant() -> None:
    text = "as invariants 2 and 41 say; see invariant 3"
    found = {int(n) for m in CITATION.finditer(text) for n in re.findall(r"\d+", m.group(1))}
    assert found == {2, 41, 3}
    assert 41 not in listed_invariants()


def test_the_readme_links_the_design_in_the_repository() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    assert "](docs/design.md)" in readme
    assert "DESIGN.md" not in readme
    for folder in ("crawlkit", "cli"):
        for path in (ROOT / folder).rglob("*.py"):
            assert "DESIGN.md" not in path.read_text("utf-8"), path
