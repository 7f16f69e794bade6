"""Nouns in syntactic roles (mha_lib.data.roles): the role swaps and their sentences."""

from mha_lib.data import roles


def test_role_swaps_and_their_sentences():
    items = roles.role_swaps(50, seed=1)
    assert items == roles.role_swaps(50, seed=1) and len(set(items)) == 50
    for a, v, b, c in items:
        assert len({a, b, c}) == 3 and v in roles.ROLE_VERBS
    texts = roles.swap_texts([("dog", "chased", "cat", "bird")])
    assert texts == {"base": ["the dog chased the cat."], "swap": ["the cat chased the dog."],
                     "sub": ["the dog chased the bird."]}  # fmt: skip
