"""One head numbering and one mask convention across the library (mha_lib.core.masks).

References: masking with a zero head_mask (the definition of removing a head), explicit
softmax over the allowed keys, and torch's own SDPA.
"""

import pytest
import torch

from mha_lib import MultiHeadAttention, pruning, scaled_dot_product_attention
from mha_lib.experiments.tasks import associative_recall
from mha_lib.experiments.toy_transformer import ToyTransformer
from mha_lib.experiments.training import toy_accuracy, toy_loss


def layer(heads=4, d_model=16):
    return MultiHeadAttention(d_model, heads, dtype=torch.float64).eval()


def test_prune_heads_takes_original_indices_in_every_round():
    mha = layer()
    mha.prune_heads([0])
    assert mha.kept_heads == [1, 2, 3] and mha.num_heads == 3 and mha.original_num_heads == 4
    mha.prune_heads([2])
    assert mha.kept_heads == [1, 3]
    assert "kept=[1, 3]" in repr(mha)
    # What is refused (a head already gone, the last head, ...): tests/unit/test_head_removal.py


def test_pruning_in_rounds_equals_masking_by_original_index():
    import copy

    x = torch.randn(2, 5, 16, dtype=torch.float64)
    mha = layer()
    unpruned = copy.deepcopy(mha)
    mask = torch.tensor([1.0, 0.0, 1.0, 0.0], dtype=torch.float64)  # silence originals 1, 3
    masked, weights = mha(x, head_mask=mask, need_weights=True)
    mha.prune_heads([3])
    mha.prune_heads([1])
    pruned, pruned_weights = mha(x, need_weights=True)
    torch.testing.assert_close(pruned, masked, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(pruned_weights, weights[:, [0, 2]], rtol=1e-12, atol=1e-12)
    # After pruning, a head mask still has one entry per original head; removed ones are ignored.
    again, _ = mha(x, head_mask=torch.tensor([1.0, 7.0, 1.0, 7.0], dtype=torch.float64))
    torch.testing.assert_close(again, pruned, rtol=1e-12, atol=1e-12)
    half, _ = mha(x, head_mask=torch.tensor([0.5, 1.0, 1.0, 1.0], dtype=torch.float64))
    ref, _ = unpruned(x, head_mask=torch.tensor([0.5, 0.0, 1.0, 0.0], dtype=torch.float64))
    torch.testing.assert_close(half, ref, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match=r"one entry per original head"):
        mha(x, head_mask=torch.ones(2, dtype=torch.float64))


def test_head_mask_does_not_scale_the_returned_weights():
    x = torch.randn(1, 4, 16, dtype=torch.float64)
    mha = layer()
    _, plain = mha(x, need_weights=True)
    _, masked = mha(x, head_mask=torch.zeros(4, dtype=torch.float64), need_weights=True)
    torch.testing.assert_close(masked, plain)


def test_adapter_masks_are_batch_first_and_prune_by_original_index():
    torch.manual_seed(0)
    task = associative_recall(num_keys=4, num_values=4, num_pairs=4, num_queries=2)
    model = ToyTransformer(task.vocab_size, task.num_classes, task.seq_len, d_model=16,
                           num_heads=4, num_layers=2).double().eval()  # fmt: skip
    heads = pruning.MHAHeads(model, toy_loss, toy_accuracy)
    batch = task.sample(3, torch.Generator().manual_seed(1))
    mask = torch.rand(2, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    with heads.masked(mask), torch.no_grad():
        whole = toy_loss(model, batch)
    with heads.masked(mask[None].expand(3, 2, 4)), torch.no_grad():  # (B, L, H)
        per_row = toy_loss(model, batch)
    torch.testing.assert_close(per_row, whole)
    with pytest.raises(ValueError, match=r"\(batch, layers, heads\)"):
        heads.masked(torch.ones(2, 3, 4, dtype=torch.float64))  # (L, B, H): the old layout
    heads.prune({0: [2]})
    assert heads.kept_heads()[0] == [0, 1, 3] == model.blocks[0].attn.kept_heads


@pytest.mark.parametrize("fused", [True, False])
def test_finfo_min_masks_block_like_minus_infinity(fused):
    """transformers fills masks with finfo.min; a fully masked row must give zeros, not
    uniform weights, and a partly masked row the same as -inf."""
    x = torch.randn(2, 3, 16, dtype=torch.float64)
    mha = layer()
    low = torch.finfo(torch.float64).min
    finfo_mask = torch.zeros(2, 1, 3, 3, dtype=torch.float64)
    finfo_mask[0, :, 1, :] = low  # a row of sequence 0 sees nothing
    finfo_mask[1, :, :, 0] = low  # sequence 1 never sees key 0
    inf_mask = finfo_mask.masked_fill(finfo_mask == low, float("-inf"))
    ours, _ = mha(x, attn_mask=finfo_mask, need_weights=not fused)
    ref, _ = mha(x, attn_mask=inf_mask, need_weights=not fused)
    torch.testing.assert_close(ours, ref)
    q = torch.randn(1, 1, 3, 4, dtype=torch.float64)
    out, weights = scaled_dot_product_attention(q, q, q, mask=finfo_mask[:1])
    assert torch.all(weights[0, 0, 1] == 0) and torch.all(out[0, 0, 1] == 0)


def test_key_padding_mask_that_pads_everything_is_refused_with_its_polarity():
    x = torch.randn(2, 3, 16)
    mha = MultiHeadAttention(16, 4)
    keep = torch.tensor([[True, True, True], [True, True, False]])  # "True = keep": inverted
    with pytest.raises(ValueError, match="True .* means padding.*inverted"):
        mha(x, key_padding_mask=keep)
    mha(x, key_padding_mask=~keep)  # the right polarity works


def test_transformers_of_another_major_version_is_refused(monkeypatch):
    import importlib.metadata

    from mha_lib.bert import check_transformers

    monkeypatch.setattr(importlib.metadata, "version", lambda name: "4.46.3")
    with pytest.raises(ImportError, match="transformers 5.x.*4.46.3 is installed"):
        check_transformers()
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "5.24.0")
    check_transformers()


def test_head_mask_refuses_an_attention_output_it_does_not_know(tiny_bert):
    from mha_lib import bert

    model = tiny_bert(hidden_size=8, num_hidden_layers=1, intermediate_size=8,
                      max_position_embeddings=512)  # fmt: skip
    sa = model.encoder.layer[0].attention.self
    handle = sa.register_forward_hook(lambda m, a, out: out[0][..., :4])  # another layout
    ids = torch.tensor([[1, 2, 3]])
    try:
        with pytest.raises(TypeError, match="transformers 5 only"), bert.head_mask(
            model, torch.ones(1, 2)
        ):
            model(input_ids=ids)
    finally:
        handle.remove()


def test_the_public_masks_become_one_allowed_mask_by_hand():
    """attn_mask (True = may attend) and key_padding_mask (True = padding) combine into one
    mask that says True = may attend; written out by hand for two sequences of three keys."""
    from mha_lib.core.masks import allowed_keys, attends_nowhere, only_causal

    like = torch.zeros(2, 3, 4)
    attn = torch.tensor([[True, True, False], [True, True, True], [False, False, True]])
    padding = torch.tensor([[False, False, True], [False, False, False]])  # key 2 of seq 0
    allowed = allowed_keys(attn, padding, (2, 4, 3, 3), like)
    expected = torch.tensor([
        [[True, True, False], [True, True, False], [False, False, False]],  # seq 0
        [[True, True, False], [True, True, True], [False, False, True]],  # seq 1
    ])  # fmt: skip
    assert allowed.dtype == torch.bool and torch.equal(allowed.expand(2, 4, 3, 3)[:, 0], expected)
    assert attends_nowhere(allowed).expand(2, 4, 3, 1)[:, 0, :, 0].tolist() == [
        [False, False, True], [False, False, False]
    ]  # fmt: skip
    # A float mask in the mix gives the additive form of the same thing: 0 or -inf.
    additive = allowed_keys(attn.float().log(), padding, (2, 4, 3, 3), like)
    assert torch.equal(additive.expand(2, 4, 3, 3)[:, 0] == 0, expected)
    assert torch.isneginf(additive.expand(2, 4, 3, 3)[:, 0][~expected]).all()
    causal = only_causal(None, 2, 3, like.device)
    assert causal.tolist() == [[True, False, False], [True, True, False]]
    lower = torch.ones(3, 3, dtype=torch.bool).tril()
    assert torch.equal(only_causal(additive, 3, 3, like.device)[:, 0] == 0, expected & lower)
    assert allowed_keys(None, None, (2, 4, 3, 3), like) is None
