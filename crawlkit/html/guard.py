"""Bound the tree builder's work on hostile HTML before it is parsed.

An HTML5 tree builder checks "is there an X in scope" by walking its stack of open
elements, so markup nested N deep costs O(N) for every later tag: one page of
``<div>`` x 100,000 took 23 s of CPU (quadratic), and a tag with 500,000 distinct
attribute names more than a minute (the duplicate check is quadratic too). Browsers cap
the tree's depth (Blink at 512); :func:`guard_markup` does the same before Lexbor sees
the page, with a cheap pre-scan (numpy, no Python loop per tag):

* Attributes are counted as the HTML tokenizer reads them (a name, then an optional
  ``=`` and a value, quoted or not), so words inside a quoted value are not
  attributes. A start tag with more than :data:`MAX_ATTRIBUTES` keeps its first ones;
  the scan looks only at start tags that are followed by at least two bytes a
  possible attribute before their ``>`` or the next tag, and not inside a script,
  a style or a comment.
* Nesting is estimated on pages of more than :data:`DEPTH_FROM` tags (fewer cost
  well under a tenth of a second in any shape). Every tag is found (``<name`` and
  ``</name``) outside comments and the raw-text elements (``script``, ``style``,
  ``textarea``, ``title``, ...), taken in page order: a raw-text element's content
  holds no tags up to its own end tag (names compared whole), a comment ends at
  ``-->`` or ``--!>``, and inside ``<svg>`` or ``<math>`` a ``<script>``, ``<style>``
  or ``<title>`` is an ordinary element. A tag's depth is the running count of start
  tags that can hold children minus the end tags that can close one (an end tag
  whose name has no element open, ``</x>``, closes nothing), never below zero. Void
  elements (``br``, ``img``, ...), elements whose end tag is implied by the next one
  (``p``, ``li``, ``td``, ``option``, ...), those of which one only is open at a time
  (``a``, ``nobr``, ``button``), raw-text elements and tags self-closed
  (``/>``) inside ``<svg>`` or ``<math>`` do not count; a tag that breaks out of
  foreign content (``<div>``, ``<p>``, ...) ends it, as the tree builder does. Where
  the scan is unsure it errs high. The tags inside comments and raw text count too,
  in a second estimate against the looser :data:`MAX_ANY_DEPTH`, so a region the scan
  takes for text and the tree builder does not (a ``<script>`` inside an attribute
  value) cannot hide a deep page.
* Start tags that would open an element deeper than :data:`MAX_DEPTH`, and the end tags
  that close such elements, are removed: the text inside them stays, one level up (as
  in a browser that caps depth), and so do links (an ``<a>`` is never counted).
  ``<html>`` and ``<body>`` start tags past the first :data:`MAX_REPEATS` are dropped
  (each adds its attributes to the one element, checked against all it has).

The scan re-implements a part of the tokenizer, so markup it does not expect can walk
past it: the hard bound of a page's work is the CPU deadline of the extract worker
(:mod:`crawlkit.stages.extract_page`); this guard makes the shapes it knows cheap and
keeps their content. Pages under :data:`SCAN_FROM` (64 KiB) are left alone: too small
to cost much. The page is still parsed and recorded; :func:`guard_markup` names the
caps it applied (``"depth"``, ``"attributes"``), which the extractor adds to
``Page.capped``. With these caps every shape in ``bench/bench_extract.py --hostile``
parses in well under a second up to the 5 MB HTML cap.
"""

from __future__ import annotations

import bisect
import functools
import re

import numpy as np
import numpy.typing as npt

__all__ = [
    "DEPTH_FROM",
    "MAX_ANY_DEPTH",
    "MAX_ATTRIBUTES",
    "MAX_DEPTH",
    "MAX_REPEATS",
    "SCAN_FROM",
    "guard_markup",
]

MAX_DEPTH = 128
"""Deepest element kept (real pages nest well under 100; the cost of every later tag
grows with it: 1M ``<li>`` at depth 512 take 1.2 s to parse, at 128 0.5 s)."""
MAX_ATTRIBUTES = 256
"""Attributes kept per start tag (5 MB of tags with 1,000 attributes each take 1.1 s to
parse, with 256 each 0.3 s)."""

