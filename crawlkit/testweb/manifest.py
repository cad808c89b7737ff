"""The manifest: what a test needs to know to compute expectations about a crawl.

``build_manifest(web, port, directory)`` returns a JSON-ready dict::

    {"seed", "port", "allow_net", "private_net", "agent", "seeds": [urls],
     "reachable_pages": R, "allowed_pages": A,
     "hosts": [{"name", "addr", "kind", "root", "private", "infinite",
                "robots": {"url", "status", "crawl_delay", "text" | "file"},
                "pages": [urls], "allowed": [urls], "disallowed": [urls],
                "hostile": [urls], "notes": {...}}]}

* ``pages``: URLs (canonical: crawlkit's default rules leave them unchanged) that
  answer 200 and are linked from, or listed by, something reachable from the seeds.
  Infinite hosts (traps, link farm) list only their entry pages and say
  ``"infinite": true``; ``notes`` describes the trap.
* ``allowed``: the pages robots.txt lets the agent token ``crawlkit`` fetch (hand
  written truth, not computed by a matcher). ``disallowed``: pages it must not fetch.
  A polite crawl from the seeds with ``--allow-net 127.0.0.0/9`` should fetch every
  ``allowed`` page of the finite public hosts.
* Private hosts (``"private": true``) sit in 127.255.0.0/16: a crawler must refuse them
  unless told otherwise. They are not seeds and do not count in R or A.
* R = the number of ``pages`` over public hosts; A = the number of ``allowed``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crawlkit.testweb import files, pages, specials
from crawlkit.testweb.graph import PRIVATE_NET, PUBLIC_NET, Host, Web
from crawlkit.testweb.special_site import AGENT, ALLOW_ALL, Facts, Site, robots_entry


def _ordinary(site: Site) -> Facts:
    web, host = site.web, site.host
    robots = pages.robots_text(web, host)
    delay = web.config.crawl_delay if host.robots == "delay" else None
    entry = robots_entry(
        site.robots_url, 404 if robots is None else 200, robots.decode() if robots else None, delay
    )
    return Facts([pages.page_path(p) for p in range(host.pages)], robots=entry)


def _describe(
    web: Web, host: Host, port: int, directory: Path, tls_port: int | None = None
) -> dict[str, Any]:
    scheme, link_port = ("https", tls_port) if tls_port else ("http", port)
    site = Site(web, host, scheme, port, link_port, directory)
    if host.kind == "ordinary":
        facts = _ordinary(site)
    elif host.kind == "files" and web.config.files is not None:
        facts = files.describe(site, Path(web.config.files))
    else:
        facts = specials.describe(site)
    base = site.base
    robots = facts.robots or robots_entry(site.robots_url, 200, ALLOW_ALL.decode())
    page_urls = [base + p for p in facts.pages]
    disallowed = [base + p for p in facts.disallowed]
    # A page disallowed only by a rule past 500 KiB (robots-big) is neither.
    undecided = set(facts.notes.get("past_500k", []))
    allowed = [u for u in page_urls if u not in set(disallowed) and u not in undecided]
    return {
        "name": host.name,
        "addr": host.addr,
        "kind": host.kind,
        "root": base + "/",
        "private": host.kind == "private",
        "infinite": facts.infinite,
        "robots": robots,
        "pages": page_urls,
        "allowed": allowed,
        "disallowed": disallowed,
        "hostile": [base + p for p in facts.hostile],
        "notes": facts.notes,
    }


def build_manifest(
    web: Web, port: int, directory: Path, tls_port: int | None = None
) -> dict[str, Any]:
    """The manifest for ``web`` served on ``port`` (see module docstring); with
    ``tls_port`` every URL in it is https on that port (the web links that way)."""
    hosts = [_describe(web, h, port, directory, tls_port) for h in web.hosts]
    public = [h for h in hosts if not h["private"]]
    return {
        "seed": web.config.seed,
        "port": port,
        "tls_port": tls_port,
        "allow_net": PUBLIC_NET,
        "private_net": PRIVATE_NET,
        "agent": AGENT,
        "seeds": [
            h["root"]
            for h, host in zip(hosts, web.hosts, strict=True)
            if not h["private"] and web.is_seed(host)
        ],
        "reachable_pages": sum(len(h["pages"]) for h in public),
        "allowed_pages": sum(len(h["allowed"]) for h in public),
        "config": {
            "hosts": web.config.hosts,
            "pages": web.config.pages,
            "page_kb": web.config.page_kb,
            "specials": web.config.specials,
            "slow_delay": web.config.slow_delay,
            "retry_after": web.config.retry_after,
            "crawl_delay": web.config.crawl_delay,
            "change_every": web.config.change_every,
            "drip_interval": web.config.drip_interval,
            "ip_hosts": web.config.ip_hosts,
            "seed_hosts": web.config.seed_hosts,
            "robots_404": web.config.robots_404,
            "crawl_delay_hosts": web.config.crawl_delay_hosts,
        },
        "hosts": hosts,
    }
