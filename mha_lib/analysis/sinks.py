"""Where heads park attention, and how much they move there (chapter 9).

A "sink" (Xiao et al. 2023) is a position that receives much of a head's weight whatever
the query: in BERT-family models ``[CLS]`` and ``[SEP]``. Weight alone can overstate it: a
head can put weight on a token whose transformed value is small, moving little
(Kobayashi et al. 2020). :func:`special_mass` reads both measures for ``[CLS]`` and
``[SEP]``, the norm-weighted one from :mod:`mha_lib.bert.norms` (the same maps chapter 5 reads).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


@torch.no_grad()
def special_mass(
    model: torch.nn.Module, tokenizer: object, sentences: Sequence[str]
) -> dict[str, torch.Tensor]:
    """Per layer and head ``(L, H)``, averaged over sentences and queries: the weight on
    ``[CLS]`` and on ``[SEP]``, and the same after norm weighting; and the share of the
    sentence's positions the two tokens are (what a uniform head would give them)."""
    from mha_lib.bert import batch_attention_maps

    if not sentences:
        raise ValueError("special_mass needs at least one sentence")
    weights = batch_attention_maps(model, tokenizer, list(sentences))
    moved = batch_attention_maps(model, tokenizer, list(sentences), norm_weighted=True)
    sums = {k: 0.0 for k in ("cls", "sep", "cls_moved", "sep_moved")}
    uniform = 0.0
    for (_, w), (_, m) in zip(weights, moved, strict=True):  # (L, H, T, T) each
        sums["cls"] = sums["cls"] + w[..., 0].mean(-1)
        sums["sep"] = sums["sep"] + w[..., -1].mean(-1)
        sums["cls_moved"] = sums["cls_moved"] + m[..., 0].mean(-1)
        sums["sep_moved"] = sums["sep_moved"] + m[..., -1].mean(-1)
        uniform += 1.0 / w.shape[-1]
    out = {k: v / len(sentences) for k, v in sums.items()}
    out["uniform"] = torch.tensor(uniform / len(sentences))
    return out
