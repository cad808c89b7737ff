"""The installed package carries the man pages (issue 15 item 15)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT


@pytest.mark.slow
def test_the_wheel_installs_the_man_pages_in_share_man_man1(tmp_path: Path) -> None:
    # Built from a copy, so the build leaves no build/ directory in the checkout.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("crawlkit", "cli", "man"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path / "wheels"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    (wheel,) = wheels.glob("crawlkit-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    pages = sorted(p.name for p in (ROOT / "man").glob("*.1"))
    data = sorted(n.rsplit("/", 1)[1] for n in names if "/data/share/man/man1/" in n)
    assert data == pages and "crawlkit.1" in data
    # Installed into a prefix, the pages land where man(1) looks beside bin/.
    # --ignore-installed: without it pip first uninstalls the crawlkit of the
    # environment running this test (its editable install), breaking it.
    prefix = tmp_path / "prefix"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "-q",
            "--ignore-installed",
            "--prefix",
            str(prefix),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    page = prefix / "share" / "man" / "man1" / "crawlkit.1"
    assert page.read_bytes() == (ROOT / "man" / "crawlkit.1").read_bytes()
    assert (prefix / "bin" / "crawlkit").exists()
    # the environment running this test still has its own crawlkit
    check = subprocess.run([sys.executable, "-c", "import crawlkit_cli.main"], check=False)
    assert check.returncode == 0
