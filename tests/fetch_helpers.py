"""What the fetch engine tests share: a fake HTTP client answering from a table, a
one-call engine run over it, and a table of answers by kind."""

from __future__ import annotations

import asyncio
import time

from crawlkit.fetch.client import FetchRequest, FetchResult
from crawlkit.fetch.engine import FetchConfig, Fetcher
from crawlkit.fetch.netpolicy import NetPolicy
from crawlkit.fetch.resolver import Resolver


class FakeClient:
    """Answers from a table; records the order of requests per host."""

    def __init__(self, table: dict[str, tuple[int, dict[str, str], bytes]]):
        self.table = table
        self.seen: list[tuple[str, str]] = []

    async def fetch(self, request: FetchRequest) -> FetchResult:
        self.seen.append((request.url, request.address))
        status, headers, body = self.table.get(request.url, (404, {}, b""))
        await asyncio.sleep(0.001)
        return FetchResult(
            status=status,
            headers=list(headers.items()),
            response_head=b"HTTP/1.1 %d X\r\n\r\n" % status,
            request_head=b"GET / HTTP/1.1\r\n\r\n",
            body=body,
            started=time.time(),
            elapsed=0.001,
            address=request.address,
        )

    async def close(self) -> None:
        pass


def run_engine(records, table, **cfg):
    client = FakeClient(table)
    redirects: list[dict] = []
    resolver = Resolver(
        hosts={"a.test": ("8.8.8.8",), "b.test": ("8.8.4.4",), "lan.test": ("10.0.0.1",)}
    )
    fetcher = Fetcher(
        FetchConfig(min_delay=0.0, **cfg),
        client=client,
        resolver=resolver,
        netpolicy=NetPolicy(),
        on_redirect=redirects.append,
    )

    async def go() -> list[dict]:
        return [r async for r in fetcher.run(records)]

    return asyncio.run(go()), client, redirects


ANSWERS = {
    "ok": (200, {"Content-Type": "text/html"}, b"<p>x</p>"),
    "moved": (301, {"Location": "/elsewhere"}, b""),
    "gone": (404, {}, b""),
    "slow-down": (429, {"Retry-After": "1"}, b""),
    "busy": (503, {}, b""),
    "same": (304, {}, b""),
}
