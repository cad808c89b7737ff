"""Percent-encoding normalisation, the path of a URL, and product tokens.

Both sides of a comparison go through the same functions (RFC 9309 2.2.2), so a rule
and a URL that name the same octets compare equal however they were spelled.
"""

from __future__ import annotations

import re

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# Characters compared literally: unreserved plus reserved, except "*" and "$" (special in
# patterns, so compared escaped on the URL side), "%" (escapes) and "#" (fragment).
_LITERAL = r"A-Za-z0-9\-._~:/?\[\]@!&'()+,;="
_PLAIN_URL = re.compile(f"[{_LITERAL}]*")
_PLAIN_PATTERN = re.compile(f"[{_LITERAL}*]*")
_SPECIAL_URL = re.compile(f"%[0-9A-Fa-f]{{2}}|[^{_LITERAL}]")
_SPECIAL_PATTERN = re.compile(f"%[0-9A-Fa-f]{{2}}|[^{_LITERAL}*]")


def _escape_char(ch: str) -> str:
    try:
        data = ch.encode("utf-8", "surrogateescape")  # undecodable input bytes come back
    except UnicodeEncodeError:
        data = ch.encode("utf-8", "surrogatepass")
    return "".join(f"%{b:02X}" for b in data)


def _special(match: re.Match[str]) -> str:
    text = match.group(0)
    if len(text) == 3:  # a well-formed escape
        ch = chr(int(text[1:], 16))
        return ch if ch in _UNRESERVED else text.upper()
    return _escape_char(text)


_QUERY_ESCAPES = re.compile("%(?:3A|2F|3F|40)")
_QUERY_CHARS = {"%3A": ":", "%2F": "/", "%3F": "?", "%40": "@"}


def _query_repl(match: re.Match[str]) -> str:
    return _QUERY_CHARS[match.group(0)]


def _decode_query_delims(text: str) -> str:
    """In the query only, ``%3A %2F %3F %40`` are read as ``: / ? @``.

    RFC 3986 3.4 lets these stand unescaped in a query, and RFC 9309 2.2.2 (its
    table) matches ``/foo/bar?baz=https://foo.bar`` with its escaped spelling. In the
    path, ``%2F`` stays escaped: there it is not a separator.
    """
    q = text.find("?")
    if q < 0 or "%" not in text[q:]:
        return text
    return text[:q] + _QUERY_ESCAPES.sub(_query_repl, text[q:])


# The common case in one step: an http(s) URL or a path whose path and query need no
# normalisation (the form canonical URLs have), with an optional fragment.
_PLAIN_TARGET = re.compile(
    f"(?:[Hh][Tt][Tt][Pp][Ss]?://[^/?#]*)?(/[{_LITERAL}]*)(?:#.*)?", re.DOTALL
)


def target_of(url: str) -> str:
    """:func:`normalize_path` of :func:`path_of` ``url`` without dot segments (the
    path a server serves), with a fast path."""
    m = _PLAIN_TARGET.fullmatch(url)
    target = m.group(1) if m is not None else normalize_path(path_of(url))
    return remove_dot_segments(target) if "/." in target else target


def remove_dot_segments(target: str) -> str:
    """``target`` (a path and query, normalised: ``%2e`` is ``.`` already) with the
    ``.`` and ``..`` segments of its path resolved as the WHATWG URL standard and RFC
    3986 5.2.4 do, and as servers do before they serve it: ``/x/../private/`` is
    ``/private/``, so a rule for ``/private/`` covers it (an input URL that was never
    canonicalized reached the fetcher with them, and past its robots.txt)."""
    q = target.find("?")
    path, query = (target, "") if q < 0 else (target[:q], target[q:])
    if "/." not in path:
        return target
    segments = path.split("/")[1:]
    kept: list[str] = []
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == "..":
            if kept:
                kept.pop()
        elif segment != ".":
            kept.append(segment)
            continue
        if last:  # "/a/b/.." is "/a/": the directory, with its slash
            kept.append("")
    return "/" + "/".join(kept) + query


def normalize_path(path: str) -> str:
    """A URL's path and query in the form that is compared with patterns.

    Escapes of unreserved characters decoded, other escapes uppercased, everything
    else outside the literal URI characters escaped as UTF-8 (``*`` → ``%2A``,
    ``$`` → ``%24``, a stray ``%`` → ``%25``); in the query, escaped ``: / ? @``
    decoded. Idempotent.
    """
    if _PLAIN_URL.fullmatch(path):
        return path
    return _decode_query_delims(_SPECIAL_URL.sub(_special, path))


def normalize_pattern(pattern: str) -> str:
    """A rule's pattern normalised like :func:`normalize_path`, keeping ``*`` and a
    final ``$`` as the wildcard and the end anchor (a ``$`` elsewhere is literal)."""
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    if not _PLAIN_PATTERN.fullmatch(body):
        body = _decode_query_delims(_SPECIAL_PATTERN.sub(_special, body))
    return body + "$" if anchored else body


_AUTHORITY = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/?#]*")


def path_of(url: str) -> str:
    """The path and query of an absolute URL, or of a path[?query]; "/" if empty.

    Only ``scheme://authority`` is stripped: a string starting with ``/`` is a path,
    even ``//a/b`` (a valid request path, as a server would see it).
    """
    if url.startswith("https://"):
        slash = url.find("/", 8)
        if slash < 0 or "?" in url[8:slash] or "#" in url[8:slash]:
            url = _strip_authority(url)
        else:
            url = url[slash:]
    elif url.startswith("http://"):
        slash = url.find("/", 7)
        if slash < 0 or "?" in url[7:slash] or "#" in url[7:slash]:
            url = _strip_authority(url)
        else:
            url = url[slash:]
    elif not url.startswith("/"):
        url = _strip_authority(url)
    if "#" in url:
        url = url[: url.index("#")]
    if not url.startswith("/"):
        url = "/" + url
    return url


def _strip_authority(url: str) -> str:
    m = _AUTHORITY.match(url)
    return url if m is None else url[m.end() :]


# --------------------------------------------------------------------------------------
# Product tokens

_TOKEN = re.compile(r"[A-Za-z_\-]+")


def agent_token(agent: str) -> str:
    """The product token of a user-agent value or header, lowercased.

    ``"FooBot/1.2 (+http://x)"`` → ``"foobot"``; ``"*"`` (alone or followed by white
    space) → ``"*"``; a value without a leading letter, ``-`` or ``_`` → ``""``.
    """
    agent = agent.strip()
    if agent.startswith("*") and (len(agent) == 1 or agent[1].isspace()):
        return "*"
    m = _TOKEN.match(agent)
    return m.group(0).lower() if m else ""
