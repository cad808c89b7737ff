"""Bound the tree builder's work on hostile HTML before it is parsed.

An HTML5 tree builder checks "is there an X in scope" by walking its stack of open
elements, so markup nested N deep costs O(N) for every later tag: one page of
``<div>`` x 100,000 took 23 s of CPU (quadratic), and a tag with 500,000 distinct
attribute names more than a minute (the duplicate check is quadratic too). Browsers cap
the tree's depth (Blink at 512); :func:`guard_markup` does the same before Lexbor sees
the page, with a cheap vectorised pre-scan (numpy, no Python loop per tag):

* Every tag is found (``<name`` and ``</name``), outside comments and the raw-text
  elements (``script``, ``style``, ``textarea``, ``title``, ...), whose content holds no
  tags. Its depth is the running count of start tags that can hold children minus end
  tags, never below zero. Void elements (``br``, ``img``, ...), elements whose end tag
  is implied by the next one (``p``, ``li``, ``td``, ``option``, ...), raw-text elements
  and tags self-closed (``/>``) inside ``<svg>`` or ``<math>`` do not count; a tag that
  breaks out of foreign content (``<div>``, ``<p>``, ...) ends it, as the tree builder
  does. The estimate errs high, never low, so nothing nests deeper than it says.
* Start tags that would open an element deeper than :data:`MAX_DEPTH`, and the end tags
  that close such elements, are removed: the text inside them stays, one level up (as
  in a browser that caps depth); a link whose own ``<a>`` tag was past the cap is lost.
* A start tag with more than :data:`MAX_ATTRIBUTES` attributes keeps its first ones
  (an attribute is counted at each whitespace before a name character, so a quoted
  value of more than that many words is cut too: no real page has one), and
  ``<html>`` and ``<body>`` start tags past the first :data:`MAX_REPEATS` are dropped
  (each adds its attributes to the one element, checked against all it has).

Pages under :data:`SCAN_FROM` (64 KiB) are left alone: too small to cost much. The
page is still parsed and recorded; :func:`guard_markup` names the caps it applied
(``"depth"``, ``"attributes"``), which the extractor adds to ``Page.capped``. With
these caps every page up to the 5 MB HTML cap parses in well under a second
(``bench/bench_extract.py --hostile``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["MAX_ATTRIBUTES", "MAX_DEPTH", "MAX_REPEATS", "SCAN_FROM", "guard_markup"]

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

MAX_REPEATS = 8
"""``<html>`` and ``<body>`` start tags kept per page (later ones are dropped)."""

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
_ATTR_START = ~(_NAME_END | (np.arange(256) == ord("=")) | (np.arange(256) == ord('"')))
_ATTR_START[ord("'")] = False
_LOWER = np.arange(256, dtype=np.uint8)
_LOWER[ord("A") : ord("Z") + 1] += 32


def _key(name: str) -> int:
    """A tag name's first 8 bytes as a little-endian integer (how the scan reads them)."""
    return int.from_bytes(name.encode()[:_NAME_WIDTH], "little")


# Each known name's flags; a name not listed holds children and ends nothing.
_NOCOUNT, _FOREIGN_ROOT, _BREAKS_OUT, _RAW = 1, 2, 4, 8
_FLAGS: dict[int, int] = {}
for _names, _flag in (
    (_VOID | _IMPLIED_END | set(_RAWTEXT), _NOCOUNT),
    (_FOREIGN, _FOREIGN_ROOT),
    (_BREAKOUT, _BREAKS_OUT),
    (set(_RAWTEXT), _RAW),
):
    for _name in _names:
        _FLAGS[_key(_name)] = _FLAGS.get(_key(_name), 0) | _flag
_KNOWN = np.array(sorted(_FLAGS), dtype=np.uint64)
_HTML_BODY = (np.uint64(_key("html")), np.uint64(_key("body")))
_KNOWN_FLAGS = np.array([_FLAGS[k] for k in sorted(_FLAGS)] + [0], dtype=np.uint8)


def guard_markup(markup: str | bytes) -> tuple[str | bytes, list[str]]:
    """``markup`` with nesting deeper than :data:`MAX_DEPTH` and attributes past
    :data:`MAX_ATTRIBUTES` removed, and the names of the caps applied (empty, and the
    very same object back, when the page is within them)."""
    if isinstance(markup, str):
        data = markup.encode("utf-8", "surrogatepass")
        out, capped = _guard(data)
        return (out.decode("utf-8", "surrogatepass") if capped else markup), capped
    return _guard(markup)


