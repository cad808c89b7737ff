"""testweb's ``t_end`` is a lower bound of when the client could have the response.

The audit judges politeness from the server's log: the gap from one response's
``t_end`` to the next request's ``t_start``. If ``t_end`` were stamped when the event
loop got round to noticing the send buffer had drained, a busy machine would stamp
it late and a polite crawler would show gaps short by a scheduler slice. These tests
drive the protocol with a transport that keeps bytes buffered and a clock that jumps
between the send and the drain, so a late stamp shows.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from crawlkit.testweb import http
from crawlkit.testweb.model import Request, Response


class _Log:
    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def add(self, record: dict[str, Any]) -> None:
        self.records.append(record)


class _Server:
    def __init__(self, response: Response) -> None:
        self.conns: set[Any] = set()
        self.log = _Log()
        self.response = response

    def new_conn_id(self) -> int:
        return 1

    def respond(self, req: Request) -> tuple[Response, str | None]:
        return self.response, None


class _BufferingTransport(asyncio.Transport):
    """Holds every write in its buffer until the test says the kernel took it."""

    def __init__(self, clock: list[float]) -> None:
        super().__init__()
        self.buffered = 0
        self.writes: list[float] = []
        self.clock = clock

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8080)}.get(name, default)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def write(self, data: bytes) -> None:  # type: ignore[override]
        self.writes.append(self.clock[0])
        self.buffered += len(data)

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(http.time, "time", lambda: now[0])
    return now


def test_a_response_drained_late_is_stamped_when_it_was_sent(clock: list[float]) -> None:
    server = _Server(Response(200, b"x" * 100))
    proto = http.HttpProtocol(server)  # type: ignore[arg-type]
    transport = _BufferingTransport(clock)
    proto.connection_made(transport)
    proto.data_received(b"GET /a HTTP/1.1\r\nHost: a.test\r\n\r\n")
    assert transport.writes == [1000.0] and not server.log.records  # still buffered
    clock[0] = 1000.04  # the loop notices the drain 40 ms later (a busy machine)
    transport.buffered = 0
    proto.pause_writing()
    proto.resume_writing()
    (record,) = server.log.records
    assert record["t_start"] == 1000.0
    assert record["t_end"] == 1000.0  # when the bytes went out, not when it was noticed


def test_a_slow_response_is_stamped_at_its_last_send(clock: list[float]) -> None:
    async def stream(writer: Any) -> None:
        await writer.write(b"first")
        clock[0] = 1000.5  # the last piece goes out half a second later
        await writer.write(b"last")
        clock[0] = 1001.0  # the task resumes after the send only much later

    async def run() -> list[dict[str, Any]]:
        server = _Server(Response(200, stream=stream, length=9))
        proto = http.HttpProtocol(server)  # type: ignore[arg-type]
        transport = _BufferingTransport(clock)
        proto.connection_made(transport)
        proto.data_received(b"GET /a HTTP/1.1\r\nHost: a.test\r\n\r\n")
        assert proto.task is not None
        await proto.task
        return server.log.records

    (record,) = asyncio.run(run())
    assert record["t_end"] == 1000.5 and not record.get("aborted")
