"""HTTPS for the test web: a certificate authority made for the run, and the TLS hosts.

With ``crawlkit testweb --tls`` every host is served over HTTPS as well, on a second
port (``tls_port`` in the ready line), with a certificate for its own name signed by
a CA made for this run and written to ``DIR/ca.pem`` (pass it to fetch and crawl with
``--ca-file``). The certificate is chosen by SNI; a handshake without SNI, or for a
name the web does not have, gets a certificate for ``unknown.test`` (a name mismatch).

The TLS special hosts (:data:`TLS_KINDS`, present only with ``--tls``) and what a
verifying client must make of them:

* ``tls-expired-0.test``: a CA-signed certificate that expired a day ago
  (``tls-expired``);
* ``tls-wrong-name-0.test``: a CA-signed certificate for ``other-name.test``
  (``tls-hostname``);
* ``tls-self-signed-0.test``: a self-signed certificate for its name (``tls-untrusted``);
* ``tls-stall-0.test``: accepts TCP, reads the ClientHello, never answers
  (``tls-handshake-timeout``);
* ``tls-1-0-0.test``: TLS 1.0 only, OpenSSL security level 0 (``tls-protocol``);
* ``tls-upgrade-0.test``: a normal site; over HTTP every URL answers 301 to the same
  URL over HTTPS;
* ``tls-mixed-0.test``: a cross-scheme chain, https ``/chain/0`` → 302 http
  ``/chain/1`` → 301 https ``/final.html``.

Over plain HTTP the failing hosts serve their small site normally (the failure is in
TLS only). TLS 1.0 needs ``@SECLEVEL=0`` with OpenSSL 3 (its handshake signs with
SHA-1); if the local OpenSSL cannot serve TLS 1.0 at all, the host serves TLS 1.1, and
failing that it serves TLS 1.2 with only a cipher default clients do not offer; the
ready line's ``tls_legacy`` says which (all three are ``tls-protocol`` for a client
that insists on TLS 1.2+ with modern ciphers).

Certificates use one P-256 key for every leaf (the test web is not about key
secrecy); a host's certificate is made on its first handshake and kept, so start-up
costs nothing for a web of thousands of hosts. Needs the ``cryptography`` package
(``pip install 'crawlkit[testweb]'``).
"""

from __future__ import annotations

import datetime
import ssl
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crawlkit.errors import UsageError
from crawlkit.testweb.model import Request, Response, not_found, redirect

__all__ = ["TLS_KINDS", "CertificateAuthority", "TlsSite", "describe", "handle"]

# kind → the reason a verifying client gives (None: the host works over HTTPS)
TLS_KINDS: dict[str, tuple[str | None, str]] = {
    "tls-expired": ("tls-expired", "HTTPS with a certificate that expired a day ago"),
    "tls-wrong-name": ("tls-hostname", "HTTPS with a certificate for another name"),
    "tls-self-signed": ("tls-untrusted", "HTTPS with a self-signed certificate"),
    "tls-stall": ("tls-handshake-timeout", "HTTPS that never finishes the handshake"),
    "tls-1-0": ("tls-protocol", "HTTPS with TLS 1.0 only"),
    "tls-upgrade": (None, "plain HTTP answers 301 to the same URL over HTTPS"),
    "tls-mixed": (None, "a redirect chain https -> http -> https"),
}
WRONG_NAME = "other-name.test"
UNKNOWN_NAME = "unknown.test"
_SITE = ("/", "/a.html", "/b.html")


def _crypto() -> Any:
    try:
        import cryptography  # noqa: F401
    except ImportError:
        raise UsageError(
            "--tls needs the 'cryptography' package: pip install 'crawlkit[testweb]'"
        ) from None
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    return x509, hashes, serialization, ec, NameOID


