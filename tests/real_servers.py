"""nginx and Apache httpd serving a small static site on loopback, for
tests/crawl/test_real_servers.py: the site's files, each server's configuration (written
into a temporary directory, never the system's), and each server's access log read back
as the record that judges a crawl.

Each server is run in the foreground from its own configuration, on 127.0.0.1 and a
free high port, with its own pid file, error log and access log; it is stopped when the
block ends. The system services are never started or touched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from conftest import poll_until

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
APACHE = shutil.which("apache2") or (
    "/usr/sbin/apache2" if Path("/usr/sbin/apache2").exists() else None
)
APACHE_MODULES = Path("/usr/lib/apache2/modules")
PAGES = 30  # p00.html .. p29.html


@dataclass(frozen=True)
class Hit:
    """One request as the server logged it: when it began and ended (epoch seconds,
    millisecond resolution), its connection and its place on that connection (1 the
    first), the status, the path asked, and the validators sent."""

    start: float
    end: float
    conn: str
    nth: int
    status: int
    path: str
    if_none_match: str
    if_modified_since: str


# -- the site ----------------------------------------------------------------------------
def _png() -> bytes:
    """A 1x1 PNG: the site's image."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0\xff\0\0"))
        + chunk(b"IEND", b"")
    )


def _page(i: int) -> str:
    links = "".join(f'<a href="/p{(i * 7 + k) % PAGES:02d}.html">next {k}</a> ' for k in (1, 2, 3))
    words = " ".join(f"w{i}x{j}" for j in range(i * 3, i * 3 + 40))  # pages not near-duplicates
    return (
        f"<!doctype html><html><head><title>page {i}</title></head><body><h1>page {i}</h1>"
        f"<p>{words}</p>{links}<a href=/>home</a></body></html>\n"
    )