SCAN_FROM = 64 * 1024
"""Pages shorter than this are not scanned: whatever their shape they parse in about
0.25 s at most (the worst found: ``<ul><li>`` nested to the end, 0.26 s), and most
pages are that small, for which the scan (0.2 ms) would add a fifth to extract."""

DEPTH_FROM = 8192
"""Tags (``<name`` or ``</name`` anywhere) from which the nesting is estimated: 8,000
tags nested as deep as they go parse in about 0.07 s, and a real page of 140 KB has
about 2,000."""

MAX_ANY_DEPTH = 4 * MAX_DEPTH
"""Deepest element kept when every tag counts, those inside comments and raw text too
(see :meth:`_Scan.too_deep`); real pages stay far below it."""

MAX_REPEATS = 8
"""``<html>`` and ``<body>`` start tags kept per page (later ones are dropped)."""

MAX_REGIONS = 50_000
"""Comments and raw-text elements taken in page order at most (a Python step each);
past them the tags of the rest count, which errs high."""

_NAME_WIDTH = 8  # tag names are told apart by their first 8 bytes

_VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "param",
    "source",
    "track",
    "wbr",
    "keygen",
    "frame",
    "basefont",
    "bgsound",
    "image",
}
# Closed by the next of their kind (or a sibling), so they never nest by themselves.
_IMPLIED_END = {
    "p",
    "li",
    "dt",
    "dd",
    "option",
    "optgroup",
    "tr",
    "td",
    "th",
    "tbody",
    "thead",
    "tfoot",
    "rb",
    "rt",
    "rp",
    "rtc",
    "colgroup",
    "caption",
    "html",
    "head",
    "body",
}
# A start tag of these ends the open one of its kind (the tree builder's adoption agency
# for <a> and <nobr>, "a button in scope" for <button>): at most one is open at a time,
# so however many follow unclosed (<a name="x"/> is an open <a> in HTML) they add one
# level at most. Counted as nesting, 300 of them capped a shallow page and its links.
_ONE_OPEN = {"a", "nobr", "button"}
_RAWTEXT = ("script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes")
_FOREIGN = {"svg", "math"}
# Start tags that end foreign content (WHATWG "in foreign content"; font always).
_BREAKOUT = {
    "b",
    "big",
    "blockquote",
    "body",
    "br",
    "center",
    "code",
    "dd",
    "div",
    "dl",
    "dt",
    "em",
    "embed",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "hr",
    "i",
    "img",
    "li",
    "listing",
    "menu",
    "meta",
    "nobr",
    "ol",
    "p",
    "pre",
    "ruby",
    "s",
    "small",
    "span",
    "strong",
    "strike",
    "sub",
    "sup",
    "table",
    "tt",
    "u",
    "ul",
    "var",
    "font",
}

_WS = np.zeros(256, dtype=np.bool_)
_WS[[9, 10, 12, 13, 32]] = True
_NAME_END = _WS.copy()
_NAME_END[[ord("/"), ord(">")]] = True
_LETTER = np.zeros(256, dtype=np.bool_)
_LETTER[ord("a") : ord("z") + 1] = True
_LETTER[ord("A") : ord("Z") + 1] = True
_LOWER = np.arange(256, dtype=np.uint8)
_LOWER[ord("A") : ord("Z") + 1] += 32


def _key(name: str) -> int:
    """A tag name's first 8 bytes as a little-endian integer (how the scan reads them)."""
    return int.from_bytes(name.encode()[:_NAME_WIDTH], "little")


# Each known name's flags; a name not listed holds children and ends nothing.
_NOCOUNT, _FOREIGN_ROOT, _BREAKS_OUT, _RAW = 1, 2, 4, 8
_FLAGS: dict[int, int] = {}
_LONG_NAMES: dict[int, bytes] = {}  # known names longer than the key, by key
for _names, _flag in (
    (_VOID | _IMPLIED_END | _ONE_OPEN | set(_RAWTEXT), _NOCOUNT),
    (_FOREIGN, _FOREIGN_ROOT),
    (_BREAKOUT, _BREAKS_OUT),
    (set(_RAWTEXT), _RAW),
):
    for _name in _names:
        _FLAGS[_key(_name)] = _FLAGS.get(_key(_name), 0) | _flag
        if len(_name) > _NAME_WIDTH:
            _LONG_NAMES[_key(_name)] = _name.encode()
