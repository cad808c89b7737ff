"""textgen's table sampler draws exactly what ``random.choices`` would (pages depend on it)."""

from __future__ import annotations

import random

from crawlkit.testweb import textgen


def test_words_match_choices_and_leave_the_same_state() -> None:
    vocab, cum = textgen.vocabulary()
    for seed in range(200):
        ours, ref = random.Random(seed), random.Random(seed)
        for k in (0, 1, 3, 12, 400):
            assert textgen.words(ours, k) == ref.choices(vocab, cum_weights=cum, k=k)
            assert ours.getstate() == ref.getstate()


def test_sentence_title_paragraph_draw_like_randint_and_choice() -> None:
    vocab, cum = textgen.vocabulary()

    def ref_words(rng: random.Random, n: int) -> list[str]:
        return rng.choices(vocab, cum_weights=cum, k=n)

    def ref_sentence(rng: random.Random) -> str:
        ws = ref_words(rng, rng.randint(6, 18))
        ws[0] = ws[0].capitalize()
        return " ".join(ws) + rng.choice((".", ".", ".", "?", "!"))

    for seed in range(50):
        ours, ref = random.Random(seed), random.Random(seed)
        assert textgen.title(ours) == " ".join(
            w.capitalize() for w in ref_words(ref, ref.randint(2, 5))
        )
        assert textgen.paragraph(ours) == " ".join(
            ref_sentence(ref) for _ in range(ref.randint(3, 7))
        )
        assert ours.getstate() == ref.getstate()
