"""Archive a real site saved as files, served on loopback, and judge it from the server.

Run on demand (never in CI). The site is a directory of a static site's files, e.g.
the whole Kaitai Struct format gallery (tests/data/real-site/README.md; 3,119 pages,
6,769 URLs reachable from its home page), brought with the ``fetch`` tool::

    git --git-dir=/work/.mirror/kaitai-io+formats-kaitai-io.github.io/repo \\
        archive HEAD | tar x -C /tmp/kaitai-site
    .venv/bin/python bench/real_site.py /tmp/kaitai-site --for 600

The directory is served by ``crawlkit testweb --files`` (HTTP/1.1 keep-alive, as the
host ``files.test``, the web's request log on disk); ``crawlkit archive`` runs on it
with ``--dns-server 127.0.0.1:9`` (the other hosts the pages name are looked up
nowhere) for ``--for`` seconds at a time, again
and again (each run resumes the last) until it ends on its own or ``--runs`` is
reached. Then the server's log is set against what a walk of the files with the
standard library's HTML parser reaches from the home page by ``<a href>``: URLs never
asked, asked twice, asked but not reachable; the smallest gap between two requests;
the wall time and the URLs a second. Exit status 1 if any URL was missed or asked
twice.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import signal
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

ROOT = Path(__file__).resolve().parents[1]


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("a", "area"):
            self.hrefs += [v for k, v in attrs if k == "href" and v is not None]


def _file_of(site: Path, path: str) -> Path | None:
    local = site / unquote(path).lstrip("/")
    if path.endswith("/"):
        local = local / "index.html"
    return local if local.is_file() else None


def reachable(site: Path, start: str) -> set[str]:
    """The paths on ``start``'s origin reached from it by ``<a href>``, found or not."""
    origin = urlsplit(start).netloc
    seen, queue = {start}, collections.deque([start])
    while queue:
        url = queue.popleft()
        local = _file_of(site, urlsplit(url).path or "/")
        if local is None or local.suffix != ".html":
            continue
        parser = _Links()
        parser.feed(local.read_text("utf-8", "replace"))
        for href in parser.hrefs:
            target = urldefrag(urljoin(url, href.strip()))[0]
            parts = urlsplit(target)
            if parts.scheme == "http" and parts.netloc == origin and target not in seen:
                seen.add(target)
                queue.append(target)
    return {urlsplit(u).path or "/" for u in seen}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("site", type=Path, help="the site's files (its home page: index.html)")
    ap.add_argument("--for", dest="duration", type=float, default=600, help="seconds a run")
    ap.add_argument("--runs", type=int, default=10, help="most runs (each resumes the last)")
    ap.add_argument("--min-delay", default="0s", help="crawl's --min-delay")
    args = ap.parse_args()

    out = Path(tempfile.mkdtemp(prefix="real-site-"))
    serve = ["testweb", "--hosts", "0", "--special", "none", "--files", str(args.site)]
    web = subprocess.Popen(
        [sys.executable, "-m", "crawlkit", *serve, "--dir", str(out / "web")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
    )
    assert web.stdout is not None
    ready = json.loads(web.stdout.readline() or b"{}")
    if not ready.get("ready"):
        web.kill()
        print("testweb did not start", file=sys.stderr)
        return 1
    start = f"http://files.test:{ready['port']}/"
    began = time.monotonic()
    for run in range(1, args.runs + 1):
        cmd = [sys.executable, "-m", "crawlkit", "archive", start, str(out / "coll")]
        cmd += ["--allow-net", "127.0.0.0/9", "--hosts-file", ready["hosts_file"]]
        cmd += ["--dns-server", "127.0.0.1:9"]
        cmd += ["--min-delay", args.min_delay, "--for", f"{args.duration:g}s"]
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        print(f"run {run}: exit {done.returncode}")
        print("   " + "\n   ".join(done.stderr.strip().splitlines()[:3]))
        if "frontier empty" in done.stderr or done.returncode != 0:
            break
    wall = time.monotonic() - began
    web.send_signal(signal.SIGTERM)  # it flushes its log as it stops
    web.wait()
    log = [
        (r["path"], r["status"], r["t_start"], r["t_end"])
        for r in map(json.loads, Path(ready["log"]).read_text().splitlines())
    ]

    want = reachable(args.site, start)
    asked = collections.Counter(path for path, *_ in log)
    twice = sorted(p for p, n in asked.items() if n > 1)
    missed = sorted(want - set(asked))
    extra = sorted(set(asked) - want)
    ordered = sorted(log, key=lambda r: r[2])
    gaps = [b[2] - a[3] for a, b in itertools.pairwise(ordered)]
    print(f"reachable by <a href> from the home page: {len(want)} URLs")
    rate = len(log) / wall
    print(f"asked: {len(log)} requests, {len(asked)} URLs, in {wall:.0f} s ({rate:.1f}/s)")
    print(f"asked twice: {len(twice)} {twice[:5]}")
    print(f"reachable, never asked: {len(missed)} {missed[:5]}")
    print(f"asked, not reachable by <a href> (robots.txt, requisites): {extra[:10]}")
    print(f"smallest gap between an answer and the next request: {min(gaps, default=0):.3f} s")
    print(f"collection: {out / 'coll'}")
    return 1 if twice or missed else 0


if __name__ == "__main__":
    sys.exit(main())