class CertificateAuthority:
    """A CA made for one run; issues leaf certificates as PEM (certificate + key)."""

    def __init__(self) -> None:
        x509, hashes, serialization, ec, oid = _crypto()
        self._x509, self._hashes, self._ser, self._oid = x509, hashes, serialization, oid
        self._now = datetime.datetime.now(datetime.UTC)
        self._key = ec.generate_private_key(ec.SECP256R1())
        self.leaf_key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(oid.COMMON_NAME, "crawlkit testweb CA")])
        self._name = name
        self.cert = (
            self._builder(name, name, self._key.public_key(), days=(-1, 30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )

    def _builder(self, subject: Any, issuer: Any, public: Any, days: tuple[int, int]) -> Any:
        x509 = self._x509
        day = datetime.timedelta(days=1)
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(self._now + days[0] * day)
            .not_valid_after(self._now + days[1] * day)
        )

    def ca_pem(self) -> bytes:
        return self.cert.public_bytes(self._ser.Encoding.PEM)

    def issue(
        self, name: str, *, san: str | None = None, expired: bool = False, self_signed: bool = False
    ) -> bytes:
        """PEM of a leaf certificate for ``name`` (SAN ``san`` or the name), then its key.

        ``expired``: valid from 30 days ago until yesterday. ``self_signed``: signed
        by its own key instead of the CA.
        """
        x509, oid = self._x509, self._oid
        subject = x509.Name([x509.NameAttribute(oid.COMMON_NAME, san or name)])
        issuer = subject if self_signed else self._name
        days = (-30, -1) if expired else (-1, 30)
        cert = (
            self._builder(subject, issuer, self.leaf_key.public_key(), days)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(san or name)]), False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(self.leaf_key if self_signed else self._key, self._hashes.SHA256())
        )
        enc = self._ser.Encoding.PEM
        key = self.leaf_key.private_bytes(
            enc, self._ser.PrivateFormat.PKCS8, self._ser.NoEncryption()
        )
        chain = b"" if self_signed else self.ca_pem()
        return cert.public_bytes(enc) + chain + key


