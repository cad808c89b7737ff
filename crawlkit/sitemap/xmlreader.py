"""One XML document through expat, a push parser, chunk by chunk: its encoding
settled, hostile constructs refused, its records handed to ``on_entry``.

expat decodes UTF-8 and UTF-16; any other declared encoding (a WHATWG label) is
decoded by Python to UTF-8 on the way in. Entity declarations (but an external
parameter entity's, never loaded), parameter entity references, external entities
and deep nesting are refused (an external DTD is never loaded). Text after the root
element's end is skipped (``stats.trailing``), and a bare ``&`` is read as ``&amp;``
(``stats.ampersands``, :mod:`crawlkit.sitemap.ampersands`); every other error ends the document
as a :class:`SitemapError` saying where it broke; the entries handed
on before it stand, and so does a record the damage cut after its ``<loc>``."""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from xml.parsers import expat

from crawlkit.html.encoding import codec_for_label
from crawlkit.sitemap.ampersands import BareAmpersands, repaired
from crawlkit.sitemap.formats import SEP
from crawlkit.sitemap.model import CHUNK, SitemapError, SitemapStats
from crawlkit.sitemap.source import transcode
from crawlkit.sitemap.xmlhandler import Hostile, OnEntry, UndefinedEntity, XMLHandler

__all__ = ["parse_xml", "xml_after_junk"]

_XML_ENCODING = re.compile(rb"""\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._:\-]+)["']""")
# What expat decodes itself. Not its iso-8859-1 and us-ascii: on the web those labels
# are windows-1252 (the WHATWG Encoding Standard), and expat read bytes 0x80-0x9F as
# C1 controls (a "€" in a URL became %C2%80 where a browser has %E2%82%AC).
_EXPAT_ENCODINGS = frozenset({"utf-8", "utf-16"})
_DECLARATION_MAX = 4096  # bytes to look for the end of the XML declaration in
_XML_START = re.compile(
    rb"<\?xml[\t\r\n ]|<(?:[A-Za-z_][\w.-]*:)?(?:urlset|sitemapindex)[\t\r\n >]"
)


def xml_after_junk(body: bytes) -> int | None:
    """Where a sitemap's XML starts in ``body`` (the first chunk), when something that
    is no sitemap text came before it: a line that is not a URL, then an XML
    declaration or a sitemap root on a later line. None otherwise."""
    found = _XML_START.search(body, 0, 64 * 1024)
    if found is None:
        return None
    if re.match(rb"\s*https?://", body, re.IGNORECASE):
        return None  # a text sitemap: its first line is a URL
    return found.start()


def _with_declaration(first: bytes, chunks: Iterator[bytes]) -> bytes:
    """``first`` and as many of ``chunks`` as it takes to hold the XML declaration
    whole, up to its ``>`` (or the first tag's, if there is none; at most
    ``_DECLARATION_MAX`` bytes). A pipe gives what was written so far: a first read
    of ``<?xml v`` hid the encoding, and expat was left to read it, which for Big5,
    Shift_JIS or EUC-KR was a crash (ValueError: multi-byte encodings are not
    supported) and for iso-8859-1 its own Latin-1, not windows-1252."""
    while b">" not in first and len(first) < _DECLARATION_MAX:
        more = next(chunks, None)
        if more is None:
            break
        first += more
    return first


def _after_the_end(exc: expat.ExpatError, handler: XMLHandler) -> bool:
    """Whether ``exc`` is text after the root element's end (a PHP warning printed
    after the feed, as after the XML declaration): every record was read whole by
    then, yet the file failed (exit 1) as malformed."""
    junk = exc.code == expat.errors.codes[expat.errors.XML_ERROR_JUNK_AFTER_DOC_ELEMENT]
    return junk and handler.format is not None and handler.depth == 0


