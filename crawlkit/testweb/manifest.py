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

from crawlkit.testweb import pages, requisites, tls
from crawlkit.testweb.graph import PRIVATE_NET, PUBLIC_NET, Host, Web
from crawlkit.testweb.special_bodies import BOMB_DECODED, DRIP_PIECE, DRIP_SIZE, HUGE_SIZE
from crawlkit.testweb.special_change import CONDITIONAL_PAGES
from crawlkit.testweb.special_duplicates import DUP_DOCS, NEAR_DUP_PAGES, dup_variants
from crawlkit.testweb.special_formats import (
    SITEMAP_A,
    SITEMAP_B,
    SITEMAP_LINKED,
    SITEMAP_T,
    TYPES,
    lastmod,
)
from crawlkit.testweb.special_pace import SLOW_PAGES, THROTTLE_EVERY
from crawlkit.testweb.special_redirects import CHAIN_STATUSES, LONG_HOPS
from crawlkit.testweb.special_robots import (
    ROBOTS_BIG_SIZE,
    ROBOTS_REDIRECT_FINAL,
    ROBOTS_RULES_PAGES,
    robots_big_text,
    robots_rules_text,
)
from crawlkit.testweb.special_site import AGENT, ALLOW_ALL
from crawlkit.testweb.special_traps import FARM_FANOUT, SESSION_ITEMS


def _robots(url: str, status: int | None, text: str | None = None, crawl_delay: float | None = None,
            file: str | None = None) -> dict[str, Any]:  # fmt: skip
    out: dict[str, Any] = {"url": url, "status": status, "crawl_delay": crawl_delay}
    if file:
        out["file"] = file
    else:
        out["text"] = text
    return out


