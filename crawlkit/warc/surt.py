"""SURT keys as pywb and the Wayback Machine write them (``com,example)/path?a=1``).

One job: :func:`surt_key` turns a URL into the sort key of a CDXJ index line, the
same key the ``surt`` package (which pywb and cdxj-indexer use) gives with its
defaults, so an index written by crawlkit is looked up by pywb. A test compares the
two on generated URLs.

The rules, in order (the "Google" then the "IA" canonicalizer of archive-commons):

* ``\\t``, ``\\r``, ``\\n`` are removed and surrounding whitespace stripped; a URL
  without a scheme gets ``http://``; ``http://http://x`` is ``http://x``.
* The fragment and the user info go. The host is percent-decoded repeatedly,
  IDNA-encoded when not ASCII, ``..`` becomes ``.``, dots at either end go; an
  all-digit, dotted decimal or octal host becomes a dotted quad; then lowercased,
  escaped once and stripped of a leading ``www``, ``www2``, ... label. Its labels are
  reversed and joined by commas (``127.0.0.1`` is ``1,0,0,127``; an IPv6 literal has
  no dots and stays as it is, without brackets). A port other than the scheme's
  default is kept (``example,com:8080)``). The scheme itself is not in the key,
  except in an opaque URI (no ``//``: ``urn:crawlkit:report.json``, ``dns:x.org``),
  which keeps it, as written.
* The path is percent-decoded repeatedly, dot segments and empty segments resolved,
  escaped once (everything outside printable ASCII, ``%`` and ``#`` included), and
  lowercased; a trailing ``/`` goes unless the path is ``/``; ASP.NET session ids in
  the path go.
* The query is decoded and escaped the same way, stripped of session ids
  (``jsessionid``, ``phpsessid``, ``sid``, ``aspsessionid``, ``cfid``/``cftoken``),
  lowercased, and its ``&``-separated parameters sorted; an empty query goes.
"""

from __future__ import annotations

import contextlib
import functools
import re
import socket
import struct
from urllib.parse import quote_from_bytes, unquote_to_bytes

__all__ = ["surt_key"]

_SPACES = re.compile(rb"[\n\r\t]")
_HAS_SCHEME = re.compile(rb"^([a-zA-Z][a-zA-Z0-9+\-.]*):")
_MULTIPLE_PROTOCOLS = re.compile(rb"^(https?://)+")
_SPLIT = re.compile(
    rb"^(([a-zA-Z][a-zA-Z0-9+.-]*):)?((//([^/?#]*))?([^?#]*)(\?([^#]*))?)?(#(.*))?$"
)
_DECIMAL_IP = re.compile(rb"^([1-9][0-9]*)(\.[0-9]+)?(\.[0-9]+)?(\.[0-9]+)?$")
_OCTAL_IP = re.compile(rb"^(0[0-7]*)(\.[0-7]+)?(\.[0-7]+)?(\.[0-7]+)?$")
_WWW = re.compile(rb"www\d*\.")
_SAFE = b"!\"$&'()*+,-./:;<=>?@[\\]^_`{|}~"
_PATH_SESSION = (
    re.compile(rb"^(.*/)(\((?:[a-z]\([0-9a-z]{24}\))+\)/)([^\?]+\.aspx.*)$", re.I),
    re.compile(rb"^(.*/)(\([0-9a-z]{24}\)/)([^\?]+\.aspx.*)$", re.I),
)
_QUERY_SESSION = (
    re.compile(rb"^(.*)(?:jsessionid=[0-9a-zA-Z]{32})(?:&(.*))?$", re.I),
    re.compile(rb"^(.*)(?:phpsessid=[0-9a-zA-Z]{32})(?:&(.*))?$", re.I),
    re.compile(rb"^(.*)(?:sid=[0-9a-zA-Z]{32})(?:&(.*))?$", re.I),
    re.compile(rb"^(.*)(?:ASPSESSIONID[a-zA-Z]{8}=[a-zA-Z]{24})(?:&(.*))?$", re.I),
    re.compile(rb"^(.*)(?:cfid=[^&]+&cftoken=[^&]+)(?:&(.*))?$", re.I),
)
_DEFAULT_PORTS = {b"http": 80, b"https": 443}
# What quote_from_bytes(data, safe=_SAFE) leaves as it is: its always-safe bytes and _SAFE.
_QUOTE_SAFE = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~" + _SAFE
# Hosts whose key part is remembered (a crawl's captures come a host at a time).
_HOST_CACHE = 4096


def _unescape(data: bytes) -> bytes:
    """Percent-decode until nothing changes (``%2541`` is ``A``)."""
    if b"%" not in data:  # the common URL: nothing to decode (unquote's own loop is slower)
        return data
    while True:
        once = unquote_to_bytes(data)
        if once == data:
            return data
        data = once


def _escape(data: bytes) -> bytes:
    if not data.translate(None, _QUOTE_SAFE):  # every byte stays as it is
        return data
    return quote_from_bytes(data, safe=_SAFE).encode("ascii")