def _guard(data: bytes) -> tuple[bytes, list[str]]:
    buf = np.frombuffer(data, dtype=np.uint8)
    n = len(buf)
    if n < SCAN_FROM:
        return data, []
    lt = np.flatnonzero(buf[:-2] == ord("<"))
    c1, c2 = buf[lt + 1], buf[lt + 2]
    is_start = _LETTER[c1]
    is_end = (c1 == ord("/")) & _LETTER[c2]
    tags = lt[is_start | is_end]
    is_end = is_end[is_start | is_end]
    # where each tag ends: its ">", or the end of the page for a tag never closed
    gts = np.append(np.flatnonzero(buf == ord(">")), n - 1)
    closes = gts[np.searchsorted(gts, tags)]
    cuts: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = []
    capped: list[str] = []
    drop = np.zeros(len(tags), dtype=np.bool_)
    if len(tags) > MAX_DEPTH:
        drop, repeats = _too_deep(buf, tags, is_end, closes)
        if drop.any():
            capped.append("depth")
            cuts.append((tags[drop], closes[drop] + 1))
        if repeats.any():
            capped.append("attributes")
            cuts.append((tags[repeats], closes[repeats] + 1))
            drop |= repeats
    long_tags = ~is_end & ~drop & (closes - tags > 2 * MAX_ATTRIBUTES)
    if long_tags.any():
        attr_at = np.flatnonzero(_WS[buf[:-1]] & _ATTR_START[buf[1:]]) + 1
        lo = np.searchsorted(attr_at, tags[long_tags])
        hi = np.searchsorted(attr_at, closes[long_tags])
        over = hi - lo > MAX_ATTRIBUTES
        if over.any():
            if "attributes" not in capped:
                capped.append("attributes")
            # from the first attribute past the cap up to (not including) the ">"
            cuts.append((attr_at[lo[over] + MAX_ATTRIBUTES], closes[long_tags][over]))
    if not capped:
        return data, []
    starts = np.concatenate([a for a, _ in cuts])
    stops = np.concatenate([b for _, b in cuts])
    edges = np.bincount(starts, minlength=n + 1) - np.bincount(stops, minlength=n + 1)
    removed = np.cumsum(edges[:n]) > 0
    return buf[~removed].tobytes(), capped


def _too_deep(
    buf: npt.NDArray[np.uint8],
    tags: npt.NDArray[np.int64],
    is_end: npt.NDArray[np.bool_],
    closes: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Which of ``tags`` open or close an element deeper than :data:`MAX_DEPTH`, and
    which are ``<html>`` or ``<body>`` start tags past the first :data:`MAX_REPEATS` of
    their name (each only adds its attributes to the one element, with a duplicate
    check against all it has: 40,000 ``<body a1>``, ``<body a2>``, ... take 2.5 s)."""
    # Tag names: their first 8 bytes, lower-cased, as one little-endian integer each
    # (an 8-byte window at every tag, cut where the name ends).
    padded = np.concatenate((buf, np.full(_NAME_WIDTH, ord(">"), dtype=np.uint8)))
    rows = np.lib.stride_tricks.sliding_window_view(padded, _NAME_WIDTH)
    head = _LOWER[rows[tags + 1 + is_end]]  # the 8 bytes after "<" or "</"
    head[np.logical_or.accumulate(_NAME_END[head], axis=1)] = 0  # cut at the name's end
    keys = head.view("<u8").ravel()
    slot = np.searchsorted(_KNOWN, keys)
    slot = np.where(_KNOWN[np.minimum(slot, len(_KNOWN) - 1)] == keys, slot, len(_KNOWN))
    flags = _KNOWN_FLAGS[slot]

    # Tags inside comments or raw-text elements are text.
    inside = _inside(tags, *_comment_bounds(buf))
    raw = (flags & _RAW) > 0
    for key in np.unique(keys[raw]) if raw.any() else ():
        hit = keys == key
        inside |= _inside(tags, tags[hit & ~is_end], tags[hit & is_end])

    # Foreign content (svg, math): self-closed tags there hold nothing.
    is_start = ~is_end & ~inside
    is_end = is_end & ~inside
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
    delta = holds.astype(np.int64) - counted_end
    depth = _clamped_depth(delta)
    too_deep = (holds & (depth > MAX_DEPTH)) | (counted_end & (depth - delta > MAX_DEPTH))
    repeats = np.zeros(len(tags), dtype=np.bool_)
    for key in _HTML_BODY:
        hit = is_start & (keys == key)
        repeats |= hit & (np.cumsum(hit) > MAX_REPEATS)
    return too_deep, repeats


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
    """Where comments open (``<!--``) and close (the ``-->`` end)."""
    if len(buf) < 4:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    dash = buf == ord("-")
    opens = np.flatnonzero((buf[:-3] == ord("<")) & (buf[1:-2] == ord("!")) & dash[2:-1] & dash[3:])
    ends = np.flatnonzero(dash[:-2] & dash[1:-1] & (buf[2:] == ord(">"))) + 2
    return opens, ends


def _inside(
    points: npt.NDArray[np.int64], opens: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    """Whether each point lies in a region from an ``opens`` position to the first
    ``ends`` position after it (regions do not nest: a second opener inside is text)."""
    if len(opens) == 0:
        return np.zeros(len(points), dtype=np.bool_)
    last = np.searchsorted(opens, points, side="left") - 1  # the opener before the point
    has = last >= 0
    opener = opens[np.maximum(last, 0)]
    nxt = np.searchsorted(ends, opener, side="right")
    end_at = np.where(nxt < len(ends), ends[np.minimum(nxt, len(ends) - 1)], np.iinfo(np.int64).max)
    return has & (end_at > points)
