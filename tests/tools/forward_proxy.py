"""A minimal HTTP forward proxy for tests: absolute-form GETs only, one request per
connection, upstream addresses from a hosts file (so it never uses DNS) unless the
request-target holds an address.

    python tests/tools/forward_proxy.py HOSTS_FILE LOG_FILE

Prints its port on the first line of stdout; appends each requested URL to LOG_FILE,
with the Host header's name (the URL as the site sees it).
"""

from __future__ import annotations

import asyncio
import ipaddress
import sys
from urllib.parse import urlsplit


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def read_hosts(path: str) -> dict[str, str]:
    table: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for line in lines:
        parts = line.split("#", 1)[0].split()
        for name in parts[1:]:
            table.setdefault(name.lower(), parts[0])
    return table


async def main(hosts_path: str, log_path: str) -> None:
    hosts = read_hosts(hosts_path)
    log = open(log_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            line, _, rest = head.partition(b"\r\n")
            method, target, version = line.decode("latin-1").split(" ", 2)
            url = urlsplit(target)
            host = next(
                (
                    f.split(b":", 1)[1].strip().decode("latin-1")
                    for f in rest.split(b"\r\n")
                    if f.lower().startswith(b"host:")
                ),
                url.netloc,
            )
            # crawlkit sends the address it checked, the name in Host: log the URL as
            # the site sees it
            log.write(
                f"{url.scheme}://{host}{url.path or '/'}{'?' + url.query if url.query else ''}\n"
            )
            name = (url.hostname or "").lower()
            address = name if _is_address(name) else hosts.get(name)
            if method != "GET" or address is None:
                writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                return
            fields = [
                f
                for f in rest.split(b"\r\n")
                if f
                and not f.lower().startswith((b"connection:", b"proxy-connection:", b"keep-alive:"))
            ]
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            upstream_r, upstream_w = await asyncio.open_connection(address, url.port or 80)
            request_line = f"GET {path} {version}\r\n".encode("latin-1")
            fields.append(b"Connection: close")
            upstream_w.write(request_line + b"\r\n".join(fields) + b"\r\n\r\n")
            await upstream_w.drain()
            while chunk := await upstream_r.read(65536):
                writer.write(chunk)
                await writer.drain()
            upstream_w.close()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
