"""Per-site page budgets (IRLbot's STAR idea) and what the frontier knows of each site.

A *site* is a registered domain (docs/design.md), so a million subdomains of one site
share one budget. Each site may be handed out at most ``budget(site)`` URLs per
cycle; URLs over budget are parked, not dropped, and come back next cycle.

The budget grows with the number of distinct *credited* sites that link to it:

    budget   = base + per_linker * credited + (seed_bonus if a seed's site)
    credited = distinct linking sites L, other than the site S itself, such that L is
               trusted and S does not link back to L
    trusted  = a seed's site, or a site with at least ``trust_links`` (2) credited
               linkers

Two rules keep a link farm poor. Reciprocal links do not count (a link exchange is
the oldest trick, and sites that only link to each other link back and forth), so a
farm whose members all link to each other credits nothing, even when its members
were given as seeds. And trust is the least fixpoint of the rule above, grown from
the seeds outward, so a farm that links in one direction (A→B→C→A) with no trusted
site pointing in earns nothing either: no member is trusted, so none credits
another. Each farm site keeps the base budget (plus the seed bonus if an operator
seeded it: a seed counts as the operator vouching for the site once). (STAR proper
distributes budget along links in proportion to the linker's own budget; these
rules are simpler to keep incrementally and have the property that matters:
in-links that cost nothing to make, from sites nobody else vouches for, are worth
nothing.) Links marked ``nofollow`` are not counted: the linking site said it does
not vouch for them. At most ``max_linkers`` linkers are remembered per site, which also caps
the budget.

A site whose recent pages are mostly copies (dedup's site records: ``yield`` is the
share of exact and near copies among ``pages``) has its budget multiplied by
``1 - yield`` (never below ``min_factor``) once ``pages`` reaches ``min_yield_pages``.
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

__all__ = ["BudgetPolicy", "SiteInfo", "SiteTable", "has_linker"]


def has_linker(linkers: tuple[str, ...] | None, name: str) -> bool:
    """True if ``name`` is in a site's ``linkers`` (a sorted tuple, or None)."""
    if not linkers:
        return False
    i = bisect_left(linkers, name)
    return i < len(linkers) and linkers[i] == name


def _linkers(names: Any) -> tuple[str, ...] | None:
    """Linkers as kept: a sorted tuple of interned names (None when there are none).

    A sorted tuple costs 8 bytes a linker where a set costs 16 to 64 (its table is
    kept at most 3/5 full and grows 4-fold: 5 linkers take 32 slots, 728 bytes), and
    interning shares one string among every site a linker links to (a hub's name
    would otherwise be a new string in each of them). Membership is a bisection.
    """
    return tuple(sorted({sys.intern(name) for name in names})) if names else None


@dataclass(frozen=True)
class BudgetPolicy:
    """Budget parameters (pages per site per cycle)."""

    base: int = 10
    per_linker: int = 100
    seed_bonus: int = 100
    trust_links: int = 2
    max_linkers: int = 256
    min_yield_pages: int = 5
    min_factor: float = 0.1


class SiteInfo:
    """Counters and signals of one site (registered domain)."""

    __slots__ = ("fetched", "linkers", "parked", "queued", "seed", "used", "yield_", "yield_pages")

    def __init__(self) -> None:
        self.queued = 0  # URLs in the queues (parked ones excluded)
        self.parked = 0  # URLs waiting for the next cycle's budget
        self.used = 0  # URLs handed out this cycle
        self.fetched = 0  # URLs ever handed out
        self.seed = False
        self.yield_: float | None = None
        self.yield_pages = 0
        self.linkers: tuple[str, ...] | None = None  # sorted, see _linkers

    def to_json(self) -> list[Any]:
        return [*self.counters_json(), list(self.linkers) if self.linkers else []]

    def counters_json(self) -> list[Any]:
        """:meth:`to_json` without its last field, the linkers."""
        return [
            self.queued,
            self.parked,
            self.used,
            self.fetched,
            int(self.seed),
            self.yield_,
            self.yield_pages,
        ]

    @classmethod
    def from_json(cls, value: list[Any]) -> SiteInfo:
        info = cls()
        (
            info.queued,
            info.parked,
            info.used,
            info.fetched,
            seed,
            info.yield_,
            info.yield_pages,
            linkers,
        ) = value
        info.seed = bool(seed)
        info.linkers = _linkers(linkers)
        return info