def write_site(root: Path, origin: str) -> None:
    """The site: 30 pages linking each other, an index with an image, a directory linked
    without its trailing slash (``/docs``), a ~350 KB page, a link to a missing page (a
    404), a page only the sitemap names, and a robots.txt disallowing /private/ to every
    crawler (in a group without Crawl-delay; another bot's group has one)."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(PAGES):
        (root / f"p{i:02d}.html").write_text(_page(i))
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs" / "index.html").write_text(
        "<html><body><a href=guide.html>guide</a></body></html>\n"
    )
    (root / "docs" / "guide.html").write_text(
        "<html><body><a href=../p00.html>p0</a></body></html>\n"
    )
    (root / "private").mkdir(exist_ok=True)
    (root / "private" / "secret.html").write_text("<html><body>not for crawlers</body></html>\n")
    lines = "".join(f"<p>line {i} of a long page, words to make it big</p>\n" for i in range(7000))
    (root / "big.html").write_text(f"<html><body>{lines}<a href=/p05.html>p5</a></body></html>\n")
    (root / "logo.png").write_bytes(_png())
    (root / "orphan.html").write_text("<html><body>only the sitemap names me</body></html>\n")
    (root / "index.html").write_text(
        '<html><body><img src="/logo.png" alt=logo><a href="/p00.html">start</a> '
        '<a href="/docs">docs</a> <a href="/big.html">big</a> '
        '<a href="/private/secret.html">private</a> <a href="/gone.html">gone</a></body></html>\n'
    )
    (root / "robots.txt").write_text(
        "User-agent: slowbot\nCrawl-delay: 30\nDisallow: /\n\n"
        f"User-agent: *\nDisallow: /private/\n\nSitemap: {origin}/sitemap.xml\n"
    )
    (root / "sitemap.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"<url><loc>{origin}/</loc></url>\n<url><loc>{origin}/orphan.html</loc></url>\n</urlset>\n"
    )
    # readable by the servers' workers (nobody, www-data) whatever the umask
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def site_paths() -> dict[str, int]:
    """Every path a crawl of the site must ask for, with the status the server gives."""
    paths = {f"/p{i:02d}.html": 200 for i in range(PAGES)}
    paths.update({"/robots.txt": 200, "/sitemap.xml": 200, "/": 200, "/logo.png": 200})
    paths.update({"/big.html": 200, "/orphan.html": 200, "/gone.html": 404})
    paths.update({"/docs": 301, "/docs/": 200, "/docs/guide.html": 200})
    return paths


def file_of(root: Path, path: str) -> Path:
    """The file the server sends for ``path`` (a directory's index.html)."""
    local = root / path.lstrip("/")
    return local / "index.html" if path.endswith("/") else local


# -- the servers -------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def served_root() -> Iterator[Path]:
    """A directory for the site that the servers' unprivileged workers can read: run as
    root, nginx and Apache serve as nobody / www-data, who cannot enter pytest's
    temporary root (mode 0700), so the site goes in a world-readable directory of /tmp,
    removed at the end."""
    top = Path(tempfile.mkdtemp(prefix="ck-site-", dir="/tmp" if os.geteuid() == 0 else None))
    try:
        top.chmod(0o755)
        yield top / "www"
    finally:
        shutil.rmtree(top, ignore_errors=True)


@dataclass
class Server:
    """A running nginx or Apache: its port, directory (configuration and logs) and
    process."""

    kind: str
    port: int
    dir: Path
    proc: subprocess.Popen[bytes]

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def hits(self) -> list[Hit]:
        """The access log as it is (each server writes a line as a request ends)."""
        path = self.dir / "access.log"
        text = path.read_text() if path.exists() else ""
        return [_parse(self.kind, line) for line in text.splitlines() if line.strip()]

    def error_log(self) -> str:
        path = self.dir / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""


def _parse(kind: str, line: str) -> Hit:
    # FIELDS "REQUEST LINE" "IF-NONE-MATCH" "IF-MODIFIED-SINCE"
    parts = line.split('"')
    fields, request, inm, ims = parts[0].split(), parts[1], parts[3], parts[5]
    target = request.split(" ")[1] if " " in request else request
    if kind == "nginx":  # $msec $request_time $connection $connection_requests $status
        end, took, conn, nth, status = fields[:5]
        return Hit(
            float(end) - float(took), float(end), conn, int(nth), int(status), target, inm, ims
        )
    # %{begin:msec}t %{end:msec}t %{remote}p %k %>s: %k counts the requests before
    begin, end, conn, before, status = fields[:5]
    return Hit(
        int(begin) / 1000, int(end) / 1000, conn, int(before) + 1, int(status), target, inm, ims
    )


_NGINX_CONF = """\
worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log info;
events {{ worker_connections 64; }}
http {{
    types {{ text/html html; image/png png; text/plain txt; application/xml xml; }}
    default_type application/octet-stream;
    log_format ck '$msec $request_time $connection $connection_requests $status '
                  '"$request" "$http_if_none_match" "$http_if_modified_since"';
    access_log {dir}/access.log ck;
    client_body_temp_path {dir}/tmp; proxy_temp_path {dir}/tmp; fastcgi_temp_path {dir}/tmp;
    uwsgi_temp_path {dir}/tmp; scgi_temp_path {dir}/tmp;
    gzip on;
    gzip_types text/plain application/xml;
    gzip_min_length 20;
    {settings}
    server {{
        listen 127.0.0.1:{port};
        root {root};
    }}
}}
"""

# begin and end in ms, the client's port (one a connection), the requests before on it
_APACHE_LOG = (
    '%{begin:msec}t %{end:msec}t %{remote}p %k %>s \\"%r\\" '
    '\\"%{If-None-Match}i\\" \\"%{If-Modified-Since}i\\"'
)
_APACHE_CONF = """\
ServerName 127.0.0.1
Listen 127.0.0.1:{port}
PidFile {dir}/apache.pid
ErrorLog {dir}/error.log
DefaultRuntimeDir {dir}
Mutex file:{dir} default
{user}
LoadModule mpm_event_module {mods}/mod_mpm_event.so
LoadModule authz_core_module {mods}/mod_authz_core.so
LoadModule dir_module {mods}/mod_dir.so
LoadModule mime_module {mods}/mod_mime.so
LoadModule filter_module {mods}/mod_filter.so
LoadModule deflate_module {mods}/mod_deflate.so
TypesConfig /dev/null
AddType text/html .html
AddType image/png .png
AddType text/plain .txt
AddType application/xml .xml
DocumentRoot {root}
<Directory {root}>
    Require all granted
    Options None
    AllowOverride None
</Directory>
DirectoryIndex index.html
AddOutputFilterByType DEFLATE text/html text/plain application/xml
LogFormat "{log_format}" ck
CustomLog {dir}/access.log ck
{settings}
"""


@contextlib.contextmanager
def run_server(
    kind: str, root: Path, port: int, directory: Path, settings: str
) -> Iterator[Server]:
    """``kind`` ("nginx" or "apache") serving ``root`` on 127.0.0.1:``port`` with the
    extra configuration lines ``settings``, its files in ``directory``, until the block
    ends (then stopped, and waited for)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tmp").mkdir(exist_ok=True)
    conf = directory / "server.conf"
    fill = {"dir": directory, "port": port, "root": root, "settings": settings}
    if kind == "nginx":
        assert NGINX
        conf.write_text(_NGINX_CONF.format(**fill))
        argv = [NGINX, "-c", str(conf), "-p", str(directory), "-e", str(directory / "error.log")]
    else:
        assert APACHE
        # as root, Apache's children serve as www-data (it refuses to serve as root)
        user = "User www-data\nGroup www-data" if os.geteuid() == 0 else ""
        conf.write_text(
            _APACHE_CONF.format(**fill, user=user, mods=APACHE_MODULES, log_format=_APACHE_LOG)
        )
        argv = [APACHE, "-f", str(conf), "-DFOREGROUND"]
    out = open(directory / "stderr.txt", "wb")  # noqa: SIM115
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        poll_until(lambda: _listens(proc.pid, port), proc, f"{kind} listened on {port}", timeout=20)
        yield Server(kind, port, directory, proc)
    finally:
        # nginx: SIGQUIT is its graceful stop; Apache: SIGTERM
        proc.send_signal(signal.SIGQUIT if kind == "nginx" else signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        out.close()


@contextlib.contextmanager
def serve_site(kind: str, root: Path, directory: Path, settings: str) -> Iterator[Server]:
    """The site written for a free port and ``kind`` serving it there (run_server).

    A free port is free only until another process binds it: a server that could not
    bind its port (another test's server took it meanwhile) is started again on
    another, at most three times, so a collision is no failure of the test."""
    for attempt in range(3):
        port = free_port()
        write_site(root, f"http://127.0.0.1:{port}")
        tried = directory / f"try{attempt}"
        stack = contextlib.ExitStack()
        try:
            server = stack.enter_context(run_server(kind, root, port, tried, settings))
        except AssertionError:
            log = tried / "stderr.txt"
            said = log.read_text(errors="replace") if log.exists() else ""
            if attempt == 2 or "in use" not in said:
                raise
            continue
        with stack:
            yield server
        return


def _listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds a socket listening on 127.0.0.1:``port`` (Linux's
    /proc). That the port accepts a connection is not enough: when another process
    had taken it, the server failed to bind and the port still accepted, the other's."""
    listening = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, state, inode = fields[1], fields[3], fields[9]
        if state == "0A" and local == f"0100007F:{port:04X}":  # LISTEN on 127.0.0.1
            listening.add(f"socket:[{inode}]")
    if not listening:
        return False
    fds = Path(f"/proc/{pid}/fd")
    try:
        return any(os.readlink(fd) in listening for fd in fds.iterdir())
    except OSError:  # the process ended meanwhile (poll_until then says so)
        return False
