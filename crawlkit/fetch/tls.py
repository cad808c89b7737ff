"""TLS for the fetcher: which certificates are trusted, and what a failure is called.

Certificates are verified against the system store (OpenSSL's default paths); a
``--ca-file`` adds CAs to it. Verification uses the URL's host name (SNI and the
name check) while the connection goes to the address the network policy checked
(the client pins it; see :mod:`crawlkit.fetch.client`).

A TLS failure is one of five codes, the start of the fetch record's ``error`` and its
``error_code``:

``tls-expired``            the certificate is outside its validity period
``tls-hostname``           the certificate is for another name
``tls-untrusted``          no trusted CA signed it (self-signed, unknown issuer, ...)
``tls-handshake-timeout``  TCP connected but the handshake did not finish in time
``tls-protocol``           no common protocol version or cipher, or a broken handshake

``--insecure`` (wget's ``--no-check-certificate``) fetches anyway when a *check*
fails (the first four codes but the timeout, plus ``tls-protocol``, since an archive
wants a TLS 1.0 site too): the connection is retried with verification off and
legacy protocols allowed, and the record says which check failed
(``tls_unverified``), as does the WARC metadata record (``tlsUnverified``).
"""

from __future__ import annotations

import os
import ssl
import warnings

from crawlkit.errors import UsageError

__all__ = [
    "TLS_CODES",
    "classify_certificate_error",
    "insecure_context",
    "verifying_context",
]

TLS_CODES = (
    "tls-expired",
    "tls-hostname",
    "tls-untrusted",
    "tls-handshake-timeout",
    "tls-protocol",
)

# OpenSSL X509_V_ERR_* codes (x509_vfy.h)
_NOT_YET_VALID, _EXPIRED, _HOSTNAME_MISMATCH = 9, 10, 62


def verifying_context(ca_file: str | os.PathLike[str] | None = None) -> ssl.SSLContext:
    """The system store (TLS 1.2+, host names checked), plus the CAs in ``ca_file``."""
    ctx = ssl.create_default_context()
    if ca_file is not None:
        try:
            ctx.load_verify_locations(cafile=os.fspath(ca_file))
        except (OSError, ssl.SSLError) as exc:
            why = getattr(exc, "strerror", None) or str(exc)
            raise UsageError(f"--ca-file {ca_file}: {why}") from exc
    return ctx


def insecure_context() -> ssl.SSLContext:
    """No verification, and the old protocols (TLS 1.0, SHA-1) an archive may still meet."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TLSVersion.TLSv1 is deprecated
        try:
            ctx.minimum_version = ssl.TLSVersion.TLSv1
            ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
        except (ValueError, ssl.SSLError):  # an OpenSSL without them: keep its defaults
            pass
    return ctx


def classify_certificate_error(exc: BaseException) -> str:
    """The code of a certificate verification failure (an ``SSLCertVerificationError``)."""
    code = getattr(exc, "verify_code", None)
    if code in (_EXPIRED, _NOT_YET_VALID):
        return "tls-expired"
    if code == _HOSTNAME_MISMATCH:
        return "tls-hostname"
    return "tls-untrusted"
