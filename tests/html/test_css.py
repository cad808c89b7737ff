"""crawlkit.html.css: css_refs reads the references in one pass of one pattern; it
agrees with the token-by-token scanner it replaced on any text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit.html.css import _css_refs_stepwise, css_refs

_PIECES = st.sampled_from(
    [
        "url(",
        "URL(",
        "uRl( ",
        "x-url(",
        "aurl(",
        ")",
        "@import",
        "@IMPORT ",
        '"',
        "'",
        "\\",
        "\\29 ",
        "\n",
        " ",
        "/*",
        "*/",
        "a.png",
        "#f",
        "(",
        ";",
        "{",
        "}",
        "é",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=40))
def test_one_pass_agrees_with_the_token_scanner(pieces):
    text = "".join(pieces)
    assert css_refs(text) == _css_refs_stepwise(text)


def test_one_pass_is_linear_on_unclosed_comments_and_strings():
    """Every branch of the pattern consumes or fails at once (no backtracking)."""
    for text in ("/*" * 50_000, '"' * 100_000, "url(" * 50_000, "@import url(" * 20_000):
        assert css_refs(text) == _css_refs_stepwise(text)