_KNOWN = np.array(sorted(_FLAGS), dtype=np.uint64)
_HTML_BODY = (np.uint64(_key("html")), np.uint64(_key("body")))
_FONT = np.uint64(_key("font"))
_KNOWN_FLAGS = np.array([_FLAGS[k] for k in sorted(_FLAGS)] + [0], dtype=np.uint8)
_UNKNOWN = np.uint64(2**64 - 1)  # the key of a name longer than 8 bytes and not known

# One attribute as the tokenizer reads it ("before attribute name" on): a name up to
# whitespace, "/", ">" or "=", then optionally "=" and a quoted or unquoted value.
# Possessive quantifiers: no backtracking, so a match costs time linear in its length.
_SEP = rb"[\t\n\f\r /]++"
_ATTR = (
    rb"[^\t\n\f\r />][^\t\n\f\r />=]*+"
    rb"""(?:[\t\n\f\r ]*+=[\t\n\f\r ]*+(?:"[^"]*+"|'[^']*+'|[^\t\n\f\r >]*+))?+"""
)
# A start tag with more than MAX_ATTRIBUTES attributes: the match ends where the first
# one past the cap begins (its separator included).
_OVER = re.compile(
    rb"<[A-Za-z][^\t\n\f\r />]*+(?>(?:"
    + _SEP
    + _ATTR
    + rb"){%d})(?=" % MAX_ATTRIBUTES
    + _SEP
    + _ATTR
    + rb")"
)
_REST = re.compile(rb"(?:" + _SEP + _ATTR + rb")*+")  # the attributes up to the tag's end


def guard_markup(markup: str | bytes) -> tuple[str | bytes, list[str]]:
    """``markup`` with nesting deeper than :data:`MAX_DEPTH` and attributes past
    :data:`MAX_ATTRIBUTES` removed, and the names of the caps applied (empty, and the
    very same object back, when the page is within them)."""
    if isinstance(markup, str):
        if len(markup) < SCAN_FROM // 4:  # under SCAN_FROM bytes however it encodes
            return markup, []
        data = markup.encode("utf-8", "surrogatepass")
        out, capped = _guard(data)
        return (out.decode("utf-8", "surrogatepass") if capped else markup), capped
    return _guard(markup)


def _guard(data: bytes) -> tuple[bytes, list[str]]:
    n = len(data)
    if n < SCAN_FROM:
        return data, []
    buf = np.frombuffer(data, dtype=np.uint8)
    # "<" and ">" in one pass: (byte | 2) == ">" holds for those two bytes only.
    brackets = np.flatnonzero((buf[:-2] | 2) == ord(">"))
    lt = brackets[buf[brackets] == ord("<")]
    c1 = buf[lt + 1]
    is_start = _LETTER[c1]
    is_end = (c1 == ord("/")) & _LETTER[buf[lt + 2]]
    tags = lt[is_start | is_end]
    is_end = is_end[is_start | is_end]
    # where each tag ends: its first ">", or the end of the page for a tag never closed
    gts = brackets[buf[brackets] == ord(">")]
    gts = np.append(gts, [i for i in (n - 2, n - 1) if data[i] == ord(">")] + [n - 1])
    closes = gts[np.searchsorted(gts, tags)]
    scan = _Scan(data, buf, tags, is_end, closes)
    cuts: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = []
    capped: list[str] = []
    drop = np.zeros(len(tags), dtype=np.bool_)
    if len(tags) > DEPTH_FROM:
        drop, repeats = scan.too_deep()
        if drop.any():
            capped.append("depth")
            cuts.append((tags[drop], closes[drop] + 1))
        if repeats.any():
            capped.append("attributes")
            cuts.append((tags[repeats], closes[repeats] + 1))
            drop |= repeats
    over = _over_attributes(scan, drop)
    if over is not None:
        if "attributes" not in capped:
            capped.append("attributes")
        cuts.append(over)
    if not capped:
        return data, []
    starts = np.concatenate([a for a, _ in cuts])
    stops = np.concatenate([b for _, b in cuts])
    edges = np.bincount(starts, minlength=n + 1) - np.bincount(stops, minlength=n + 1)
    removed = np.cumsum(edges[:n]) > 0
    return buf[~removed].tobytes(), capped


