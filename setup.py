"""What pyproject.toml cannot express on its own: package discovery and the C extension.

The library's packages are found automatically; the CLI lives in ``cli/`` but installs
as ``crawlkit_cli`` (a bare ``cli`` package would clash with other projects).

simhash in C (``crawlkit/dedup/_simhash.c``) gives the same values as numpy's passes at
about a quarter of their CPU. It is optional: without a C compiler the install goes on,
and ``crawlkit/dedup/simhash.py`` computes every simhash with numpy.
"""

from setuptools import Extension, find_packages, setup

setup(
    packages=[*find_packages(include=["crawlkit", "crawlkit.*"]), "crawlkit_cli"],
    ext_modules=[
        Extension(
            "crawlkit.dedup._simhash",
            sources=["crawlkit/dedup/_simhash.c"],
            optional=True,
            extra_compile_args=["-O2"],
        )
    ],
)