def _describe(
    web: Web, host: Host, port: int, directory: Path, tls_port: int | None = None
) -> dict[str, Any]:
    scheme, link_port = ("https", tls_port) if tls_port else ("http", port)
    base = f"{scheme}://{host.name}:{link_port}"
    robots_url = base + "/robots.txt"
    entry: dict[str, Any] = {
        "name": host.name, "addr": host.addr, "kind": host.kind, "root": base + "/",
        "private": host.kind == "private", "infinite": False,
        "robots": _robots(robots_url, 200, ALLOW_ALL.decode()),
        "pages": [], "allowed": None, "disallowed": [], "hostile": [], "notes": {},
    }  # fmt: skip
    k = host.kind
    pg: list[str]
    disallowed: list[str] = []
    hostile: list[str] = []
    notes: dict[str, Any] = {}
    if k == "ordinary":
        robots = pages.robots_text(web, host)
        delay = web.config.crawl_delay if host.robots == "delay" else None
        entry["robots"] = _robots(robots_url, 404 if robots is None else 200,
                                  robots.decode() if robots else None, delay)  # fmt: skip
        pg = [pages.page_path(p) for p in range(host.pages)]
    elif k == "robots-rules":
        cd = web.config.crawl_delay
        entry["robots"] = _robots(robots_url, 200, robots_rules_text(cd).decode(), cd)
        pg = [p for p, _, _ in ROBOTS_RULES_PAGES]
        disallowed = [p for p, ok, _ in ROBOTS_RULES_PAGES if not ok]
        notes["allowed_for_star"] = [base + p for p, _, ok in ROBOTS_RULES_PAGES if ok]
        notes["pdf"] = [base + "/docs/report.pdf", base + "/docs/report.pdf?download=1"]
    elif k == "robots-404":
        entry["robots"] = _robots(robots_url, 404, None)
        pg = ["/", "/a.html", "/b.html"]
    elif k == "robots-503":
        entry["robots"] = _robots(robots_url, 503, None)
        pg = ["/", "/a.html", "/b.html"]
        disallowed = list(pg)
        notes["why"] = "robots.txt answers 503 forever: disallow everything (RFC 9309 2.3.1.4)"
    elif k == "robots-redirect":
        entry["robots"] = _robots(robots_url, 301, ROBOTS_REDIRECT_FINAL.decode())
        notes["robots_chain"] = [robots_url, base + "/robots-moved.txt",
                                 base + "/r/robots-2.txt", base + "/final-robots.txt"]  # fmt: skip
        pg = ["/", "/blocked/x.html", "/open.html"]
        disallowed = ["/blocked/x.html"]
    elif k == "robots-big":
        path = directory / "robots" / f"{host.name}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(robots_big_text())
        entry["robots"] = _robots(robots_url, 200, file=str(path))
        pg = ["/", "/deep-rule/x.html", "/fine.html", "/beyond-limit/x.html"]
        disallowed = ["/deep-rule/x.html"]
        notes["size"] = ROBOTS_BIG_SIZE
        notes["past_500k"] = [base + "/beyond-limit/x.html"]
        notes["why"] = ("/beyond-limit/ is disallowed by a rule past 500 KiB: a crawler may "
                        "fetch it or not, so it is in neither allowed nor disallowed")  # fmt: skip
    elif k in ("slow", "status-429", "status-503"):
        pg = list(SLOW_PAGES)
        if k == "slow":
            notes["delay"] = web.config.slow_delay
        else:
            notes["throttle_every"] = THROTTLE_EVERY
            notes["retry_after"] = web.config.retry_after
            notes["retry_after_format"] = "seconds" if k == "status-429" else "http-date"
    elif k == "calendar":
        pg = ["/"]
        entry["infinite"] = True
        notes["trap"] = "/calendar/YYYY/MM/[DD/] links to the next and previous month forever"
    elif k == "session-trap":
        pg = ["/"] + [f"/catalog/item-{i}.html" for i in range(SESSION_ITEMS)]
        entry["infinite"] = True
        notes["trap"] = ("every link carries a new session id: ?sid=TOKEN (dropped by default "
                         "canonicalization) or /s/TOKEN/... in the path (not dropped)")  # fmt: skip
        notes["session_param"] = "sid"
    elif k == "duplicates":
        pg = ["/"] + [v for i in range(DUP_DOCS) for v in dup_variants(i)]
        notes["groups"] = [[base + v for v in dup_variants(i)]
                           for i in range(DUP_DOCS)]  # fmt: skip
    elif k == "near-duplicates":
        pg = ["/"] + [f"/news/{i}.html" for i in range(NEAR_DUP_PAGES)]
        notes["group"] = [base + f"/news/{i}.html" for i in range(NEAR_DUP_PAGES)]
    elif k == "redirects":
        pg = ["/", "/final.html"]
        notes["redirects"] = {
            "chain": [base + f"/chain/{i}" for i in range(len(CHAIN_STATUSES))]
            + [base + "/final.html"],
            "long": [base + f"/long/{i}" for i in range(LONG_HOPS)] + [base + "/final-long.html"],
            "loop": [base + "/loop/a", base + "/loop/b"],
            "self": base + "/self",
            "relative": [base + "/rel", base + "/final.html"],
            "cross_host": [base + "/to-h0", f"{scheme}://h0.test:{link_port}/"],
        }
        notes["beyond_hop_cap"] = [base + "/final-long.html"]
    elif k == "gzip-bomb":
        pg = ["/"]
        hostile = ["/bomb.html"]
        notes["decoded_bytes"] = BOMB_DECODED
    elif k == "huge":
        pg = ["/"]
        hostile = ["/huge.html", "/endless.html"]
        notes["huge_bytes"] = HUGE_SIZE
    elif k == "slow-drip":
        pg = ["/"]
        hostile = ["/drip.html", "/stall.html", "/slow-headers.html"]
        notes["drip"] = {"bytes": DRIP_SIZE, "piece": DRIP_PIECE,
                         "interval": web.config.drip_interval}  # fmt: skip
    elif k == "malformed":
        pg = ["/", "/page-1.html", "/page-2.html", "/page-3.html", "/bad-charset.html",
              "/no-length.html"]  # fmt: skip
        hostile = ["/broken-chunk.html", "/drop.html", "/garbage"]
        notes["not_links"] = [base + "/in-comment.html", base + "/in-script.html"]
    elif k == "types":
        pg = ["/", *TYPES]
        notes["content_types"] = {base + p: t for p, (t, _) in TYPES.items()}
    elif k == "sitemaps":
        sm = SITEMAP_A + SITEMAP_B + SITEMAP_T
        pg = ["/", *sm]
        entry["robots"]["text"] = (f"User-agent: *\nDisallow:\n\nSitemap: {base}/sitemap_index.xml"
                                   f"\nSitemap: {base}/sitemap.txt\n")  # fmt: skip
        notes["sitemaps"] = [base + p for p in ("/sitemap_index.xml", "/sitemap-a.xml",
                                                "/sitemap-b.xml.gz", "/sitemap.txt")]  # fmt: skip
        notes["sitemap_only"] = [base + p for p in sm if p not in SITEMAP_LINKED]
        notes["lastmod"] = {base + p: lastmod(p) for p in sm}
    elif k == "conditional":
        pg = ["/", *CONDITIONAL_PAGES]
        notes["validators"] = {base + "/etag-only.html": ["etag"],
                               base + "/lm-only.html": ["last-modified"],
                               base + "/both.html": ["etag", "last-modified"],
                               base + "/weak.html": ["weak-etag"],
                               base + "/no-validators.html": []}  # fmt: skip
    elif k == "changing":
        pg = ["/", "/clock.html", "/stable.html"]
        notes["change_every"] = web.config.change_every
        notes["changing"] = [base + "/clock.html"]
    elif k == "private":
        pg = ["/", "/secret.html"]
        notes["why"] = f"address in {PRIVATE_NET}: refuse unless --allow-net covers it"
    elif k == "gateway":
        pg = ["/"]
        notes["to_private"] = [f"{scheme}://private-{host.ordinal}.test:{link_port}/secret.html",
                               base + "/go-private"]  # fmt: skip
    elif k == "link-farm":
        pg = ["/"]
        entry["infinite"] = True
        notes["trap"] = (f"each page links to {FARM_FANOUT} new pages on the other "
                         "farm hosts, forever; all farm hosts share one address")  # fmt: skip
        notes["farm"] = [h.name for h in web.specials_of.get("link-farm", [])]
    elif k == "ipv6":
        pg = ["/", "/v6.html"]
        notes["why"] = "on ::1 only: needs --allow-net ::1/128; also reachable as [::1]"
    elif k in tls.TLS_KINDS:
        pg, hostile, notes = tls.describe(k, base, f"http://{host.name}:{port}")
    elif k in ("requisites", "assets"):
        pg, notes = requisites.describe(host, base, port)
    else:  # pragma: no cover - every kind is described above
        raise AssertionError(k)
    entry["pages"] = [base + p for p in pg]
    entry["disallowed"] = [base + p for p in disallowed]
    undecided = set(notes.get("past_500k", []))
    entry["allowed"] = [u for u in entry["pages"]
                        if u not in set(entry["disallowed"]) and u not in undecided]  # fmt: skip
    entry["hostile"] = [base + p for p in hostile]
    entry["notes"] = notes
    return entry


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