def _ip(host: bytes) -> bytes | None:
    """The dotted quad of an all-digit, dotted decimal or octal host, else None."""
    if host.isdigit():
        return socket.inet_ntoa(struct.pack(">L", int(host) & 0xFFFFFFFF)).encode("ascii")
    if _DECIMAL_IP.match(host) or _OCTAL_IP.match(host):
        try:  # inet_aton reads "127.1" and "0177.0.0.1" as the resolver would
            return socket.inet_ntoa(socket.inet_aton(host.decode("ascii"))).encode("ascii")
        except OSError:
            return None
    return None


@functools.lru_cache(maxsize=_HOST_CACHE)
def _host(raw: bytes) -> bytes:
    host = _unescape(raw)
    try:
        host.decode("ascii")
    except UnicodeDecodeError:
        with contextlib.suppress(UnicodeError, ValueError):
            host = host.decode("utf-8", "ignore").encode("idna")
    host = host.replace(b"..", b".").strip(b".")
    host = _ip(host) or _escape(host.lower())
    host = host.lower()
    www = _WWW.match(host)
    if www:
        host = host[www.end() :]
    return host


def _path(path: bytes) -> bytes:
    """Dot segments and empty segments resolved; ``..`` above the root is kept."""
    if not path:
        return b"/"
    kept: list[bytes] = []
    for part in path.split(b"/")[1:]:
        if part == b".":
            continue
        if part == b"..":
            if kept:
                kept.pop()
            else:
                kept.append(part)
        else:
            kept.append(part)
    out = b"/"
    if kept:
        out += b"".join(p + b"/" for p in kept[:-1] if p) + kept[-1]
    return out


def _query(query: bytes) -> bytes | None:
    query = _escape(_unescape(query))
    for pattern in _QUERY_SESSION:
        m = pattern.match(query)
        if m:
            query = m.group(1) + m.group(2) if m.group(2) else m.group(1)
    query = query.lower()
    if len(query) > 1:
        pairs = sorted(tuple(arg.split(b"=", 1)) for arg in query.split(b"&"))
        query = b"&".join(b"=".join(p) for p in pairs)
    return query or None


def surt_key(url: str) -> str:
    """The SURT sort key of ``url`` (see the module docstring); ``-`` for an empty URL."""
    data = url.encode("utf-8")
    if not data:
        return "-"
    if data.startswith(b"filedesc"):
        return url
    data = _SPACES.sub(b"", data.strip())
    if not _HAS_SCHEME.match(data):
        data = b"http://" + data
    data = _MULTIPLE_PROTOCOLS.sub(lambda m: m.group(1), data)
    m = _SPLIT.match(data)
    if m is None:  # the pattern matches any bytes; kept for the type checker
        return url
    scheme = (m.group(2) or b"").lower()
    netloc = m.group(5) or b""
    path = m.group(6) or b""
    query = m.group(8) or None
    if netloc.endswith(b":"):
        netloc = netloc.rstrip(b":")
    # Host and port as Python's urllib finds them (the surt package asks it); a port
    # that is not a number from 0 to 65535 makes it raise, and cdxj-indexer then keys
    # the line by the URL as it is.
    hostinfo = netloc.rpartition(b"@")[2]
    _, open_bracket, bracketed = hostinfo.partition(b"[")
    if open_bracket:
        host, _, after = bracketed.partition(b"]")
        port_text = after.partition(b":")[2]
    else:
        host, _, port_text = hostinfo.partition(b":")
    port: int | None = None
    if port_text:
        if not (port_text.isdigit() and port_text.isascii()):
            return url
        port = int(port_text)
        if not 0 <= port <= 65535:
            return url
    host = host.lower()
    if scheme.startswith(b"http") and not host and path:
        # "http:////www.example.com/x": the host is the first non-empty segment
        first, _, rest = path.lstrip(b"/").partition(b"/")
        host, path = first, b"/" + rest
    if port == 0:
        port = None
    out = b""
    key_host = _host(host) if host else b""
    if key_host:
        out += b",".join(reversed(key_host.split(b".")))
        if port is not None and port != _DEFAULT_PORTS.get(scheme, 0):
            out += b":%d" % port
        out += b")"
    else:
        # No host ("dns:example.com", "data:,", "http://"), or one of dots only
        # ("http://./x", empty once its dots are stripped): the surt package then
        # writes the scheme, as written, where the host would be ("http:/x", "HTTP:/x").
        out += (m.group(2) or b"") + b":"
    key_path = _escape(_path(_unescape(path)) if key_host else _unescape(path)).lower()
    for pattern in _PATH_SESSION:
        pm = pattern.match(key_path)
        if pm:
            key_path = pm.group(1) + pm.group(3)
    if key_path.endswith(b"/") and len(key_path) > 1:
        key_path = key_path[:-1]
    key_query = _query(query) if query else None
    if key_path:
        out += key_path
    elif key_query is not None:
        out += b"/"
    if key_query is not None:
        out += b"?" + key_query
    return out.decode("utf-8")
