"""Where heads park attention, and how much they move there (chapter 9).

A "sink" (Xiao et al. 2023) is a position that receives much of a head's weight whatever
the query: in BERT-family models ``[CLS]`` and ``[SEP]``. Weight alone can overstate it: a
head can put weight on a token whose transformed value is small, moving little
(Kobayashi et al. 2020). :func:`moved_norms` gives that norm, ``||W_o^h v_h(x_j)||``, per
head and key, from a `MultiHeadAttention` carrying the layer's weights; :func:`special_mass`
reads both measures for MiniLM's ``[CLS]`` and ``[SEP]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from mha_lib._checks import check_rank
from mha_lib.core.heads import split_heads
from mha_lib.core.multihead import MultiHeadAttention


def moved_norms(mha: MultiHeadAttention, x: torch.Tensor) -> torch.Tensor:
    """``(B, H, T)``: the norm of what head ``h`` moves from key ``j``, ``||W_o^h v_h(x_j)||``.

    Head ``h``'s share of the layer's output at query ``i`` is ``sum_j a_hij · W_o^h v_h(x_j)``
    (tested in ``tests/test_sinks.py``), so this is what a unit of weight on ``j`` carries.
    """
    check_rank(x, 3, "x", "(batch, time, d_model)")
    if mha.num_kv_heads != mha.num_heads:
        raise ValueError("moved_norms reads multi-head layers (num_kv_heads == num_heads)")
    v = split_heads(mha.v_proj(x), mha.num_heads)  # (B, H, T, Dh)
    w_o = mha.out_proj.weight.view(mha.d_model, mha.num_heads, mha.d_head)  # (D, H, Dh)
    moved = torch.einsum("bhtd,ohd->bhto", v, w_o)  # (B, H, T, D)
    return moved.norm(dim=-1)


def norm_weighted(weights: torch.Tensor, norms: torch.Tensor) -> torch.Tensor:
    """``a_ij · ||f(x_j)||`` with each row renormalised to sum to 1: ``(B, H, Tq, Tk)``."""
    moved = weights * norms[..., None, :]
    return moved / moved.sum(-1, keepdim=True).clamp_min(torch.finfo(moved.dtype).tiny)


@torch.no_grad()
def special_mass(
    model: torch.nn.Module, tokenizer: object, sentences: Sequence[str]
) -> dict[str, torch.Tensor]:
    """Per layer and head ``(L, H)``, averaged over sentences and queries: the weight on
    ``[CLS]`` and on ``[SEP]``, and the same after norm weighting; and the share of the
    sentence's positions the two tokens are (what a uniform head would give them)."""
    from mha_lib.bert import mha_from_layer
    from mha_lib.bert.loading import encoder_layers

    layers = encoder_layers(model)
    mhas = [mha_from_layer(model, i).eval() for i in range(len(layers))]
    sums = {k: 0.0 for k in ("cls", "sep", "cls_moved", "sep_moved")}
    uniform = 0.0
    for text in sentences:
        enc = tokenizer(text, return_tensors="pt")
        hidden = model(**enc, output_hidden_states=True).hidden_states  # L + 1 of (1, T, D)
        weights, moved = [], []
        for mha, x in zip(mhas, hidden, strict=False):
            _, w = mha(x, need_weights=True)  # (1, H, T, T)
            weights.append(w[0])
            moved.append(norm_weighted(w, moved_norms(mha, x))[0])
        w, m = torch.stack(weights), torch.stack(moved)  # (L, H, T, T)
        sums["cls"] = sums["cls"] + w[..., 0].mean(-1)
        sums["sep"] = sums["sep"] + w[..., -1].mean(-1)
        sums["cls_moved"] = sums["cls_moved"] + m[..., 0].mean(-1)
        sums["sep_moved"] = sums["sep_moved"] + m[..., -1].mean(-1)
        uniform += 1.0 / w.shape[-1]
    out = {k: v / len(sentences) for k, v in sums.items()}
    out["uniform"] = torch.tensor(uniform / len(sentences))
    return out
