"""Post-norm blocks equal PyTorch's post-norm encoder layer on the same weights."""

import pytest
import torch
from torch import nn

from mha_lib.experiments.post_norm import PostNormBlock, post_norm_
from mha_lib.experiments.toy_transformer import ToyTransformer


def _torch_layer(block: PostNormBlock) -> nn.TransformerEncoderLayer:
    """PyTorch's post-norm encoder layer (norm_first=False) carrying `block`'s weights."""
    attn = block.attn
    d = attn.q_proj.weight.shape[1]
    layer = nn.TransformerEncoderLayer(
        d, attn.num_heads, dim_feedforward=block.mlp[0].out_features, dropout=0.0,
        activation="gelu", batch_first=True, norm_first=False,
    )  # fmt: skip
    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(
            torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight])
        )
        layer.self_attn.in_proj_bias.copy_(
            torch.cat([attn.q_proj.bias, attn.k_proj.bias, attn.v_proj.bias])
        )
        layer.self_attn.out_proj.weight.copy_(attn.out_proj.weight)
        layer.self_attn.out_proj.bias.copy_(attn.out_proj.bias)
        for mine, theirs in ((block.mlp[0], layer.linear1), (block.mlp[2], layer.linear2)):
            theirs.weight.copy_(mine.weight)
            theirs.bias.copy_(mine.bias)
        for mine, theirs in ((block.ln_attn, layer.norm1), (block.ln_mlp, layer.norm2)):
            theirs.weight.copy_(mine.weight)
            theirs.bias.copy_(mine.bias)
    return layer.eval()


def test_post_norm_block_equals_torch_encoder_layer():
    torch.manual_seed(0)
    model = post_norm_(ToyTransformer(20, 5, 9, d_model=16, num_heads=4, num_layers=2))
    with torch.no_grad():  # LayerNorms away from their initial identity
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    x = torch.randn(3, 9, 16, dtype=torch.float64)
    model.double()
    for block in model.blocks:
        ours, _ = block(x)
        theirs = _torch_layer(block).double()(x)
        torch.testing.assert_close(ours, theirs, rtol=1e-10, atol=1e-10)
        x = ours


def test_post_norm_keeps_the_weights_and_changes_the_function():
    torch.manual_seed(1)
    pre = ToyTransformer(20, 5, 9, d_model=16, num_heads=2, num_layers=3)
    torch.manual_seed(1)
    post = post_norm_(ToyTransformer(20, 5, 9, d_model=16, num_heads=2, num_layers=3))
    for a, b in zip(pre.parameters(), post.parameters(), strict=True):
        assert torch.equal(a, b)
    tokens = torch.randint(0, 20, (2, 9))
    assert not torch.allclose(pre(tokens)[0], post(tokens)[0])
    assert all(isinstance(b, PostNormBlock) for b in post.blocks)
    assert post_norm_(post) is post  # a second call changes nothing


def test_post_norm_refuses_what_it_cannot_convert():
    with pytest.raises(TypeError, match="ToyTransformer"):
        post_norm_(nn.Linear(2, 2))
