"""What pyproject.toml cannot express on its own: package discovery and the C extensions.

The library's packages are found automatically; the CLI lives in ``cli/`` but installs
as ``crawlkit_cli`` (a bare ``cli`` package would clash with other projects).

Three optional C extensions, each function in them the twin of Python code that stays:
``crawlkit/dedup/_simhash.c`` (the simhash, the same values as numpy's passes at about a
quarter of their CPU, and the page text's collapsed length),
``crawlkit/html/_speedups.c`` (the link resolver's core, the same URLs as ``PyCore`` in
``crawlkit/html/resolve.py``, and the test for CSS requisite markers) and
``crawlkit/warc/_gzip.c`` (a small WARC record's gzip member, made without letting go of
the interpreter lock; zlib-ng's otherwise). Without a C compiler (or zlib's header) the
install goes on, and the Python code does the work.
"""

from setuptools import Extension, find_packages, setup

setup(
    packages=[*find_packages(include=["crawlkit", "crawlkit.*"]), "crawlkit_cli"],
    ext_modules=[
        Extension(
            "crawlkit.dedup._simhash",
            sources=["crawlkit/dedup/_simhash.c"],
            optional=True,
            # (the text's length loops are written to vectorize: 6 against 49 us for
            # a testweb page's text with gcc 12, whose -O2 does not try)
            extra_compile_args=["-O2", "-ftree-vectorize"],
        ),
        Extension(
            "crawlkit.html._speedups",
            sources=["crawlkit/html/_speedups.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "crawlkit.warc._gzip",
            sources=["crawlkit/warc/_gzip.c"],
            optional=True,
            libraries=["z"],  # the system's zlib (zlib1g-dev has the header)
            extra_compile_args=["-O2"],
        ),
    ],
)
