"""A synthetic web on loopback, hostile parts included (``crawlkit testweb``).

Public API:

* ``WebConfig`` — what determines the web (hosts, pages, page size, seed, specials).
* ``build_web(config)`` — the deterministic host list and graph.
* ``TestWebServer(config, directory, port=0)`` — serves it (async start/stop).
* ``parse_specials(text)`` and ``KINDS`` — the special hosts.
* ``run_testweb(...)`` — the blocking entry point used by the CLI.
"""

from crawlkit.testweb.graph import PRIVATE_NET, PUBLIC_NET, Host, Web, WebConfig, build_web
from crawlkit.testweb.kinds import KINDS, parse_specials
from crawlkit.testweb.run import run_testweb
from crawlkit.testweb.server import TestWebServer

__all__ = [
    "KINDS",
    "PRIVATE_NET",
    "PUBLIC_NET",
    "Host",
    "TestWebServer",
    "Web",
    "WebConfig",
    "build_web",
    "parse_specials",
    "run_testweb",
]
