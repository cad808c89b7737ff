"""The compiled matcher of one merged group: the deciding rule for a path, fast."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Sequence
from typing import Any

from crawlkit.robots._normalize import target_of
from crawlkit.robots._rules import ALLOWED, Rule, Verdict


def _trie_regex(keys: Iterable[str]) -> str:
    """A regex whose greedy match on a path is the longest key that prefixes it.

    Built as a radix tree of nested groups; a key's end makes the rest of its branch
    optional, so backtracking falls back to the longest key that matched.
    """
    root: dict[str, Any] = {}
    for key in keys:
        node = root
        for ch in key:
            node = node.setdefault(ch, {})
        node[""] = True

    def emit(node: dict[str, Any]) -> str:
        out: list[str] = []
        while "" not in node and len(node) == 1:
            (ch, child), *_ = node.items()
            out.append(re.escape(ch))
            node = child
        kids = sorted(c for c in node if c != "")
        if kids:
            alts = [re.escape(c) + emit(node[c]) for c in kids]
            body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
            out.append(f"(?:{body})?" if "" in node else body)
        return "".join(out)

    return emit(root)


def _find_regex(piece: str) -> str:
    """A regex that skips to the end of the leftmost occurrence of ``piece``.

    Same as the atomic lazy ``(?>.*?piece)``, but runs of characters that cannot start
    ``piece`` are skipped by a possessive character class, about four times faster.
    """
    first, rest = re.escape(piece[0]), re.escape(piece[1:])
    if not rest:
        return f"[^{first}]*+{first}"
    return f"(?>[^{first}]*+(?:{first}(?!{rest})[^{first}]*+)*+){first}{rest}"


def _wildcard_regex(pattern: str) -> str:
    """A regex for one normalised pattern with ``*`` and/or a final ``$``.

    Every ``*`` but a last one before ``$`` skips to the leftmost occurrence of the next
    literal piece and never backtracks: taking the leftmost occurrence of each piece
    is enough to decide a match, and no backtracking keeps a hostile pattern
    (``/*a*a*a*a*b``) linear.
    """
    anchored = pattern.endswith("$")
    if anchored:
        pattern = pattern[:-1]
    parts = re.sub(r"\*+", "*", pattern).split("*")
    out = [re.escape(parts[0])]
    if len(parts) == 1:
        return out[0] + (r"\Z" if anchored else "")
    for piece in parts[1:-1]:
        out.append(_find_regex(piece))
    last = parts[-1]
    if anchored:
        out.append(f".*{re.escape(last)}\\Z")
    elif last:
        out.append(_find_regex(last))
    return "".join(out)


_TRIE_MAX_KEY = 1024  # longer literal patterns go to the wildcard list (bounded nesting)
# Above this many literal prefixes, building and compiling the radix regex costs more
# (about 45 ms per 1,000 keys, all of it holding the GIL) than it saves; a table
# probed once per distinct key length is built in a few milliseconds instead.
_TRIE_MAX_KEYS = 400
_WILD_CHUNK = 500  # wildcard rules per compiled alternation
# Compiling costs about 0.1 s per 1,000 wildcard rules (in Python, holding the GIL); past
# this many, the rest of a (hostile) group is matched by plain string search instead.
_WILD_REGEX_MAX = 2000


Hit = tuple[int, Verdict]  # (rank, verdict): rank = 2 * pattern octets + 1 for allow


def _rank(rule: Rule) -> int:
    """Longest pattern in octets wins; ``allow`` wins a tie (RFC 9309 2.2.2), as one int."""
    return 2 * len(rule.normalized) + (1 if rule.allow else 0)


class _Matcher:
    """Finds the deciding rule of one merged group for a path, quickly.

    Rules fall in three kinds, each searched in one step and compared by rank:
    literal prefixes (one regex over a radix tree, or for big groups a table probed
    once per distinct key length, longest first: the longest prefix wins among them,
    and for these rank follows length), literal patterns ending in ``$`` (one dict
    lookup of the whole path), and patterns with ``*`` (one alternation ordered by
    rank, so its first match is its best). Each rule's :class:`Verdict` is built once.
    """

    __slots__ = ("_exact", "_lengths", "_prefix", "_prefix_rx", "_slow", "_wild", "_wild_hits")

    def __init__(self, rules: Sequence[Rule]):
        prefix: dict[str, Hit] = {}
        exact: dict[str, Hit] = {}
        wild: list[tuple[int, Rule]] = []
        for rule in rules:
            pat = rule.normalized
            if not pat:
                continue  # an empty pattern is no rule (RFC 9309 2.2.2)
            hit = (_rank(rule), Verdict(rule.allow, rule.text))
            if "*" in pat or len(pat) > _TRIE_MAX_KEY:
                wild.append((hit[0], rule))
            elif pat.endswith("$"):
                _keep_best(exact, pat[:-1], hit)
            else:
                _keep_best(prefix, pat, hit)
        self._prefix = prefix
        self._exact = exact
        self._prefix_rx: re.Pattern[str] | None = None
        self._lengths: list[int] = []
        if 0 < len(prefix) <= _TRIE_MAX_KEYS:
            # Keys nested hundreds deep (/a, /aa, /aaa, ...) overflow re's parser; the
            # table below serves them instead.
            with contextlib.suppress(RecursionError, re.error, OverflowError, MemoryError):
                self._prefix_rx = re.compile(_trie_regex(prefix), re.DOTALL)
        if prefix and self._prefix_rx is None:
            self._lengths = sorted({len(k) for k in prefix}, reverse=True)
        wild.sort(key=lambda rank_rule: rank_rule[0], reverse=True)
        compiled, rest = wild[:_WILD_REGEX_MAX], wild[_WILD_REGEX_MAX:]
        self._wild_hits: list[Hit] = [(rank, Verdict(r.allow, r.text)) for rank, r in compiled]
        self._wild: list[tuple[int, re.Pattern[str]]] = []  # (best rank in chunk, regex)
        for start in range(0, len(compiled), _WILD_CHUNK):  # chunks keep each regex small
            chunk = compiled[start : start + _WILD_CHUNK]
            alts = "|".join(f"({_wildcard_regex(r.normalized)})" for _, r in chunk)
            self._wild.append((chunk[0][0], re.compile(alts, re.DOTALL)))
        self._slow = [(rank, *_pieces(r.normalized), Verdict(r.allow, r.text)) for rank, r in rest]

    def best(self, path: str) -> Verdict | None:
        """The verdict of the deciding rule for a normalised path; None if none matches."""
        best: Hit | None = None
        if self._prefix_rx is not None:
            m = self._prefix_rx.match(path)
            if m is not None:
                best = self._prefix[m.group(0)]
        elif self._lengths:
            n = len(path)
            get = self._prefix.get
            for length in self._lengths:
                if length <= n:
                    best = get(path[:length])
                    if best is not None:
                        break
        if self._exact:
            hit = self._exact.get(path)
            if hit is not None and (best is None or hit[0] > best[0]):
                best = hit
        # Wildcard rules, best rank first: stop at the first match, or as soon as no
        # remaining rule could outrank what was found already.
        offset = 0
        for top, rx in self._wild:
            if best is not None and top <= best[0]:
                return best[1]
            m = rx.match(path)
            if m is not None:
                hit = self._wild_hits[offset + m.lastindex - 1]  # type: ignore[operator]
                return hit[1] if best is None or hit[0] > best[0] else best[1]
            offset += _WILD_CHUNK
        for rank, pieces, anchored, verdict in self._slow:
            if best is not None and rank <= best[0]:
                break
            if _greedy_match(pieces, anchored, path):
                return verdict
        return None if best is None else best[1]


def _pieces(pattern: str) -> tuple[tuple[str, ...], bool]:
    """A normalised pattern as its literal pieces between ``*`` and whether ``$`` ends it."""
    anchored = pattern.endswith("$")
    return tuple((pattern[:-1] if anchored else pattern).split("*")), anchored


def _greedy_match(pieces: tuple[str, ...], anchored: bool, path: str) -> bool:
    """Does ``path`` match ``pieces[0] * pieces[1] * ... [$]``? Leftmost search for each
    piece decides it (the same argument as in :func:`_wildcard_regex`)."""
    if not path.startswith(pieces[0]):
        return False
    pos = len(pieces[0])
    for piece in pieces[1:-1]:
        found = path.find(piece, pos)
        if found < 0:
            return False
        pos = found + len(piece)
    last = pieces[-1]
    if len(pieces) == 1:
        return not anchored or len(path) == pos
    if anchored:
        return path.endswith(last) and len(path) - len(last) >= pos
    return path.find(last, pos) >= 0


def _keep_best(table: dict[str, Hit], key: str, hit: Hit) -> None:
    old = table.get(key)
    if old is None or hit[0] > old[0]:
        table[key] = hit


class GroupView:
    """A merged group, compiled: the verdict for a URL."""

    __slots__ = ("crawl_delay", "matcher")

    def __init__(self, rules: Sequence[Rule], crawl_delay: float | None):
        self.matcher = _Matcher(rules)
        self.crawl_delay = crawl_delay

    def check(self, url: str) -> Verdict:
        path = target_of(url)
        if path == "/robots.txt" or path.startswith("/robots.txt?"):
            return ALLOWED  # RFC 9309 2.2.2: the file itself is always allowed
        verdict = self.matcher.best(path)
        return ALLOWED if verdict is None else verdict
