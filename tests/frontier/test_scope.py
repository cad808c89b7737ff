"""`--scope host|site`: what a seed and a seed's redirect target widen it by."""

from __future__ import annotations

from crawlkit.fetch.outcome import redirect_target
from crawlkit.frontier.scope import Scope
from crawlkit.url import Canonicalizer

CANON = Canonicalizer()


def _target(rec: dict, location: str) -> dict:
    out = redirect_target(rec, rec["url"], location, {}, max_hops=5, canon=CANON)
    assert out is not None
    return out


def test_a_seeds_redirect_chain_is_marked_and_a_links_is_not() -> None:
    seed = {"url": "http://old.test/", "reason": "seed", "depth": 0}
    first = _target(seed, "https://old.test/")
    second = _target(first, "https://www.new.test/home")
    assert first["seed_redirect"] is True and second["seed_redirect"] is True
    assert second["hops"] == 2 and second["reason"] == "redirect"
    link = {"url": "http://old.test/a", "reason": "link", "depth": 1}
    assert "seed_redirect" not in _target(link, "https://else.test/")


def test_a_seed_redirect_widens_host_and_site_scopes_but_not_a_regex() -> None:
    target = _target({"url": "http://old.test/", "reason": "seed"}, "https://www.new.test/home")
    page = {"url": "https://www.new.test/a", "reason": "link"}
    for spec in ("host", "site"):
        scope = Scope(spec)
        assert scope.refusal(page, CANON) is not None  # before the redirect: out of scope
        assert scope.refusal(target, CANON) is None
        assert scope.refusal(page, CANON) is None
        assert scope.refusal({"url": "https://other.test/", "reason": "link"}, CANON)
    regex = Scope(r"^https?://old\.test/")
    refused = regex.refusal(target, CANON)
    assert refused is not None and refused["refused"] == "out-of-scope"