class SiteTable:
    """All sites the frontier knows, with link, seed and yield signals and budgets.

    ``changed`` holds the sites that may have changed since :meth:`take_changes` (the
    frontier journals only those): every site handed out by :meth:`get`, which is how
    callers reach a :class:`SiteInfo` to change it. Code that changes a site reached
    another way (iterating ``sites``) must add it to ``changed``.
    """

    def __init__(self, policy: BudgetPolicy | None = None):
        self.policy = policy or BudgetPolicy()
        self.sites: dict[str, SiteInfo] = {}
        self._trusted: set[str] | None = None  # None: recompute before use
        self._votes: dict[str, int] = {}  # untrusted site -> credited trusted linkers
        self._out_links: dict[str, list[str]] = {}  # site -> sites it links to (if trusted)
        self._rank: dict[str, int] = {}  # trusted site -> the order it became trusted in
        self.version = 0  # goes up whenever a budget may have changed
        self._budgets: dict[str, int] = {}  # budget() as of _budgets_version
        self._budgets_version = -1
        self.changed: set[str] = set()
        # Since take_changes: the linkers each site gained, and the sites whose
        # linkers changed otherwise (a handoff's merge), journaled whole.
        self._added: dict[str, list[str]] = {}
        self._whole: set[str] = set()

    def get(self, site: str) -> SiteInfo:
        """The site's info (created if new), counted as changed: callers may change it."""
        info = self.sites.get(site)
        if info is None:
            site = sys.intern(site)  # the same string as in other sites' linkers
            info = self.sites[site] = SiteInfo()
        self.changed.add(site)
        return info

    def take_changes(self) -> dict[str, list[Any]]:
        """The sites changed since the last call (see the class doc): each one's
        ``to_json``, but for its linkers only those it gained, as ``{"+": [names]}``
        (``{}``: none), unless they changed otherwise (then the whole list).

        A site keeps up to ``max_linkers`` (256) linkers, and most sites are touched
        by every few cycles' links: journaling each one's whole list made every
        commit cost more as the crawl went on (0.1 -> 0.56 s a commit over 200
        cycles of 12,500 links to 19,000 sites, ``bench/bench_links_step.py``).
        """
        sites, added, whole = self.sites, self._added, self._whole
        changes = {}
        for name in self.changed:
            info = sites[name]
            value = info.counters_json()
            if name in whole:
                value.append(list(info.linkers) if info.linkers else [])
            else:
                gained = added.get(name)
                value.append({"+": gained} if gained else {})
            changes[name] = value
        self.forget_changes()
        return changes

    def forget_changes(self) -> None:
        """Count nothing as changed (after loading: what was read is on disk)."""
        self.changed = set()
        self._added = {}
        self._whole = set()

    def apply_json(self, changes: dict[str, list[Any]]) -> None:
        """Apply ``changes`` (a :meth:`take_changes` value, or the whole entries an
        older crawlkit journaled): each site's counters are replaced, its linkers
        replaced by a list or joined by the names of a ``{"+": [...]}``."""
        sites = self.sites
        for name, value in changes.items():
            linkers = value[-1]
            if isinstance(linkers, dict):
                before = sites.get(name)
                known = before.linkers if before is not None and before.linkers else ()
                value = [*value[:-1], [*known, *linkers.get("+", ())]]
            sites[name] = SiteInfo.from_json(value)
        self._trusted = None
        self.version += 1

    def note_seed(self, site: str) -> None:
        info = self.get(site)
        if not info.seed:
            info.seed = True
            if self._trusted is not None and site not in self._trusted:
                self._spread([site])
            self.version += 1

    def note_link(self, site: str, from_site: str) -> None:
        """Remember that ``from_site`` links to ``site`` (links within a site ignored)."""
        if not from_site or from_site == site:
            return
        info = self.get(site)
        linkers = info.linkers
        if linkers is not None and (
            has_linker(linkers, from_site) or len(linkers) >= self.policy.max_linkers
        ):
            return
        # Names kept are interned: a record's own copy of a name (~60 bytes) would stay
        # alive for every link remembered, where a shared one costs 8 bytes a link.
        from_site = sys.intern(from_site)
        if linkers is None:
            info.linkers = (from_site,)
        else:
            i = bisect_left(linkers, from_site)
            info.linkers = (*linkers[:i], from_site, *linkers[i:])
        self._added.setdefault(site, []).append(from_site)
        self._keep_trust(sys.intern(site), from_site)
        self.version += 1

    def _keep_trust(self, site: str, from_site: str) -> None:
        """Keep the trusted set, if known, up to date with the link ``from_site`` ->
        ``site`` just learned, or drop it for recomputing when it may have shrunk.

        Trust is the least fixpoint of monotone votes, so a new vote only ever adds
        trusted sites, found by spreading from the new one (:meth:`_spread`): a link
        from an untrusted site gives no vote, and no new vote can make that site
        trusted (only its own vote for ``site`` is new); a link from a trusted site
        to an untrusted one is a vote. A link that makes a pair reciprocal takes a
        vote back, that of ``site`` for ``from_site`` (which counted only if ``site``
        is trusted): an untrusted ``from_site`` has one vote less, a trusted one
        stays trusted if the sites that made it trusted still suffice
        (:meth:`_still_grounded`); otherwise the whole graph is walked again.
        """
        trusted = self._trusted
        if trusted is None:
            return
        self._out_links.setdefault(from_site, []).append(site)
        back = self.sites.get(from_site)
        if back is not None and has_linker(back.linkers, site):
            if site not in trusted:
                return
            if from_site not in trusted:
                self._votes[from_site] -= 1
            elif not self._still_grounded(from_site):
                self._trusted = None
                self._out_links = {}
            return
        if from_site in trusted and site not in trusted:
            votes = self._votes.get(site, 0) + 1
            self._votes[site] = votes
            if votes >= self.policy.trust_links:
                self._spread([site])

    def note_yield(self, site: str, pages: int, yield_: float) -> None:
        info = self.get(site)
        info.yield_pages = pages
        info.yield_ = min(1.0, max(0.0, yield_))
        self.version += 1

    def linking_sites(self, site: str) -> int:
        info = self.sites.get(site)
        return len(info.linkers) if info is not None and info.linkers else 0

    def trusted(self) -> set[str]:
        """The trusted sites: seeds and, transitively, sites with enough credited linkers."""
        if self._trusted is not None:
            return self._trusted
        out_links: dict[str, list[str]] = {}
        for name, info in self.sites.items():
            if info.linkers:
                for linker in info.linkers:
                    out_links.setdefault(linker, []).append(name)
        self._out_links = out_links
        self._trusted = set()
        self._votes = {}
        self._rank = {}
        self._spread([name for name, info in self.sites.items() if info.seed])
        return self._trusted

    def _spread(self, new: list[str]) -> None:
        """Add the sites ``new`` to the trusted set, and every site their votes make
        trusted, transitively (the walk of :meth:`trusted`, from where it stood)."""
        trusted = self._trusted
        assert trusted is not None
        votes = self._votes
        out_links = self._out_links
        sites = self.sites
        need = self.policy.trust_links
        rank = self._rank
        for name in new:
            rank[name] = len(rank)
        trusted.update(new)
        work = list(new)
        while work:
            linker = work.pop()
            back = sites.get(linker)
            back_links = back.linkers if back is not None else None
            for target in out_links.get(linker, ()):
                if target in trusted or has_linker(back_links, target):
                    continue  # already trusted, or a reciprocal link (worth nothing)
                n = votes[target] = votes.get(target, 0) + 1
                if n >= need:
                    rank[target] = len(rank)
                    trusted.add(target)
                    work.append(target)

    def _still_grounded(self, site: str) -> bool:
        """True if the trusted ``site`` is a seed, or still has ``trust_links`` credited
        linkers among the sites trusted before it (its trust then rests where it did,
        and so does that of every site trusted after it)."""
        info = self.sites.get(site)
        if info is None:
            return False
        if info.seed:
            return True
        rank = self._rank
        own = rank[site]
        count = 0
        for linker in info.linkers or ():
            if rank.get(linker, own) >= own:
                continue  # untrusted, or trusted after ``site``
            back = self.sites.get(linker)
            if back is not None and has_linker(back.linkers, site):
                continue  # a reciprocal link
            count += 1
            if count >= self.policy.trust_links:
                return True
        return False

    def credited(self, site: str) -> int:
        """Distinct trusted sites linking to ``site`` that ``site`` does not link back to."""
        info = self.sites.get(site)
        if info is None or not info.linkers:
            return 0
        trusted = self.trusted()
        count = 0
        for linker in info.linkers:
            if linker in trusted:
                back = self.sites.get(linker)
                if back is None or not has_linker(back.linkers, site):
                    count += 1
        return count

    def budget(self, site: str) -> int:
        """Pages this site may be handed out per cycle (at least 1).

        Remembered until :attr:`version` changes (every change a budget rests on,
        a site's or its linkers', goes with a new version): batches between two
        adds ask again for the same sites.
        """
        if self._budgets_version != self.version:
            self._budgets = {}
            self._budgets_version = self.version
        pages = self._budgets.get(site)
        if pages is None:
            pages = self._budgets[site] = self._budget(site)
        return pages

    def _budget(self, site: str) -> int:
        policy = self.policy
        info = self.sites.get(site)
        pages = float(policy.base + policy.per_linker * self.credited(site))
        if info is not None and info.seed:
            pages += policy.seed_bonus
        if (
            info is not None
            and info.yield_ is not None
            and info.yield_pages >= policy.min_yield_pages
        ):
            pages *= max(policy.min_factor, 1.0 - info.yield_)
        return max(1, int(pages))

    def to_json(self) -> dict[str, list[Any]]:
        return {name: info.to_json() for name, info in self.sites.items()}

    def load_json(self, value: dict[str, list[Any]]) -> None:
        self.sites = {name: SiteInfo.from_json(v) for name, v in value.items()}
        self._trusted = None
        self.version += 1
        self.forget_changes()

    def adopt(self, site: str, other: SiteInfo) -> None:
        """Take over what another shard knew of ``site`` (a handoff moved it here).

        Linkers and the seed mark are merged; the budget used this period and the
        pages ever handed out keep the larger count, so a moved site does not start
        its period afresh; the dedup yield measured on more pages wins. Queue counts
        are not touched: the moved URLs arrive through the inbox.
        """
        info = self.get(site)
        if other.seed and not info.seed:
            info.seed = True
        if other.linkers:
            merged = set(info.linkers or ()) | set(other.linkers)
            info.linkers = _linkers(sorted(merged)[: self.policy.max_linkers])
            self._whole.add(site)
        info.used = max(info.used, other.used)
        info.fetched = max(info.fetched, other.fetched)
        if other.yield_ is not None and other.yield_pages >= info.yield_pages:
            info.yield_, info.yield_pages = other.yield_, other.yield_pages
        self._trusted = None
        self.version += 1

    def budget_grew(self) -> bool:
        """True when a site with parked URLs may now take more this cycle than it has
        (new linkers or a seed raised its budget after its URLs were parked)."""
        return any(
            info.parked and self.budget(name) > info.used for name, info in self.sites.items()
        )

    def new_cycle(self) -> None:
        for name, info in self.sites.items():
            if info.used:
                info.used = 0
                self.changed.add(name)

    def unpark_all(self) -> None:
        """Count every site's parked URLs as queued again (they went back to the queues)."""
        for name, info in self.sites.items():
            if info.parked:
                info.queued += info.parked
                info.parked = 0
                self.changed.add(name)
