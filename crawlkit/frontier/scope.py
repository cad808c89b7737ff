"""Which URLs a crawl follows: ``--scope host|site|any|REGEX`` of ``seen-merge`` and
``frontier add``.

``seen-merge --scope`` refuses out-of-scope URLs before they are marked seen, so a
URL found while outside the scope is still new once a later seed widens it;
``frontier add --scope`` refuses them before they are queued.

``host`` and ``site`` are relative to the seeds: a URL record with ``reason: "seed"``
widens the scope (its host, its registered domain) and is always let in; so does a
seed's redirect target (``seed_redirect``, within ``--max-hops``), as Heritrix takes
it for a seed: ``http://example.com/`` answering with ``https://www.example.com/``
(or a domain that moved) otherwise crawled nothing but the redirect under ``host``.
Any other URL record must be on a seed's host (``host``) or site (``site``). A regex is
searched in the URL, in linear time (:mod:`crawlkit.patterns`: RE2 syntax), and a
URL longer than 2,000 characters is refused (``url-length``) before it runs.
``any`` lets everything in.

Two kinds of record pass whatever the scope: records without a URL (dedup's site
records, which only tune budgets) and page requisites (``reason: "requisite"``, or
``requisite_hops`` > 0 on a redirect), which an archive fetches wherever they live
(their depth is bounded by the link step of ``crawl``; see :mod:`crawlkit.crawl.archive`).

The seeds' hosts and sites are kept in ``STATE/scope.json`` so that every later
``frontier add --scope`` (and every run of ``crawl``) judges by the same seeds. A
state directory of an older crawl has them in ``STATE/crawl/scope.json``; that file
is read when the first one is missing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from crawlkit import streams
from crawlkit.errors import InvalidURL, UsageError
from crawlkit.patterns import MAX_URL_LENGTH, Pattern, compile_pattern, too_long
from crawlkit.records import Record, Refusal, refusal
from crawlkit.url import Canonicalizer, set_process_rules

__all__ = ["SCOPES", "Scope", "adopt_state_rules", "scope_file"]

SCOPES = ("host", "site", "any")
_LEGACY = Path("crawl") / "scope.json"


def scope_file(state: str | Path) -> Path:
    """Where the scope of the state directory ``state`` is kept."""
    return Path(state) / "scope.json"


class Scope:
    """A scope spec and the seeds' hosts and sites it is relative to."""

    def __init__(self, spec: str, *, max_url_length: int = MAX_URL_LENGTH):
        self.spec = spec
        # the URL rules of the crawl (crawl --rules), kept with its seeds so every
        # later run names URLs as the first did
        self.rules = "default"
        self.max_url_length = max_url_length
        self.hosts: set[str] = set()
        self.sites: set[str] = set()
        self.state: Path | None = None  # where it is kept (see load and save)
        self.changed = False  # seeds added since it was loaded or saved
        self.regex: Pattern | None = None
        if spec not in SCOPES:
            try:
                self.regex = compile_pattern(spec, "--scope")
            except UsageError as exc:
                raise UsageError(f"{exc} (--scope is host, site, any or a regex)") from exc

    def add_seed(self, record: Record) -> None:
        """Widen the scope by a seed's host and site (canonical URL record fields)."""
        host, site = str(record.get("host")), str(record.get("site"))
        if host not in self.hosts or site not in self.sites:
            self.hosts.add(host)
            self.sites.add(site)
            self.changed = True

    def why_not(self, record: Record) -> str | None:
        """None if the URL record is in scope, else a one-line reason naming the scope."""
        if self.spec == "any":
            return None
        if self.spec == "host":
            host = record.get("host")
            return (
                None if host in self.hosts else f"host {host} is not a seed's host (--scope host)"
            )
        if self.spec == "site":
            site = record.get("site")
            return (
                None if site in self.sites else f"site {site} is not a seed's site (--scope site)"
            )
        assert self.regex is not None
        if self.regex.search(str(record.get("url"))):
            return None
        return f"url does not match --scope {self.spec}"

    def sort(
        self, records: Iterable[Record], refused: list[Refusal], canon: Canonicalizer
    ) -> Iterator[Record]:
        """The records to queue; the others are appended to ``refused`` (see
        :meth:`refusal`)."""
        for rec in records:
            out = self.refusal(rec, canon)
            if out is None:
                yield rec
            else:
                refused.append(out)

    def refusal(self, rec: Record, canon: Canonicalizer) -> Refusal | None:
        """None if ``rec`` may pass, else its refused record (``"refused":
        "out-of-scope"`` and a ``detail`` saying why). A seed widens the scope as it
        passes. A URL that does not parse passes, for the next stage to refuse it."""
        url = rec.get("url")
        if url is None or _is_requisite(rec):
            return None
        seed = rec.get("reason") == "seed" or (
            rec.get("seed_redirect") is True and self.regex is None
        )
        if self.spec == "any" and not seed:
            return None  # (seeds are kept under any too: a later add may narrow it)
        fields = rec
        if not rec.get("host") or not rec.get("site"):
            try:
                parsed = canon.parse(str(url))
            except InvalidURL:
                return None
            fields = {**rec, "url": parsed.url, "host": parsed.host, "site": parsed.site}
        if seed:
            self.add_seed(fields)
            return None
        if self.regex is not None:
            length = too_long(str(fields["url"]), self.max_url_length)
            if length is not None:  # before the pattern runs on it
                return refusal(rec, "url-length", length)
        why = self.why_not(fields)
        if why is None:
            return None
        return refusal(rec, "out-of-scope", why)

    def to_json(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "hosts": sorted(self.hosts),
            "sites": sorted(self.sites),
            "rules": self.rules,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Scope:
        scope = cls(data["spec"])
        scope.hosts = set(data.get("hosts", []))
        scope.sites = set(data.get("sites", []))
        scope.rules = str(data.get("rules") or "default")
        return scope

    @classmethod
    def saved(cls, state: str | Path) -> Scope | None:
        """The scope kept in the state directory ``state``, or None."""
        for path in (scope_file(state), Path(state) / _LEGACY):
            if path.exists():
                return cls.from_json(streams.read_json(path))
        return None

    @classmethod
    def load(cls, state: str | Path, spec: str) -> Scope:
        """Scope ``spec`` relative to the seeds kept in ``state`` (none yet: no seeds)."""
        scope = cls(spec)
        saved = cls.saved(state)
        if saved is not None:
            scope.hosts, scope.sites, scope.rules = saved.hosts, saved.sites, saved.rules
        scope.state = Path(state)
        return scope

    def save(self, state: str | Path | None = None) -> None:
        """Keep the spec and the seeds in ``state`` (default: where it was loaded from),
        atomically."""
        where = Path(state) if state is not None else self.state
        if where is None:
            raise ValueError("Scope.save: no state directory")
        streams.atomic_write_json(scope_file(where), self.to_json())
        self.state, self.changed = where, False


def _is_requisite(rec: Record) -> bool:
    hops = rec.get("requisite_hops")
    return rec.get("reason") == "requisite" or (isinstance(hops, int) and hops > 0)


def adopt_state_rules(state: str | Path) -> None:
    """Name URLs in this process as the crawl of ``state`` names them (its ``--rules``,
    kept with its seeds): fetch's redirects, seen-merge's and frontier add's URLs."""
    saved = Scope.saved(state)
    if saved is not None:
        set_process_rules(saved.rules)
