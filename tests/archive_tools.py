"""The archive tools the tests check crawlkit's output with: `wacz validate` and pywb."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

BIN = Path(sys.executable).parent


def wacz_validate(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "wacz"), "validate", "-f", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def pywb_replay(root: Path, coll: str, *urls: str) -> dict[str, dict]:
    """{url: {"status", "sha256"}} as pywb replays them (identity mode) from ``root``."""
    tool = ROOT / "tests" / "tools" / "pywb_replay.py"
    out = subprocess.run(
        [sys.executable, str(tool), str(root), coll, "2030", *urls],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]  # pywb chats
    return {r["url"]: r for r in map(json.loads, lines)}
