"""robots.txt by RFC 9309: the parser, the matcher, and the fetch policy.

Three parts, each usable on its own:

:class:`RobotsTxt`
    Parses the bytes of a robots.txt (never raises) and answers ``check(agent, url)``
    with a :class:`Verdict` that names the deciding rule. Precompiled: after the first
    check for an agent, a check costs about a microsecond.
:class:`RobotsEntry`
    What a cache keeps per host (``scheme://host:port``): the status, the times, the
    last good body and the effective rules. JSON-safe through ``to_dict``/``from_dict``.
:class:`RobotsPolicy`
    Turns the outcome of fetching robots.txt (a status and a body, or a network error)
    into a :class:`RobotsEntry` by RFC 9309 section 2.3 and docs/design.md invariant 3.

Modules: ``_parse`` (the file to groups), ``_normalize`` (percent-encoding, paths,
product tokens), ``_match`` (the compiled matcher of one group), ``_rules`` (the
values), ``policy`` (fetch outcomes to cache entries). Import from this package.

What the parser does, rule by rule (RFC 9309 section numbers in brackets):

* Input is UTF-8, with or without a byte-order mark (or its first byte or two, which
  Google's parser skips too); invalid bytes are kept as their
  percent-escapes, so they still match the same bytes in a URL [2.3]. A file that
  starts with a UTF-16 byte-order mark is read as UTF-16 (some sites save it so;
  read as UTF-8 its rules were lost, and Google's parser loses them). Lines end with
  LF, CRLF or CR [2.2]. ``#`` starts a comment [2.2]. The first 512 KiB are parsed
  (the RFC asks for at least 500 KiB [2.5]); a line cut by that limit is dropped
  whole, because half a path could allow or forbid more than the full one.
* A group is one or more ``user-agent`` lines followed by rules; a ``user-agent``
  line after a rule starts a new group [2.1]. A key is read by its start where it
  restricts, as Google's parser reads it (``User-agents``, ``Disallowed``,
  ``Disallow-path``: read exactly, each was an unknown key and a file's rules were
  lost). Blank lines, unknown lines and
  ``sitemap`` lines do not end a group (nor does ``crawl-delay`` end a run of
  ``user-agent`` lines). Rules before any ``user-agent`` line belong to no group
  and are ignored.
* The product token of a ``user-agent`` line is its leading run of letters, ``-``
  and ``_`` (``FooBot/1.2`` is ``foobot``) [2.2.1]; ``*`` alone is the catch-all.
  The crawler's own name is reduced the same way, so a full User-Agent header
  (``FooBot/1.2 (+http://x)``) may be passed. Tokens compare case-insensitively.
  All groups naming the token are merged [2.2.1]; else the ``*`` groups (merged);
  else there are no rules and everything is allowed.
* ``allow`` and ``disallow`` take a path pattern starting with ``/`` or ``*``; ``*``
  matches any run of characters and a final ``$`` anchors the end [2.2.3]. The
  matching rule with the longest pattern (in octets, after normalisation, counting
  ``*`` and ``$``) wins; on a tie ``allow`` wins [2.2.2]. An empty ``disallow`` (or
  ``allow``) is no rule, so it allows everything. ``/robots.txt`` is always allowed
  [2.2.2]. Paths are compared with the query and without the fragment.
* Percent-encoding is normalised on both sides before comparing [2.2.2]: escapes of
  unreserved characters are decoded, other escapes are uppercased, and every octet
  outside printable ASCII (or not allowed in a URI) is escaped as UTF-8. A literal
  ``*`` or ``$`` in a URL is compared as ``%2A`` / ``%24``, so a pattern matches
  them only when written escaped [2.2.3]. A ``$`` inside a pattern (not at its end)
  is literal. In the query, escaped ``: / ? @`` are decoded, so
  ``?baz=https://foo.bar`` and ``?baz=https%3A%2F%2Ffoo.bar`` match alike (the
  RFC's own table in 2.2.2); in the path ``%2F`` stays distinct from ``/``.
* A URL's ``.`` and ``..`` path segments (``%2e`` too) are resolved before it is
  matched, as a server resolves them before it serves: ``/x/../private/`` is
  ``/private/`` (canonical URLs have none; a URL given as is could walk past a rule).
* ``crawl-delay`` (not in the RFC, widely used) belongs to its group; a value that is
  not a finite non-negative number is ignored; merged groups take the largest value.
  ``sitemap`` lines are global, whatever group they appear in [2.2.4].

Real-world quirks, decided here (as Google's reference parser does):

* A line without a colon is accepted when it is exactly a key and a value separated
  by white space (``Disallow /x``).
* Common misspellings of keys are accepted: ``useragent``, ``user agent``,
  ``dissallow``, ``dissalow``, ``disalow``, ``diasllow``, ``disallaw``, ``site-map``,
  ``crawldelay``.
* A pattern that starts with neither ``/`` nor ``*`` (``Disallow: private``) is not
  a valid rule [2.2 grammar] and is ignored, like Google's parser, which never
  matches it; ``robots parse`` lists it among the ignored lines.
"""

from __future__ import annotations

from crawlkit.robots._normalize import (
    agent_token,
    normalize_path,
    normalize_pattern,
    remove_dot_segments,
)
from crawlkit.robots._parse import MAX_ROBOTS_BYTES, RobotsTxt
from crawlkit.robots._rules import Group, Rule, Verdict
from crawlkit.robots.policy import MAX_CACHE_AGE, RobotsEntry, RobotsPolicy, rules_for_status

__all__ = [
    "MAX_CACHE_AGE",
    "MAX_ROBOTS_BYTES",
    "Group",
    "RobotsEntry",
    "RobotsPolicy",
    "RobotsTxt",
    "Rule",
    "Verdict",
    "agent_token",
    "normalize_path",
    "normalize_pattern",
    "remove_dot_segments",
    "rules_for_status",
]
