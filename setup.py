"""Package discovery that pyproject.toml cannot express on its own.

The library's packages are found automatically; the CLI lives in ``cli/`` but installs
as ``crawlkit_cli`` (a bare ``cli`` package would clash with other projects).
"""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["crawlkit", "crawlkit.*"]), "crawlkit_cli"])
