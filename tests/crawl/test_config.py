"""crawl --config FILE: TOML option values, flags win, mistakes named by file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import crawlkit, start_testweb

from crawlkit.crawl.config import OptionKind, load_config
from crawlkit.errors import UsageError

GOOD = """\
# an archivist's settings
scope = "host"
min-delay = "0.05s"
batch = 7
requisites = false
exclude = ['/obj/', '\\.swf$']

[hosts."Requisites-0.test"]
ignore-robots = true
"""


def test_config_values_apply_and_flags_win(tmp_path):
    config = tmp_path / "crawl.toml"
    config.write_text(GOOD)
    with start_testweb(tmp_path, "--hosts", "1", "--pages", "3", "--special", "requisites") as web:
        site = web.hosts_of_kind("requisites")[0]
        state = tmp_path / "state"
        res = crawlkit(
            "crawl",
            site["root"],
            "--state",
            str(state),
            "--config",
            str(config),
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            "--batch",
            "9",
            timeout=180,
        )
        assert res.code == 0, res.stderr
        paths = {q["path"] for q in web.requests()}
    settings = json.loads((state / "crawl" / "settings.json").read_text())["settings"]
    assert settings["scope"] == "host"
    assert settings["batch_size"] == 9  # the flag, not the file's 7
    assert settings["fetch"]["min_delay"] == 0.05
    assert settings["archive"]["requisites"] is False
    assert settings["archive"]["excludes"] == ["/obj/", r"\.swf$"]
    assert settings["fetch"]["ignore_robots_for"] == ["requisites-0.test"]
    assert paths == {"/robots.txt", "/", "/p2.html"}  # requisites = false


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ('scope = "site"\nmin-delay = 2\n', 2, "min-delay must be a string, not the number 2"),
        ('\n\nscoop = "site"\n', 3, "unknown option 'scoop'"),
        ("exclude = '/a/'\n", 1, "exclude must be a list of strings"),
        ("requisites = 'no'\n", 1, "requisites must be true or false"),
        ("batch = 1.5\n", 1, "batch must be an integer"),
        (
            '[hosts."a.org"]\nignore-robots = true\ntimeout = "1s"\n',
            3,
            "unknown host setting 'timeout'",
        ),
        ('[hosts."a.org"]\nignore-robots = "yes"\n', 2, "ignore-robots must be true or false"),
        ('[hosts."a.org:8080"]\nmin-delay = "1s"\n', 1, '[hosts."a.org:8080"] is not a host'),
        ('\n[hosts."http://a.org/"]\nheaders = {}\n', 2, '[hosts."http://a.org/"] is not a'),
        ('[hosts."*.a.org"]\nignore-robots = true\n', 1, '[hosts."*.a.org"] is not a host'),
        ('[hosts."a b"]\n', 1, '[hosts."a b"] is not a host'),
        ('scope = "site\n', 1, "not valid TOML"),
        # values the option itself refuses
        ("per-ip = 0\n", 1, "Invalid value for '--per-ip': 0 is not in the range x>=1."),
        ('# a comment\nmin-delay = "fast"\n', 2, "min-delay: not a duration: 'fast'"),
        ('max-body = "huge"\n', 1, "max-body: not a size: 'huge'"),
        ('for = "soon"\n', 1, "for: not a duration: 'soon'"),
    ],
)
def test_config_mistakes_name_file_and_line(tmp_path, text, where, message):
    config = tmp_path / "crawl.toml"
    config.write_text(text)
    res = crawlkit(
        "crawl", "http://x.test/", "--state", str(tmp_path / "s"), "--config", str(config)
    )
    assert res.code == 2
    assert res.stderr.startswith(f"crawlkit crawl: {config}:{where}: {message}"), res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s").exists()


def test_load_config_library():
    kinds = {"scope": OptionKind.STRING, "jobs": OptionKind.INT}
    path = Path(__file__).parent / "nonexistent.toml"
    with pytest.raises(UsageError, match="cannot read it"):
        load_config(path, kinds)


def test_a_host_min_delay_from_the_config_file(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('min-delay = "0.05s"\n\n[hosts."h0.test"]\nmin-delay = "0.3s"\n')
    with start_testweb(tmp_path, "--hosts", "2", "--pages", "6", "--special", "none") as web:
        state = tmp_path / "state"
        res = crawlkit(
            "crawl",
            web.url("h0.test"),
            web.url("h1.test"),
            "--state",
            str(state),
            "--scope",
            "host",
            "--config",
            str(config),
            "--max-pages",
            "12",
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            timeout=180,
        )
        assert res.code == 0, res.stderr
        log = web.requests()
    gaps: dict[str, list[float]] = {}
    last: dict[str, float] = {}
    for q in sorted(log, key=lambda q: q["t_start"]):
        if q["host"] in last:
            gaps.setdefault(q["host"], []).append(q["t_start"] - last[q["host"]])
        last[q["host"]] = q["t_end"]
    assert len(gaps["h0.test"]) >= 3 and len(gaps["h1.test"]) >= 3
    assert min(gaps["h0.test"]) >= 0.3 - 0.025  # (the web's end stamp may lag a little)
    assert min(gaps["h1.test"]) < 0.3  # the other host keeps the global gap
    audit = crawlkit("audit", "--server-log", str(web.log_path), "--min-gap", "0.05s", "--json")
    assert json.loads(audit.stdout)["ok"]


def test_a_min_delay_raised_between_runs_holds_from_the_first_request(tmp_path):
    """The host clock a run saves was made with its gap: run 2, given a longer
    --min-delay after a complaint, asked each host again ~1 s after run 1 had (a
    helper's server log); it keeps its own gap from run 1's last request now."""
    with start_testweb(tmp_path, "--hosts", "1", "--pages", "6", "--special", "none") as web:
        args = ("crawl", web.url("h0.test"), "--state", str(tmp_path / "state"))
        args += ("--allow-net", web.info["allow_net"], "--hosts-file", str(web.hosts_file))
        first = crawlkit(*args, "--min-delay", "0.05s", "--max-pages", "2", timeout=120)
        assert first.code == 0, first.stderr
        ended = max(q["t_end"] for q in web.requests() if q["path"] != "/robots.txt")
        second = crawlkit(*args, "--min-delay", "4s", "--max-pages", "3", timeout=120)
        assert second.code == 0, second.stderr
        later = [q for q in web.requests() if q["t_start"] > ended and q["path"] != "/robots.txt"]
    assert later, "run 2 asked nothing"
    assert later[0]["t_start"] - ended >= 4 - 0.025  # (the web's end stamp may lag a little)
