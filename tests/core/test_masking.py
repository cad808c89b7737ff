"""crawlkit.masking: secrets never shown or stored (docs/design.md invariant 9)."""

from __future__ import annotations

from crawlkit.fetch.robotsflow import robots_url
from crawlkit.masking import mask_argv, mask_header, mask_secrets, mask_url


def test_userinfo_is_masked_and_the_rest_kept() -> None:
    assert mask_url("http://user:PASS@proxy.test:3128/") == "http://***@proxy.test:3128/"
    assert mask_url("see https://tok@h.test/x and http://a.test/") == (
        "see https://***@h.test/x and http://a.test/"
    )
    assert mask_url("http://a.test/p@q") == "http://a.test/p@q"  # @ in a path: no userinfo
    assert mask_url(mask_url("http://u:p@h/")) == "http://***@h/"  # idempotent


def test_credential_headers_are_masked_whole() -> None:
    assert mask_header("Authorization: Bearer abc") == "Authorization: ***"
    assert mask_header("cookie: sid=1") == "cookie: ***"
    assert mask_header("X-Api-Key: k") == "X-Api-Key: ***"
    assert mask_header("Accept-Language: fr") == "Accept-Language: fr"


def test_data_and_command_lines() -> None:
    data = {
        "fetch": {"proxy": "http://u:SECRET@p.test:1", "agent": "bot"},
        "password": "SECRET",
        "headers": ["Authorization: Basic SECRET", "Accept: */*"],
    }
    masked = mask_secrets(data)
    assert "SECRET" not in repr(masked)
    assert masked["fetch"]["agent"] == "bot" and masked["headers"][1] == "Accept: */*"
    argv = ["crawl", "--proxy", "http://u:SECRET@p:1", "--header", "Cookie: a=SECRET"]
    argv += ["--header=Authorization: SECRET", "--min-delay", "1s"]
    out = mask_argv(argv)
    assert "SECRET" not in " ".join(out)
    assert out[-2:] == ["--min-delay", "1s"] and out[2] == "http://***@p:1"


def test_robots_txt_urls_carry_no_default_port() -> None:
    assert robots_url("http://a.test:80") == "http://a.test/robots.txt"
    assert robots_url("https://a.test:443") == "https://a.test/robots.txt"
    assert robots_url("http://a.test:8080") == "http://a.test:8080/robots.txt"
    assert robots_url("https://a.test:80") == "https://a.test:80/robots.txt"
