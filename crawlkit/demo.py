"""``crawlkit demo``: a synthetic web, a polite crawl of it, the audit and the report.

Starts ``crawlkit testweb`` in this process (its own event loop in a thread), crawls it
with the polite defaults except for a shorter gap between requests to one host (the
demo says so), then audits the server's request log and writes the HTML report.
Everything stays on loopback.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crawlkit import streams
from crawlkit.crawl import CrawlOptions, CrawlSummary, crawl
from crawlkit.diag import NullReporter, Reporter
from crawlkit.fetch.engine import FetchConfig
from crawlkit.fetch.netoptions import NetOptions
from crawlkit.report import render_html
from crawlkit.stages.audit import AuditConfig, run_audit
from crawlkit.stages.report import crawl_report
from crawlkit.testweb import WebConfig, parse_specials
from crawlkit.testweb.run import new_event_loop
from crawlkit.testweb.server import TestWebServer
from crawlkit.testweb.tls import TLS_KINDS

__all__ = ["DemoResult", "run_demo"]


@dataclass
class DemoResult:
    summary: CrawlSummary
    audit: dict[str, Any]
    report: dict[str, Any]
    html: Path
    web: dict[str, Any]
    reachable_fetched: int = 0  # reachable pages (the manifest's R) fetched or refused


class _WebThread:
    """A TestWebServer on its own event loop in a daemon thread."""

    def __init__(self, server: TestWebServer):
        self.server = server
        self.loop = new_event_loop()
        self.ready = threading.Event()
        self.info: dict[str, Any] = {}
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="testweb", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.info = self.loop.run_until_complete(self.server.start())
        except BaseException as exc:  # reported to the caller by start()
            self.error = exc
            self.ready.set()
            return
        self.ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(self.server.stop())
        self.loop.close()

    def start(self) -> dict[str, Any]:
        self.thread.start()
        self.ready.wait(60)
        if self.error is not None:
            raise self.error
        return self.info

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)


def run_demo(
    directory: str | Path,
    *,
    hosts: int = 12,
    pages: int = 30,
    duration: float = 45.0,
    min_delay: float = 0.1,
    specials: str = "all",
    reporter: Reporter | None = None,
    progress: Any = None,
    tls: bool = False,
) -> DemoResult:
    """Run the whole demo under ``directory`` (web/, state/, report.html).

    ``tls``: the web is served (and crawled) over HTTPS, with the TLS special hosts.
    """
    reporter = reporter or NullReporter()
    root = Path(directory)
    config = WebConfig(hosts=hosts, pages=pages, specials=parse_specials(specials))
    if tls:
        config.specials.update(dict.fromkeys(TLS_KINDS, 1))
    server = TestWebServer(config, root / "web", tls=tls)
    web = _WebThread(server)
    info = web.start()
    try:
        options = CrawlOptions(
            scope="any",
            duration=duration,
            batch_size=500,
            per_host=10,
            fetch=FetchConfig(min_delay=min_delay, timeout=5.0),
            allow_net=(str(info["allow_net"]),),
            hosts_file=Path(info["hosts_file"]),
            net=NetOptions(ca_file=Path(info["ca_file"])) if tls else NetOptions(),
        )
        seeds = Path(info["seeds"]).read_text().split()
        summary = crawl(root / "state", seeds, options, reporter=reporter, progress=progress)
    finally:
        web.stop()
    audit = run_audit(
        server_logs=[str(info["log"])],
        manifest=info.get("manifest"),
        config=AuditConfig(min_gap=min_delay),
        reporter=reporter,
    )
    report = crawl_report(
        root / "state",
        extra={
            "audit_violations": len(audit.get("violations", [])),
            "web_reachable_pages": info.get("reachable_pages"),
            "demo_min_delay_s": min_delay,
        },
    )
    html_path = root / "report.html"
    html_path.write_text(render_html(report, "crawlkit demo crawl"), encoding="utf-8")
    manifest = streams.read_json(info["manifest"])
    # The manifest's reachable pages (R) are those of public hosts: a private host's
    # page must be refused, and is not one of them.
    reachable = {
        page for host in manifest["hosts"] if not host["private"] for page in host["pages"]
    }
    fetched = {
        str(rec.get("url"))
        for log in sorted((root / "state" / "crawl" / "cycles").glob("*/fetch.ndjson"))
        for rec in streams.read_records([log])
        if rec.get("outcome") in ("fetched", "not-modified", "robots-denied", "refused")
    }
    return DemoResult(summary, audit, report, html_path, info, len(reachable & fetched))
