"""Whether this machine could have built crawlkit's optional C extensions.

setup.py builds them as optional: an install without a C compiler goes on with the
Python twins. Where a compiler and Python's headers are, a missing extension is a
broken build, not a machine without one: the tests that say so call
:func:`skip_without_c_toolchain` first."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import pytest


def skip_without_c_toolchain(fallback: str) -> None:
    """Skip the calling test where no C compiler or no ``Python.h`` is; ``fallback``
    says what does the work then (in the skip's reason)."""
    compiler = sysconfig.get_config_var("CC") or "cc"
    if shutil.which(compiler.split()[0]) is None:
        pytest.skip(f"no C compiler ({compiler}): {fallback}")
    header = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not header.exists():
        pytest.skip(f"no {header} (python3-dev): {fallback}")


def skip_without_c_header(header: str, package: str, fallback: str) -> None:
    """As :func:`skip_without_c_toolchain`, and skip where the library header
    ``header`` (from the Debian package ``package``) is in no system include directory."""
    skip_without_c_toolchain(fallback)
    places = [Path("/usr/include"), Path("/usr/local/include")]
    if not any((place / header).exists() for place in places):
        pytest.skip(f"no {header} ({package}): {fallback}")
