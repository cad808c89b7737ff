"""Rebuild the real-page folders that ``bench_extract.py --real DIR`` reads.

Run on demand (never in CI). The pages are public test data of content-extraction
projects, saved from the web (news, magazine and blog pages, 20 KB to 2 MB), brought
read-only with the ``fetch`` tool (or ``git clone --bare``):

* ``trafilatura``: markusmobius/go-trafilatura, ``test-files/comparison`` (926 pages,
  141 KB mean; the URL of most from ``scripts/comparison/data.go``);
* ``scrapinghub``: scrapinghub/article-extraction-benchmark, ``html/*.html.gz`` (181
  pages, URLs from ``ground-truth.json``) plus go-trafilatura's ``test-files/mock``
  (113 pages, URLs from ``realworld-mock_test.go`` where it names them).

Usage::

    python bench/real_corpus.py trafilatura /path/to/go-trafilatura.git OUT_DIR
    python bench/real_corpus.py scrapinghub /path/to/article-extraction-benchmark.git \\
        OUT_DIR --also /path/to/go-trafilatura.git

Each folder gets the pages as files and ``urls.tsv`` (file name, tab, page URL) for
the pages whose URL is known; ``bench_extract.py --real`` gives the others a URL made
from their ``<link rel=canonical>`` or their file name.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import re
import subprocess
import tarfile
from pathlib import Path


def _git(gitdir: str, *args: str) -> bytes:
    return subprocess.run(
        ["git", f"--git-dir={gitdir}", *args], check=True, capture_output=True
    ).stdout


def _unpack(gitdir: str, tree: str, out: Path) -> list[str]:
    """The files of ``tree`` (a folder at HEAD) written flat into ``out``; their names."""
    names = []
    with tarfile.open(fileobj=io.BytesIO(_git(gitdir, "archive", "HEAD", tree))) as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            data = tar.extractfile(member).read()  # type: ignore[union-attr]
            name = member.name.rsplit("/", 1)[-1]
            if name.endswith(".gz"):
                data, name = gzip.decompress(data), name[:-3]
            (out / name).write_bytes(data)
            names.append(name)
    return names


# "https://...": {\n\t\tFile: "name.html",   (go-trafilatura's Go test tables)
_GO_ENTRY = re.compile(r'"(https?://[^"]+)":\s*(?:\{\s*File:\s*)?"([^"]+\.html)"')


def _go_urls(gitdir: str, path: str) -> dict[str, str]:
    try:
        text = _git(gitdir, "show", f"HEAD:{path}").decode()
    except subprocess.CalledProcessError:
        return {}
    return {name: url for url, name in _GO_ENTRY.findall(text)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", choices=["trafilatura", "scrapinghub"])
    parser.add_argument("gitdir")
    parser.add_argument("out", type=Path)
    parser.add_argument("--also", help="go-trafilatura's git dir (scrapinghub: add its mock pages)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    urls: dict[str, str] = {}
    if args.corpus == "trafilatura":
        _unpack(args.gitdir, "test-files/comparison", args.out)
        urls = _go_urls(args.gitdir, "scripts/comparison/data.go")
    else:
        _unpack(args.gitdir, "html", args.out)
        truth = json.loads(_git(args.gitdir, "show", "HEAD:ground-truth.json"))
        urls = {f"{key}.html": entry["url"] for key, entry in truth.items() if entry.get("url")}
        if args.also:
            _unpack(args.also, "test-files/mock", args.out)
            urls.update(_go_urls(args.also, "realworld-mock_test.go"))
    present = {p.name for p in args.out.iterdir()}
    lines = [f"{name}\t{url}\n" for name, url in sorted(urls.items()) if name in present]
    (args.out / "urls.tsv").write_text("".join(lines))
    print(f"{len(present) - 1} files in {args.out}, {len(lines)} with a known URL")


if __name__ == "__main__":
    main()
