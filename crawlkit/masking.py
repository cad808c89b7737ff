"""Secrets kept out of what crawlkit shows or stores (docs/design.md invariant 9).

The one place that decides what a secret looks like, for every writer of settings,
reports, summaries, logs and WARC provenance (warcinfo):

* :func:`mask_url`: the userinfo of a URL (``http://user:PASS@proxy:3128``) becomes
  ``***@``; the rest of the URL stays readable.
* :func:`mask_header`: the value of a header that carries credentials
  (``Authorization``, ``Proxy-Authorization``, ``Cookie``, ``Set-Cookie``, and any
  header whose name says token, key, secret or auth) becomes ``***``.
* :func:`mask_secrets`: JSON-like data (dicts, lists, strings) with both applied to
  every string, and every value under a key that names a secret (``password``,
  ``token``, ``cookie`` values, ...) replaced.
* :func:`mask_argv`: a command line with the same rules, the value after
  ``--header`` and ``--proxy`` included, so ``crawl --proxy http://u:p@h:1`` is
  recorded as ``crawl --proxy http://***@h:1``.

Masking is one-way and idempotent. A mask is never partial: what could be a secret is
replaced whole.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MASK", "mask_argv", "mask_header", "mask_secrets", "mask_url"]

MASK = "***"
# Up to the *last* @ before the path: a password may hold an @ of its own
# (http://u:p@ss@proxy:3128), and URL parsers split the userinfo at the last one.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s]*@")
_SECRET_HEADER = re.compile(
    r"(?i)^(authorization|proxy-authorization|cookie|set-cookie|.*(token|secret|api[-_]?key|"
    r"auth|session|password).*)$"
)
_SECRET_KEY = re.compile(r"(?i)(password|passwd|secret|token|api[-_]?key|credential)")
_HEADER_LINE = re.compile(r"^\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*:(.*)$")


def mask_url(text: str) -> str:
    """``text`` with the userinfo of every URL in it replaced by ``***``."""
    return _USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text)


def mask_header(line: str) -> str:
    """A ``Name: value`` header line with a credential's value replaced."""
    m = _HEADER_LINE.match(line)
    if m is None or not _SECRET_HEADER.match(m.group(1)):
        return mask_url(line)
    return f"{m.group(1)}: {MASK}"


def mask_secrets(value: Any) -> Any:
    """``value`` (JSON-like) with every secret masked (see the module docstring)."""
    if isinstance(value, str):
        return mask_header(value) if _HEADER_LINE.match(value) else mask_url(value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            secret = isinstance(key, str) and bool(_SECRET_KEY.search(key))
            out[key] = MASK if secret and item not in (None, "", [], {}) else mask_secrets(item)
        return out
    if isinstance(value, list | tuple):
        return [mask_secrets(v) for v in value]
    return value


def mask_argv(argv: list[str]) -> list[str]:
    """A command line with secrets masked: URL userinfo anywhere, credential headers
    after ``--header`` (or ``--header=...``)."""
    out: list[str] = []
    header_next = False
    for arg in argv:
        if header_next:
            out.append(mask_header(arg))
            header_next = False
            continue
        if arg == "--header":
            header_next = True
            out.append(arg)
        elif arg.startswith("--header="):
            out.append("--header=" + mask_header(arg[len("--header=") :]))
        else:
            out.append(mask_url(arg))
    return out
