"""Attribute and header values with a grammar of their own, read as the standards
read them: robots directives (``<meta name=robots>``, X-Robots-Tag), the target of a
``<meta http-equiv=refresh>``, and the URLs of a ``srcset``. Pure functions of text.
"""

from __future__ import annotations

import re

from crawlkit.url import trim_url

__all__ = ["ASCII_SPACE", "parse_robots_directives", "parse_srcset", "refresh_target"]

ASCII_SPACE = " \t\n\r\f"  # HTML's ASCII whitespace


# Directives that take a value after a colon (not an agent's name before one).
_VALUED_DIRECTIVES = frozenset(
    {"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"}
)
_AGENT_NAME = re.compile(r"[a-z0-9_.-]+")


def parse_robots_directives(value: str | None, agent: str = "crawlkit") -> tuple[bool, bool]:
    """``(noindex, nofollow)`` from a meta robots content or X-Robots-Tag values.

    ``none`` means both; tokens are case-insensitive. ``value`` may hold several
    X-Robots-Tag header lines, one a line (each is read on its own). On a line, a name
    and a colon (``otherbot: noindex, nofollow``) aim the directives after it, up to
    the next name, at that agent: they count when the name is ``agent`` (the product
    token of ``--agent``, as robots.txt matches it), ``robots`` or ``all``, and are
    passed over otherwise (Google's and Bing's reading of the header).
    """
    if not value:
        return False, False
    ours = {"robots", "all", agent.lower()}
    noindex = nofollow = False
    for line in value.split("\n"):
        applies = True  # directives before any name are everyone's
        for part in line.split(","):
            token = part.strip().lower()
            name, colon, rest = token.partition(":")
            name = name.strip()
            if (
                colon
                and name not in _VALUED_DIRECTIVES
                and (_AGENT_NAME.fullmatch(name) or not name)
            ):
                applies = not name or name in ours
                token = rest.strip()
            if not applies:
                continue
            if token == "noindex":
                noindex = True
            elif token == "nofollow":
                nofollow = True
            elif token == "none":
                noindex = nofollow = True
    return noindex, nofollow


_DIGITS = re.compile(r"[0-9]*")
_DIGITS_AND_DOTS = re.compile(r"[0-9.]*")
_SKIP_SPACE = re.compile(r"[\t\n\f\r ]*")
_URL_EQUALS = re.compile(r"url[\t\n\f\r ]*=[\t\n\f\r ]*", re.IGNORECASE)


def refresh_target(content: str) -> str | None:
    """The URL of a ``<meta http-equiv=refresh content="5; url=...">``, or None.

    HTML's "shared declarative refresh steps": the content starts with a delay (digits,
    or a dot), then ``;``, ``,`` or white space, then the URL, optionally after
    ``url=`` and in quotes. Anything else (``url=/x`` alone, ``-1; url=/x``,
    ``1e0; url=/x``, ``text/html; charset=utf-8``) is no refresh at all, and was read
    as a link to a URL nobody wrote.
    """
    pos = _SKIP_SPACE.match(content).end()  # type: ignore[union-attr]
    digits = _DIGITS.match(content, pos).end()  # type: ignore[union-attr]
    if digits == pos and content[pos : pos + 1] != ".":
        return None
    pos = _DIGITS_AND_DOTS.match(content, digits).end()  # type: ignore[union-attr]
    if pos < len(content):
        if content[pos] not in ";," + ASCII_SPACE:
            return None
        pos = _SKIP_SPACE.match(content, pos).end()  # type: ignore[union-attr]
        if content[pos : pos + 1] in (";", ","):
            pos += 1
        pos = _SKIP_SPACE.match(content, pos).end()  # type: ignore[union-attr]
    if pos >= len(content):
        return None  # a refresh of the page itself
    url_equals = _URL_EQUALS.match(content, pos)
    target = content[url_equals.end() if url_equals is not None else pos :]
    if target[:1] in ("'", '"'):
        target = target[1:].split(target[0], 1)[0]
    return trim_url(target) or None


# ---------------------------------------------------------------- links


def parse_srcset(value: str) -> list[str]:
    """The URLs of a ``srcset`` value, in order (HTML's "parse a srcset attribute").

    A candidate is a URL then optional descriptors up to a comma; a URL that ends in
    commas loses them (``a.png,b.png`` is two candidates), and a comma inside the
    descriptors' parentheses (from a ``(`` to the first ``)``) does not end the
    candidate.
    """
    urls: list[str] = []
    pos, end = 0, len(value)
    while pos < end:
        while pos < end and (value[pos] in ASCII_SPACE or value[pos] == ","):
            pos += 1
        start = pos
        while pos < end and value[pos] not in ASCII_SPACE:
            pos += 1
        url = value[start:pos]
        if url.endswith(","):
            url = url.rstrip(",")
        else:
            # Skip the descriptors up to the next comma outside parentheses: the
            # standard's tokenizer is "in parens" from a "(" to the first ")" (they
            # do not nest, and a ")" outside them is a character like any other).
            in_parens = False
            while pos < end:
                char = value[pos]
                if in_parens:
                    in_parens = char != ")"
                elif char == ",":
                    break
                elif char == "(":
                    in_parens = True
                pos += 1
        if url:
            urls.append(url)
    return urls
