"""Replay URLs from a pywb collection directory, in-process, and print what pywb sends.

Run as a subprocess by the tests (pywb and gevent warn on import, which the test
suite turns into errors):

    python tests/tools/pywb_replay.py ROOT COLL TIMESTAMP URL...

ROOT holds ``collections/COLL/archive/*.warc.gz`` and ``collections/COLL/indexes/*``.
Prints one JSON line per URL: the URL, the HTTP status of pywb's ``id_`` (identity,
unrewritten) replay and the sha256 of the body it returned.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import warnings


def main(argv: list[str]) -> int:
    root, coll, timestamp, *urls = argv
    os.chdir(root)
    warnings.simplefilter("ignore")
    from pywb.apps.frontendapp import FrontEndApp
    from werkzeug.test import Client

    client = Client(FrontEndApp())
    for url in urls:
        resp = client.get(f"/{coll}/{timestamp}id_/{url}")
        body = resp.get_data()
        print(
            json.dumps(
                {"url": url, "status": resp.status_code, "sha256": hashlib.sha256(body).hexdigest()}
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