def parse_xml(
    first: bytes,
    chunks: Iterator[bytes],
    on_entry: OnEntry,
    stats: SitemapStats,
    source: str,
) -> Iterator[None]:
    """Parse ``first`` and then ``chunks``, calling ``on_entry`` for each record;
    yields after each chunk, for the caller to hand on what ``on_entry`` made.

    Raises :class:`SitemapError` (with ``source``) for an unknown encoding, malformed
    or hostile XML, or a root element of no known format.
    """
    first = _with_declaration(first, chunks)
    declared = _XML_ENCODING.match(first.removeprefix(b"\xef\xbb\xbf"))
    encoding = declared.group(1).decode("ascii").lower() if declared else None
    if encoding is not None and encoding not in _EXPAT_ENCODINGS:
        # expat decodes UTF-8/16; Python decodes the rest (windows-1252, shift_jis,
        # ...) to UTF-8 on the way in, chunk by chunk. Only the web's encodings (the
        # WHATWG labels): any other Python codec name ("undefined", "zlib") crashed.
        codec = codec_for_label(encoding)
        if codec is None:
            raise SitemapError(f"unknown encoding {encoding!r}", source=source)
        decoder = codecs.getincrementaldecoder(codec)(errors="replace")
        first = decoder.decode(first).encode("utf-8")
        chunks = transcode(chunks, decoder)
        parser = expat.ParserCreate("UTF-8", namespace_separator=SEP)
    else:
        parser = expat.ParserCreate(namespace_separator=SEP)
    fix = BareAmpersands()
    if encoding != "utf-16" and not first.startswith((b"\xff\xfe", b"\xfe\xff")):
        first, chunks = repaired(first, chunks, fix)  # UTF-8 on its way into expat
    try:
        yield from _parse(parser, first, chunks, on_entry, stats, source)
    finally:
        stats.ampersands = fix.repaired


def _parse(
    parser: expat.XMLParserType,
    first: bytes,
    chunks: Iterator[bytes],
    on_entry: OnEntry,
    stats: SitemapStats,
    source: str,
) -> Iterator[None]:
    """:func:`parse_xml`'s work once the bytes are settled: ``parser`` fed with
    ``first`` and ``chunks``, each error turned into a :class:`SitemapError`."""
    handler = XMLHandler(parser, on_entry, stats)
    parser.buffer_text = True
    parser.buffer_size = CHUNK
    # Refuse what hostile documents need; an external DTD is never fetched.
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.EntityDeclHandler = handler.entity_decl
    parser.StartDoctypeDeclHandler = handler.start_doctype
    parser.EndDoctypeDeclHandler = handler.end_doctype
    parser.UnparsedEntityDeclHandler = handler.refuse_entity
    parser.ExternalEntityRefHandler = handler.refuse_external
    parser.StartElementHandler = handler.start
    parser.EndElementHandler = handler.end
    parser.CharacterDataHandler = handler.chars
    parser.SkippedEntityHandler = handler.skipped
    data: bytes | None = first
    try:
        while data is not None:
            parser.Parse(data, False)
            yield
            data = next(chunks, None)
        if stats.truncated:
            handler.close_open_record()  # cut at the size limit: no end to wait for
        else:
            parser.Parse(b"", True)
    except expat.ExpatError as exc:
        if _after_the_end(exc, handler):
            stats.trailing = exc.lineno  # the document was whole: said, not failed
            return
        handler.close_open_record()
        raise SitemapError(
            f"malformed XML at line {exc.lineno}, column {exc.offset}: "
            f"{expat.ErrorString(exc.code)}",
            source=source,
        ) from exc
    except UndefinedEntity as exc:
        handler.close_open_record()
        raise SitemapError(
            f"malformed XML at line {parser.CurrentLineNumber}: {exc}", source=source
        ) from exc
    except Hostile as exc:
        raise SitemapError(
            f"hostile XML refused at line {parser.CurrentLineNumber}: {exc}", source=source
        ) from exc
    except SitemapError as exc:
        handler.close_open_record()  # (a cut gzip stream, or no record open)
        if exc.source is None:
            raise SitemapError(str(exc), source=source) from exc
        raise
