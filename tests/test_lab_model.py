"""mha_lib.bert.lab, the model the live lab exports: pooling, maps and the head-mask convention.

References: a hand-computed mean, sentence-transformers' own encoder of the same package
(its Pooling and Normalize modules), ``attention_maps`` and ``head_mask`` of mha_lib.bert.
"""

from __future__ import annotations

import pytest
import torch

from mha_lib import bert


@pytest.fixture(scope="module")
def loaded():
    return bert.load()


def test_mean_pool_ignores_padding_by_hand() -> None:
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, -100.0]]])
    mask = torch.tensor([[1, 1, 0]])
    torch.testing.assert_close(bert.mean_pool(hidden, mask), torch.tensor([[2.0, 3.0]]))
    with pytest.raises(ValueError, match="attention_mask"):
        bert.mean_pool(hidden, torch.ones(1, 2))


def test_embedding_is_the_packages_own_pooling(loaded) -> None:
    """The package's 1_Pooling config says mean pooling; the lab's embedding is that mean."""
    import json

    model, tokenizer = loaded
    config = json.loads((bert.default_model_path() / "1_Pooling" / "config.json").read_text())
    assert config["pooling_mode_mean_tokens"] and not config["pooling_mode_cls_token"]
    text = "The cat sat on the mat because it was tired."
    _, _, emb = bert.lab_outputs(model, tokenizer, text)
    with torch.no_grad():
        hidden = model(**tokenizer(text, return_tensors="pt")).last_hidden_state[0]
    by_hand = sum(hidden[t] for t in range(hidden.shape[0])) / hidden.shape[0]
    torch.testing.assert_close(emb, by_hand, atol=1e-5, rtol=1e-5)
    st = pytest.importorskip("sentence_transformers")  # not pinned: checked where installed
    SentenceTransformer = st.SentenceTransformer
    st = SentenceTransformer(str(bert.default_model_path()), device="cpu")
    ref = torch.as_tensor(st.encode([text], convert_to_numpy=True))[0]  # normalised
    torch.testing.assert_close(emb / emb.norm(), ref, atol=1e-5, rtol=1e-4)


def test_maps_equal_attention_maps_and_a_masked_head_keeps_its_softmax(loaded) -> None:
    model, tokenizer = loaded
    text = "Most of the students had already left when the lecture ended."
    tokens, maps = bert.attention_maps(model, tokenizer, text)
    got_tokens, got, _ = bert.lab_outputs(model, tokenizer, text)
    assert got_tokens == tokens
    torch.testing.assert_close(got, maps, atol=1e-6, rtol=1e-5)

    mask = torch.ones(6, 12)
    mask[2, 4] = 0.0
    with torch.no_grad(), bert.head_mask(model, mask):
        _, masked_ref = bert.attention_maps(model, tokenizer, text)
    _, masked, _ = bert.lab_outputs(model, tokenizer, text, mask)
    torch.testing.assert_close(masked, masked_ref, atol=1e-6, rtol=1e-5)
    # The convention: layers up to the masked one are untouched, the masked head's own map
    # is its softmax (not zeros), and every later layer moves.
    torch.testing.assert_close(masked[:3], maps[:3], atol=1e-6, rtol=1e-5)
    assert float(masked[2, 4].sum(-1).min()) == pytest.approx(1.0, abs=1e-5)
    assert all(float((masked[layer] - maps[layer]).abs().max()) > 1e-4 for layer in range(3, 6))


def test_all_heads_off_makes_tokens_context_free(loaded) -> None:
    """With every head off a token's final state ignores the other tokens."""
    model, tokenizer = loaded
    lab = bert.LabModel(model)
    off = torch.zeros(6, 12)
    a = tokenizer("the cat sat", return_tensors="pt")
    b = tokenizer("the dog sat", return_tensors="pt")
    with torch.no_grad(), bert.head_mask(model, off):
        ha = model(**a).last_hidden_state[0]
        hb = model(**b).last_hidden_state[0]
    torch.testing.assert_close(ha[[0, 1, 3, 4]], hb[[0, 1, 3, 4]], atol=1e-5, rtol=1e-5)
    with torch.no_grad():
        maps, emb = lab(a["input_ids"], a["attention_mask"], off)
    assert maps.shape == (6, 12, 5, 5) and emb.shape == (1, model.config.hidden_size)
