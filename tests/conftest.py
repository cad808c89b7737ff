"""Shared test helpers: run the real ``crawlkit`` command as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Result:
    code: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8")

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()


def crawlkit(*args: str, input: bytes | None = None, cwd: Path | None = None,
             timeout: float = 120) -> Result:  # fmt: skip
    """Run ``python -m crawlkit ARGS`` and capture everything."""
    proc = subprocess.run(
        [sys.executable, "-m", "crawlkit", *args],
        input=input,
        capture_output=True,
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    return Result(proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace"))


@pytest.fixture
def cli():
    return crawlkit
