"""Verdicts, rules and groups: the values the parser builds and the matcher returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Verdict:
    """The answer to "may this agent fetch this URL".

    ``rule`` is the deciding line as ``"Disallow: /private/"`` or ``"Allow: /a$"``
    (the pattern as written in the file), or None when no rule matched, or when a
    policy decided (unreachable file, ``/robots.txt`` itself).
    """

    allowed: bool
    rule: str | None


ALLOWED = Verdict(True, None)
DENIED = Verdict(False, None)


@dataclass(frozen=True)
class Rule:
    """One ``allow``/``disallow`` line: the pattern as written and as compared."""

    allow: bool
    pattern: str  # as written, trimmed
    normalized: str  # percent-encoding normalised; what is matched and measured
    line: int

    @property
    def text(self) -> str:
        return f"{'Allow' if self.allow else 'Disallow'}: {self.pattern}"

    @property
    def priority(self) -> tuple[int, bool]:
        """Longest pattern in octets wins; ``allow`` wins a tie (RFC 9309 2.2.2)."""
        return (len(self.normalized), self.allow)


@dataclass
class Group:
    """One group of the file: the tokens of its ``user-agent`` lines and its members."""

    agents: list[str]  # lowercased product tokens; "*" for the catch-all, "" if unusable
    line: int
    rules: list[Rule] = field(default_factory=list)
    crawl_delay: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "agents": list(self.agents),
            "line": self.line,
            "crawl_delay": self.crawl_delay,
            "rules": [
                {
                    "allow": r.allow,
                    "pattern": r.pattern,
                    "normalized": r.normalized,
                    "line": r.line,
                    "rule": r.text,
                }
                for r in self.rules
            ],
        }