def _over_attributes(
    scan: _Scan, drop: npt.NDArray[np.bool_]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """The byte ranges to cut (from the first attribute past the cap to the tag's
    end) of start tags over :data:`MAX_ATTRIBUTES`, or None when there is none.

    Only a start tag with room for that many attributes before both its first ``>``
    and the next tag is read (by the tokenizer's rules, with :data:`_OVER`); one
    inside a comment or a raw-text element is text, and is left alone.
    """
    tags, data = scan.tags, scan.data
    following = np.append(tags[1:], len(data))
    room = np.maximum(scan.closes, following) - tags > 2 * MAX_ATTRIBUTES
    starts: list[int] = []
    stops: list[int] = []
    for i in np.flatnonzero(room & ~scan.is_end & ~drop).tolist():
        at = int(tags[i])
        match = _OVER.match(data, at)
        if match is None or scan.in_region(at):
            continue
        starts.append(match.end())
        stops.append(_REST.match(data, match.end()).end())  # type: ignore[union-attr]
    if not starts:
        return None
    return np.array(starts, dtype=np.int64), np.array(stops, dtype=np.int64)


class _Scan:
    """The tags of one page and what the scan works out about them, each on demand."""

    def __init__(
        self,
        data: bytes,
        buf: npt.NDArray[np.uint8],
        tags: npt.NDArray[np.int64],
        is_end: npt.NDArray[np.bool_],
        closes: npt.NDArray[np.int64],
    ):
        self.data, self.buf, self.tags, self.is_end, self.closes = data, buf, tags, is_end, closes
        self._keys: npt.NDArray[np.uint64] | None = None
        self._regions: tuple[list[int], list[int]] | None = None

    @property
    def keys(self) -> npt.NDArray[np.uint64]:
        """Each tag's name: its first 8 bytes, lower-cased, as one little-endian
        integer (an 8-byte window at every tag, cut where the name ends); a name longer
        than 8 bytes is :data:`_UNKNOWN` unless it is a known one, compared whole."""
        if self._keys is None:
            buf, tags, is_end = self.buf, self.tags, self.is_end
            padded = np.concatenate((buf, np.full(_NAME_WIDTH + 1, ord(">"), dtype=np.uint8)))
            rows = np.lib.stride_tricks.sliding_window_view(padded, _NAME_WIDTH + 1)
            head = _LOWER[rows[tags + 1 + is_end]]  # 9 bytes after "<" or "</"
            ended = np.logical_or.accumulate(_NAME_END[head], axis=1)
            longer = ~ended[:, _NAME_WIDTH]  # no name end in the first 9 bytes
            head = np.ascontiguousarray(head[:, :_NAME_WIDTH])
            head[ended[:, :_NAME_WIDTH]] = 0  # cut at the name's end
            keys = head.view("<u8").ravel()
            for i in np.flatnonzero(longer).tolist():
                name = _LONG_NAMES.get(int(keys[i]))
                at = int(tags[i]) + 1 + int(is_end[i])
                if name is None or _name_at(self.data, at) != name:
                    keys[i] = _UNKNOWN
            self._keys = keys
        return self._keys

    @functools.cached_property
    def comments(self) -> tuple[list[int], list[int]]:
        """Where comments open and where one can end (see :func:`_comment_bounds`)."""
        opens, ends = _comment_bounds(self.buf)
        return opens.tolist(), ends.tolist()

    def flags(self) -> npt.NDArray[np.uint8]:
        keys = self.keys
        slot = np.searchsorted(_KNOWN, keys)
        slot = np.where(_KNOWN[np.minimum(slot, len(_KNOWN) - 1)] == keys, slot, len(_KNOWN))
        return _KNOWN_FLAGS[slot]

    def in_region(self, at: int) -> bool:
        """Whether position ``at`` is inside a comment or a raw-text element."""
        starts, stops = self.regions()
        i = bisect.bisect_right(starts, at) - 1
        return i >= 0 and starts[i] < at < stops[i]

    def inside(self) -> npt.NDArray[np.bool_]:
        """Which tags are inside a comment or a raw-text element (text, not tags)."""
        return _within(self.tags, *self.regions())

    def regions(self) -> tuple[list[int], list[int]]:
        """Comments and raw-text elements in page order, as (starts, stops): each
        opener that is not inside an earlier one runs to the first end of its kind
        after it (or the end of the page), as the tokenizer reads them.

        A ``<script>``, ``<style>`` or ``<title>`` inside ``<svg>`` or ``<math>`` is an
        element like any other: where foreign content is is estimated from the tags
        outside the regions found when every such element is taken for raw text (so
        an ``"<svg>"`` in a script does not count)."""
        if self._regions is None:
            flags = self.flags()
            raw = ~self.is_end & ((flags & _RAW) > 0)
            self._regions = self._walk(raw)
            if raw.any() and ((flags & _FOREIGN_ROOT) > 0).any():
                hidden = _within(self.tags, *self._regions)
                maybe = raw & self._maybe_foreign(flags, hidden)
                if maybe.any():
                    self._regions = self._walk(raw & ~maybe)
        return self._regions

    def _walk(self, raw: npt.NDArray[np.bool_]) -> tuple[list[int], list[int]]:
        """The regions of :meth:`regions` with the ``raw`` start tags as openers."""
        tags, is_end, keys, n = self.tags, self.is_end, self.keys, len(self.buf)
        c_opens, c_ends = self.comments
        ends: dict[int, list[int]] = {}
        raw_keys = keys[raw]
        for key in np.unique(raw_keys).tolist():
            ends[key] = tags[is_end & (keys == key)].tolist()
        openers = sorted(
            [(p, -1) for p in c_opens]
            + list(zip(tags[raw].tolist(), raw_keys.tolist(), strict=True))
        )
        at = [p for p, _ in openers]
        starts: list[int] = []
        stops: list[int] = []
        i = 0
        while i < len(openers) and len(starts) < MAX_REGIONS:
            p, kind = openers[i]
            # "<!-->" is a whole comment: its ">" is 4 bytes on.
            found = c_ends if kind == -1 else ends[kind]
            j = bisect.bisect_right(found, p + 3 if kind == -1 else p)
            stop = found[j] if j < len(found) else n
            starts.append(p)
            stops.append(stop)
            i = bisect.bisect_right(at, stop, i + 1)
        return starts, stops

    def _maybe_foreign(
        self, flags: npt.NDArray[np.uint8], hidden: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.bool_]:
        """Tags that may be inside ``<svg>`` or ``<math>``, from the tags not
        ``hidden`` (erring towards yes: a ``<font>`` is taken not to break out)."""
        tags, is_end = self.tags, self.is_end
        root = ((flags & _FOREIGN_ROOT) > 0) & ~hidden
        if not root.any():
            return np.zeros(len(tags), dtype=np.bool_)
        self_closed = self.buf[np.maximum(self.closes - 1, 0)] == ord("/")
        step = (root & ~is_end & ~self_closed).astype(np.int64) - (root & is_end)
        breakout = ~is_end & ~hidden & ((flags & _BREAKS_OUT) > 0) & (self.keys != _FONT)
        return _clamped_depth(step, reset=breakout) - step > 0

    def too_deep(self) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
        """Which tags open or close an element deeper than :data:`MAX_DEPTH`, and which
        are ``<html>`` or ``<body>`` start tags past the first :data:`MAX_REPEATS` of
        their name (each only adds its attributes to the one element, with a duplicate
        check against all it has: 40,000 ``<body a1>``, ``<body a2>``, ... take 2.5 s).

        The depth is estimated twice: with comments and raw text taken out, against
        :data:`MAX_DEPTH`, and with every tag counted, against :data:`MAX_ANY_DEPTH`,
        so a raw-text element the scan takes for one and the tree builder does not (a
        ``<script>`` inside an attribute value, ...) cannot hide a deep page."""
        flags = self.flags()
        inside = self.inside()
        too_deep = self._depth(flags, inside, MAX_DEPTH)
        if inside.any():
            too_deep |= self._depth(flags, np.zeros(len(inside), dtype=np.bool_), MAX_ANY_DEPTH)
        is_start = ~self.is_end & ~inside
        repeats = np.zeros(len(self.tags), dtype=np.bool_)
        for key in _HTML_BODY:
            hit = is_start & (self.keys == key)
            repeats |= hit & (np.cumsum(hit) > MAX_REPEATS)
        return too_deep, repeats

    def _depth(
        self, flags: npt.NDArray[np.uint8], inside: npt.NDArray[np.bool_], cap: int
    ) -> npt.NDArray[np.bool_]:
        """Which tags (those not ``inside``) open or close an element deeper than ``cap``."""
        buf, tags, closes, keys = self.buf, self.tags, self.closes, self.keys
        is_start = ~self.is_end & ~inside
        is_end = self.is_end & ~inside
        # Foreign content (svg, math): self-closed tags there hold nothing.
        foreign = (flags & _FOREIGN_ROOT) > 0
        breakout = is_start & ((flags & _BREAKS_OUT) > 0)
        step = (foreign & is_start).astype(np.int64) - (foreign & is_end)
        if foreign.any():
            in_foreign = _clamped_depth(step, reset=breakout) - step > 0  # before the tag
            self_closed = buf[np.maximum(closes - 1, 0)] == ord("/")
            flat = self_closed & in_foreign & ~breakout
        else:
            flat = np.zeros(len(tags), dtype=np.bool_)
        nocount = (flags & _NOCOUNT) > 0
        holds = is_start & ~nocount & ~flat
        counted_end = is_end & ~nocount
        counted_end &= _name_open(keys, holds, counted_end)
        delta = holds.astype(np.int64) - counted_end
        depth = _clamped_depth(delta)
        return (holds & (depth > cap)) | (counted_end & (depth - delta > cap))


def _name_at(data: bytes, at: int) -> bytes:
    """The lower-cased tag name that starts at ``at`` (up to 16 bytes of it)."""
    name = data[at : at + 16].lower()
    for i, byte in enumerate(name):
        if _NAME_END[byte]:
            return name[:i]
    return name


def _name_open(
    keys: npt.NDArray[np.uint64], holds: npt.NDArray[np.bool_], ends: npt.NDArray[np.bool_]
) -> npt.NDArray[np.bool_]:
    """For each tag, whether an element of its name may be open before it (counted by
    name: the starts that hold children minus the ends, never below zero). An end tag
    with none open is ignored by the tree builder."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    delta = (holds.astype(np.int64) - ends)[order]
    first = np.ones(len(keys), dtype=np.bool_)
    first[1:] = sorted_keys[1:] != sorted_keys[:-1]
    after = _clamped_depth(delta, reset=first)
    before = np.zeros(len(keys), dtype=np.int64)
    before[1:] = after[:-1]
    before[first] = 0
    out = np.empty(len(keys), dtype=np.bool_)
    out[order] = before > 0
    return out


def _clamped_depth(
    delta: npt.NDArray[np.int64], reset: npt.NDArray[np.bool_] | None = None
) -> npt.NDArray[np.int64]:
    """Running sum of ``delta`` that never goes below zero (d = max(0, d + delta)),
    starting again from zero at every ``reset`` (whose own delta then applies)."""
    total = np.cumsum(delta)
    if reset is None or not reset.any():
        return total - np.minimum(0, np.minimum.accumulate(total))
    segment = np.cumsum(reset)
    base = np.concatenate(([0], (total - delta)[reset]))[segment]  # sum before the reset
    rel = total - base
    big = 4 * (len(delta) + 1)
    # Earlier segments are shifted up by big, so the running minimum sees only its own.
    low = np.minimum.accumulate(rel - segment * big) + segment * big
    return rel - np.minimum(0, low)


def _comment_bounds(buf: npt.NDArray[np.uint8]) -> tuple[npt.NDArray[np.int64], ...]:
    """Where comments open (``<!--``) and where one can end (the ``>`` of ``-->`` or
    of ``--!>``)."""
    if len(buf) < 4:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    dash = buf == ord("-")
    opens = np.flatnonzero((buf[:-3] == ord("<")) & (buf[1:-2] == ord("!")) & dash[2:-1] & dash[3:])
    gt = np.flatnonzero(buf == ord(">"))
    gt = gt[gt >= 3]
    plain = dash[gt - 1] & dash[gt - 2]
    bang = (buf[gt - 1] == ord("!")) & dash[gt - 2] & dash[gt - 3]
    return opens, gt[plain | bang]


def _within(
    points: npt.NDArray[np.int64], starts: list[int], stops: list[int]
) -> npt.NDArray[np.bool_]:
    """Whether each point lies strictly inside one of the regions (sorted, apart)."""
    if not starts:
        return np.zeros(len(points), dtype=np.bool_)
    lo = np.array(starts, dtype=np.int64)
    hi = np.array(stops, dtype=np.int64)
    i = np.searchsorted(lo, points, side="right") - 1
    j = np.maximum(i, 0)
    return (i >= 0) & (points > lo[j]) & (points < hi[j])
