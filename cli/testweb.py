"""crawlkit testweb."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from crawlkit_cli.app import app, reporter

from crawlkit.errors import UsageError
from crawlkit.testweb import KINDS, WebConfig, parse_specials, run_testweb
from crawlkit.testweb.tls import TLS_KINDS
from crawlkit.times import parse_duration

_KIND_HELP = "; ".join(f"{k.name}: {k.help}" for k in KINDS.values())


def _tls_specials(chosen: dict[str, int], text: str, tls: bool) -> None:
    """With --tls, 'all' (the default) includes the TLS kinds; without, none may be named."""
    named = [k for k in chosen if k in TLS_KINDS]
    if not tls:
        if named:
            raise UsageError(f"special kind {named[0]!r} needs --tls")
        return
    items = [i.strip() for i in text.split(",") if i.strip()]
    if not items or items[0] == "all" or all(i.startswith("-") for i in items):
        removed = {i[1:] for i in items if i.startswith("-")}
        chosen.update({k: 1 for k in TLS_KINDS if k not in removed and k not in chosen})


def _served_directory(path: Path | None) -> str | None:
    """--files as an absolute path, refused unless it is a directory."""
    if path is None:
        return None
    if not path.is_dir():
        raise UsageError(f"--files {path}: not a directory")
    return str(path.resolve())


@app.command("testweb")
def testweb(
    hosts: Annotated[int, typer.Option("--hosts", help="Ordinary hosts (h0.test ...).")] = 10,
    pages: Annotated[
        int,
        typer.Option("--pages", help="Mean pages per ordinary host (skewed: a few big sites)."),
    ] = 50,
    page_kb: Annotated[float, typer.Option("--page-kb", help="Approximate page size in KB.")] = 20,
    seed: Annotated[int, typer.Option("--seed", help="Same seed, same web, same bytes.")] = 0,
    port: Annotated[
        int, typer.Option("--port", help="Port every host listens on; 0 picks a free one.")
    ] = 0,
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            help="Where to write hosts, seeds.txt, manifest.json and "
            "requests.ndjson (default: a new temporary directory).",
            show_default=False,
        ),
    ] = None,
    hosts_file: Annotated[
        Path | None, typer.Option("--hosts-file", help="Write the hosts file here.")
    ] = None,
    seeds: Annotated[Path | None, typer.Option("--seeds", help="Write the seeds here.")] = None,
    log: Annotated[
        Path | None, typer.Option("--log", help="Write the request log (NDJSON) here.")
    ] = None,
    special: Annotated[
        str,
        typer.Option(
            "--special",
            help="Special hosts: 'all' (default), 'none', or a comma list of KIND, KIND:N "
            "(N hosts) and -KIND (remove), e.g. 'none,slow:2,calendar' or 'all,-huge'. "
            "'all' gives one host of each kind (three for link-farm). "
            f"Kinds — {_KIND_HELP}.",
        ),
    ] = "all",
    duration: Annotated[
        str | None,
        typer.Option(
            "--for",
            help="Stop after this long (e.g. 30s, 5m); default: until SIGINT or SIGTERM.",
            show_default=False,
        ),
    ] = None,
    slow_delay: Annotated[
        str, typer.Option("--slow-delay", help="Delay of the slow hosts' responses.")
    ] = "0.5s",
    retry_after: Annotated[
        str, typer.Option("--retry-after", help="Retry-After of the 429/503 hosts.")
    ] = "3s",
    crawl_delay: Annotated[
        str,
        typer.Option(
            "--crawl-delay",
            help="Crawl-delay in the robots-rules host and the --crawl-delay-hosts.",
        ),
    ] = "1s",
    change_every: Annotated[
        str, typer.Option("--change-every", help="Period of the changing page.")
    ] = "5s",
    tls: Annotated[
        bool,
        typer.Option(
            "--tls",
            help="Serve every host over HTTPS as well, on a second port, with certificates "
            "from a CA made for the run (written to DIR/ca.pem; fetch and crawl take it with "
            "--ca-file). Absolute links, seeds and the manifest then use https. --special all "
            "(the default) then includes the TLS special hosts (tls-*). Needs the "
            "cryptography package (pip install 'crawlkit[testweb]').",
        ),
    ] = False,
    tls_port: Annotated[
        int, typer.Option("--tls-port", help="HTTPS port with --tls; 0 picks a free one.")
    ] = 0,
    dns: Annotated[
        int | None,
        typer.Option(
            "--dns",
            help="Also answer DNS queries (UDP) on 127.0.0.1:PORT (0 picks a free one; the "
            "ready line's dns gives ADDR:PORT for --dns-server). Besides every host, "
            "alias-0.test is a CNAME chain, short-ttl.test has TTL 1, rebind.test answers "
            "inside --allow-net 127.0.0.0/9 and then outside it, silent.test never answers, "
            "servfail.test fails, other names are NXDOMAIN; queries are logged to "
            "DIR/dns.ndjson.",
            show_default=False,
        ),
    ] = None,
    ip_hosts: Annotated[
        bool,
        typer.Option(
            "--ip-hosts",
            help="Address the ordinary hosts by IP literal (http://127.1.0.7:PORT/), each on "
            "its own address, instead of hN.test.",
        ),
    ] = False,
    seed_hosts: Annotated[
        int | None,
        typer.Option(
            "--seed-hosts",
            help="Seed only the first N ordinary hosts; every other host is still reachable "
            "through links (each home page also links to two more hosts' home pages).",
            show_default=False,
        ),
    ] = None,
    robots_404: Annotated[
        float,
        typer.Option("--robots-404", help="Share of ordinary hosts whose robots.txt answers 404."),
    ] = 0.0,
    crawl_delay_hosts: Annotated[
        int,
        typer.Option(
            "--crawl-delay-hosts",
            help="Ordinary hosts whose robots.txt asks for a Crawl-delay of --crawl-delay: "
            "any but the first (h0, the root of a few-seed web) and those whose "
            "robots.txt is a 404, so at most --hosts minus 1.",
        ),
    ] = 0,
    files: Annotated[
        Path | None,
        typer.Option(
            "--files",
            help="Also serve this directory's files as they are, as one more host "
            "(--files-host; its root a seed): a saved site on loopback, for a crawl to "
            "rehearse on and 'crawlkit audit' to judge. A directory path is its "
            "index.html (301 to it without the slash), Content-Type by extension, "
            "robots.txt the directory's own or a 404. With --files, --hosts 0 serves "
            "the directory alone.",
            show_default=False,
        ),
    ] = None,
    files_host: Annotated[
        str, typer.Option("--files-host", help="The name of the --files host.")
    ] = "files.test",
    warm: Annotated[
        bool,
        typer.Option(
            "--warm",
            help="Render every ordinary page (and its gzip form) before the ready line, "
            "keeping them all in memory: a benchmark's server then spends its CPU on "
            "requests, not on making pages (~1.5 ms each).",
        ),
    ] = False,
) -> None:
    """Serve a synthetic web on loopback, hostile parts included.

    One process serves many virtual hosts named *.test, each on a loopback address in
    127.0.0.0/9 (some share an address, like shared hosting), all on one port. It writes
    a hosts file (/etc/hosts format, for --hosts-file of fetch and crawl), a seeds file
    (one URL a line), manifest.json (every host: address, kind, robots rules, the pages a
    polite crawler should reach) and a request log (NDJSON, one line per request: host,
    addr, port, method, path, t_start, t_end, status, bytes, if_none_match,
    if_modified_since, user_agent, conn, conn_opened, special; flushed as it goes). When ready it
    prints one JSON line on stdout: {"ready": true, "seeds", "hosts_file", "hosts",
    "reachable_pages", "log", "port", "manifest", ...}. It stops on SIGINT/SIGTERM or
    after --for, flushing the log, and when the reader of the log goes away (--log
    /dev/stdout | head). SIGUSR1 flushes the log and then adds one to the
    number in DIR/log-flushed, so a client can wait until every request it made is in
    the log.

    With --tls every host is also served over HTTPS on tls_port (in the ready line,
    with ca_file). The TLS special hosts fail in one way each for a verifying client:
    tls-expired, tls-wrong-name (a certificate for another name), tls-self-signed,
    tls-stall (never finishes the handshake), tls-1-0 (TLS 1.0 only); tls-upgrade
    redirects HTTP to HTTPS and tls-mixed has a https -> http -> https redirect chain.

    Crawl it with --allow-net 127.0.0.0/9: the simulated private network is
    127.255.0.0/16 (host private-0.test, reached through gateway-0.test), which a crawler
    must refuse unless told otherwise. A request whose Host is served on another address
    than the one it arrived on gets 421.

    The same --seed (and --port) gives the same graph and the same bytes; only the
    changing and near-duplicate pages use the clock. Pages are rendered on demand and
    cached (memory grows to at most 256 MB of pages; with --warm, all of them). Touches no state.

    Example:

        crawlkit testweb --hosts 3 --pages 20 --dir web --for 60s | jq .seeds
        crawlkit testweb --hosts 500 --pages 15 --ip-hosts --seed-hosts 5 \\
            --robots-404 0.5 --crawl-delay-hosts 50 --dir web   # a web found by discovery
        crawlkit testweb --hosts 0 --special none --files ./saved-site --dir web
    """
    rep = reporter()
    config = WebConfig(
        hosts=hosts,
        pages=pages,
        page_kb=page_kb,
        seed=seed,
        specials=parse_specials(special),
        slow_delay=parse_duration(slow_delay),
        retry_after=parse_duration(retry_after),
        crawl_delay=parse_duration(crawl_delay),
        change_every=parse_duration(change_every),
        ip_hosts=ip_hosts,
        seed_hosts=seed_hosts,
        robots_404=robots_404,
        crawl_delay_hosts=crawl_delay_hosts,
        files=_served_directory(files),
        files_host=files_host.strip().lower(),
    )
    _tls_specials(config.specials, special, tls)
    if config.change_every <= 0:
        config.change_every = 1.0
    seconds = parse_duration(duration) if duration is not None else None
    out = directory if directory is not None else Path(tempfile.mkdtemp(prefix="testweb-"))

    def ready(info: dict[str, Any]) -> None:
        sys.stdout.buffer.write(orjson.dumps(info) + b"\n")
        sys.stdout.flush()

    served = run_testweb(
        config,
        out,
        duration=seconds,
        on_ready=ready,
        port=port,
        hosts_file=hosts_file,
        seeds_file=seeds,
        log_file=log,
        tls=tls,
        tls_port=tls_port,
        dns_port=dns,
        warm=warm,
    )
    rep.info(f"served {served} requests")