class TlsSite:
    """Server-side TLS for a test web: the CA, per-host contexts chosen by SNI.

    ``kind_of`` maps a host name to its kind (None for names the web does not have).
    Certificates are written under ``directory`` (``ssl`` loads chains from files).
    """

    def __init__(self, directory: Path, kind_of: Callable[[str], str | None]):
        self.dir = directory
        self.certs = directory / "tls"
        self.certs.mkdir(parents=True, exist_ok=True)
        self.kind_of = kind_of
        self.ca = CertificateAuthority()
        self.ca_file = directory / "ca.pem"
        self.ca_file.write_bytes(self.ca.ca_pem())
        self._contexts: dict[str, ssl.SSLContext] = {}
        self.served_legacy = "TLSv1.0"
        self.default = self._context(UNKNOWN_NAME, self._cert_for(UNKNOWN_NAME, None))
        self.default.sni_callback = self._sni

    def _cert_for(self, name: str, kind: str | None) -> Path:
        path = self.certs / f"{name}.pem"
        if kind == "tls-expired":
            pem = self.ca.issue(name, expired=True)
        elif kind == "tls-wrong-name":
            pem = self.ca.issue(name, san=WRONG_NAME)
        elif kind == "tls-self-signed":
            pem = self.ca.issue(name, self_signed=True)
        else:
            pem = self.ca.issue(name)
        path.write_bytes(pem)
        return path

    @staticmethod
    def _context(name: str, chain: Path) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(chain)
        return ctx

    def host_context(self, name: str) -> ssl.SSLContext | None:
        """The context with ``name``'s certificate (made on first use), None if unknown."""
        ctx = self._contexts.get(name)
        if ctx is None:
            kind = self.kind_of(name)
            if kind is None:
                return None
            ctx = self._contexts[name] = self._context(name, self._cert_for(name, kind))
        return ctx

    def _sni(self, sslobj: ssl.SSLObject, server_name: str | None, _ctx: Any) -> None:
        ctx = self.host_context(server_name.lower().rstrip(".")) if server_name else None
        if ctx is not None:
            sslobj.context = ctx

    def legacy_context(self, name: str) -> ssl.SSLContext:
        """TLS 1.0 only (see the module docstring for the fallbacks)."""
        ctx = self._context(name, self._cert_for(name, "tls-1-0"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # TLSVersion.TLSv1 is
            for version, label in (
                (ssl.TLSVersion.TLSv1, "TLSv1.0"),
                (ssl.TLSVersion.TLSv1_1, "TLSv1.1"),
            ):
                try:
                    ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
                    ctx.minimum_version = version
                    ctx.maximum_version = version
                except (ssl.SSLError, ValueError):
                    continue
                self.served_legacy = label
                return ctx
        ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        ctx.set_ciphers("AES128-SHA")  # RSA key exchange: off in default clients
        self.served_legacy = "TLSv1.2 with a legacy cipher only"
        return ctx


class StallProtocol:
    """A TLS listener that reads the ClientHello and never answers (handshake stall).

    Connections are dropped when the server stops (``close_all``).
    """

    def __init__(self, conns: set[Any]):
        self._conns = conns
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self._conns.add(self)

    def data_received(self, data: bytes) -> None:
        pass

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._conns.discard(self)

    def pause_writing(self) -> None:
        pass

    def resume_writing(self) -> None:
        pass


def is_tls(ctx: Any, req: Request) -> bool:
    """Whether ``req`` arrived on the server's HTTPS port."""
    return bool(getattr(ctx, "tls_port", 0)) and req.port == ctx.tls_port


def _site(name: str, req: Request, pages: tuple[str, ...], extra: tuple[str, ...] = ()) -> Response:
    """A tiny site: robots.txt allows all; each page links to the others and ``extra``."""
    if req.route == "/robots.txt":
        return Response(200, b"User-agent: *\nDisallow:\n", content_type="text/plain")
    if req.route not in pages:
        return not_found()
    links = "".join(f'<li><a href="{p}">{p}</a></li>' for p in (*pages, *extra) if p != req.route)
    body = (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{name} {req.route}'
        f"</title></head><body><h1>{name}</h1><ul>{links}</ul></body></html>\n"
    )
    return Response(200, body.encode())


MIXED_PAGES = ("/", "/final.html")


def handle(ctx: Any, web: Any, host: Any, req: Request) -> Response:
    """The response of a TLS special host (see the module docstring)."""
    if host.kind == "tls-upgrade" and not is_tls(ctx, req):
        return redirect(301, ctx.url(host.name, req.path, scheme="https"))
    if host.kind != "tls-mixed":
        return _site(host.name, req, _SITE)
    if req.route == "/chain/0":
        return redirect(302, ctx.url(host.name, "/chain/1", scheme="http"))
    if req.route == "/chain/1":
        return redirect(301, ctx.url(host.name, "/final.html", scheme="https"))
    return _site(host.name, req, MIXED_PAGES, ("/chain/0",))


def describe(kind: str, base: str, http_base: str) -> tuple[list[str], list[str], dict[str, Any]]:
    """(pages, hostile paths, notes) of a TLS host for the manifest (paths relative)."""
    reason, _ = TLS_KINDS[kind]
    notes: dict[str, Any] = {"tls": reason}
    if reason is not None:
        # Nothing is reachable over verified HTTPS; over HTTP the site is served.
        notes["http_pages"] = [http_base + p for p in _SITE]
        if kind == "tls-wrong-name":
            notes["certificate_name"] = WRONG_NAME
        return [], ["/"], notes
    if kind == "tls-upgrade":
        notes["upgrade"] = {http_base + p: base + p for p in _SITE}
        return list(_SITE), [], notes
    notes["chain"] = [base + "/chain/0", http_base + "/chain/1", base + "/final.html"]
    return list(MIXED_PAGES), [], notes
