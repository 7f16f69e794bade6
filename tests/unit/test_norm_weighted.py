"""mha_lib.bert.norms: weight × norm of what a key moves (Kobayashi et al. 2020).

References: a hand-computed two-token case, a loop over heads written out here
(value slice, then that head's columns of W_o), and the model's own attention
output, which must equal the sum over heads and keys of alpha_ij f(x_j) plus b_o.
"""

import pytest
import torch

from mha_lib import bert


def test_norm_weighted_by_hand():
    maps = torch.tensor([[0.5, 0.5], [1.0, 0.0]])
    norms = torch.tensor([0.1, 2.0])  # key 0 moves little, key 1 much
    raw = bert.norm_weighted(maps, norms, normalise=False)
    assert torch.allclose(raw, torch.tensor([[0.05, 1.0], [0.1, 0.0]]))
    share = bert.norm_weighted(maps, norms)
    assert torch.allclose(share, torch.tensor([[0.05 / 1.05, 1.0 / 1.05], [1.0, 0.0]]))


def test_transformed_values_by_hand(tiny_bert):
    """One head of width 2: W_v = I, b_v = (1, 0), W_o = diag(2, 0) → f(x) = (2(x0 + 1), 0)."""
    model = tiny_bert(hidden_size=2, num_attention_heads=1)
    layer = model.encoder.layer[0]
    with torch.no_grad():
        layer.attention.self.value.weight.copy_(torch.eye(2))
        layer.attention.self.value.bias.copy_(torch.tensor([1.0, 0.0]))
        layer.attention.output.dense.weight.copy_(torch.diag(torch.tensor([2.0, 0.0])))
        f = bert.transformed_values(layer, torch.tensor([[[3.0, 4.0], [0.0, 5.0]]]))
    assert torch.allclose(f, torch.tensor([[[[8.0, 0.0], [2.0, 0.0]]]]))
    assert torch.allclose(f.norm(dim=-1), torch.tensor([[[8.0, 2.0]]]))


def test_transformed_values_equal_the_explicit_per_head_product(tiny_bert):
    model = tiny_bert(hidden_size=12, num_attention_heads=3)
    layer = model.encoder.layer[1]
    x = torch.randn(2, 5, 12, generator=torch.Generator().manual_seed(1))
    sa, dense = layer.attention.self, layer.attention.output.dense
    with torch.no_grad():
        f = bert.transformed_values(layer, x)
        for h in range(3):
            cols = slice(4 * h, 4 * h + 4)
            v = x @ sa.value.weight[cols].T + sa.value.bias[cols]  # (B, T, 4)
            expected = v @ dense.weight[:, cols].T  # (B, T, D)
            assert torch.allclose(f[:, h], expected, atol=1e-6)


def test_the_pieces_add_up_to_the_layer_output(tiny_bert):
    """sum_h sum_j alpha_ij f_h(x_j) + b_o is what attention.output.dense returns."""
    model = tiny_bert(hidden_size=12, num_attention_heads=3)
    ids = torch.tensor([[2, 7, 9, 4, 3]])
    seen = {}
    for i, layer in enumerate(model.encoder.layer):
        layer.attention.output.dense.register_forward_hook(
            lambda m, a, out, i=i: seen.__setitem__(i, out.detach())
        )
    with torch.no_grad():
        out = model(input_ids=ids, output_attentions=True, output_hidden_states=True)
        for i, layer in enumerate(model.encoder.layer):
            f = bert.transformed_values(layer, out.hidden_states[i])  # (1, H, T, D)
            moved = torch.einsum("bhij,bhjd->bid", out.attentions[i], f)
            total = moved + layer.attention.output.dense.bias
            assert torch.allclose(total, seen[i], atol=1e-5)


def test_norm_weighted_maps_of_the_packaged_model():
    model, tok = bert.load()
    text = "The cat sat on the mat because it was tired."
    tokens, maps = bert.attention_maps(model, tok, text)
    _, moved = bert.attention_maps(model, tok, text, norm_weighted=True)
    enc = tok(text, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True)
    layer = 3
    norms = bert.transformed_values(model.encoder.layer[layer], out.hidden_states[layer])
    raw = maps[layer] * norms[0].norm(dim=-1)[:, None, :]  # (H, T, T)
    assert torch.allclose(moved[layer], raw / raw.sum(-1, keepdim=True), atol=1e-5)
    assert torch.allclose(moved.sum(-1), torch.ones(moved.shape[:-1]), atol=1e-5)
    # the point of the measure: [CLS] gets much less once its small values count
    assert float(moved[..., 0].mean()) < 0.5 * float(maps[..., 0].mean())


def test_norm_weighted_rejects_bad_shapes(tiny_bert):
    with pytest.raises(ValueError, match="norms"):
        bert.norm_weighted(torch.ones(2, 3, 3), torch.ones(2, 2))
    with pytest.raises(ValueError, match="non-negative"):
        bert.norm_weighted(torch.ones(3, 3), -torch.ones(3))
    with pytest.raises(ValueError, match="hidden"):
        bert.transformed_values(tiny_bert(hidden_size=8).encoder.layer[0], torch.ones(4, 8))
