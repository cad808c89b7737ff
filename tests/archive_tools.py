"""The archive tools the tests check crawlkit's output with: `wacz validate`, pywb and
cdxj-indexer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

BIN = Path(sys.executable).parent


def cdxj_indexer(*paths: Path | str, sort: bool = True, check: bool = True) -> str:
    """cdxj-indexer's index of ``paths`` (``--sort``, as ``crawlkit index`` sorts), its
    exit status checked unless ``check`` is False (a damaged file's partial index)."""
    args = [str(BIN / "cdxj-indexer"), *(["--sort"] if sort else []), *map(str, paths)]
    out = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if check:
        assert out.returncode == 0, out.stderr
    return out.stdout


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
