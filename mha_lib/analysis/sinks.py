"""What heads take from the sinks, by taking it away (chapter 9).

A "sink" (Xiao et al. 2023) is a position that receives much of a head's weight whatever
the query: in BERT-family models `[CLS]` and `[SEP]`; `head_stats.special_mass` reads
how much weight they get.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from mha_lib._checks import check_positive_int

ABLATIONS = ("zero", "mean", "random", "off")


@torch.no_grad()
def sink_ablation(
    model: torch.nn.Module,
    tokenizer: object,
    sentences: Sequence[str],
    *,
    draws: int = 8,
    seed: int = 0,
) -> dict[str, torch.Tensor]:
    """What each head takes from `[CLS]` and `[SEP]`, measured by taking it away.

    In layer `l` head `h` adds `o_i = sum_j alpha_ij f(x_j)` to the layer's attention
    output `A` (`mha_lib.bert.norms.transformed_values`). With `S` the two special
    positions and `w_i` the weight query `i` puts on them, one head at a time:

    - `zero`: their part removed, `o_i − sum_{j in S} alpha_ij f(x_j)`;
    - `mean`: their `f(x_j)` replaced by the mean `f` of the sentence's ordinary tokens;
    - `random` (baseline): the same weight `w_i` taken from a random ordinary token `r`,
      `o_i − w_i f(x_r)`, averaged over `draws` draws (seeded by `seed`);
    - `off` (baseline): the whole head switched off, `o_i` removed.

    Returns, per sentence, layer and head `(N, L, H)`: `weight` (the mean over queries of
    `w_i`), and for each ablation `attn_<ablation>`, the relative change of the attention
    output `||ΔA|| / ||A||`, and `hidden_<ablation>`, that of the hidden state after the
    layer (its attention output changed, the rest of the layer run again), Frobenius norms
    over the sentence's positions. Every query position is read, the special ones too.
    """
    from mha_lib.bert.loading import encoder_layers, require_eager
    from mha_lib.bert.norms import transformed_values

    if not sentences:
        raise ValueError("sink_ablation needs at least one sentence")
    check_positive_int("draws", draws)
    require_eager(model)
    was_training = model.training
    model.eval()
    generator = torch.Generator().manual_seed(seed)
    layers = encoder_layers(model)
    keys = ["weight"] + [f"{p}_{a}" for p in ("attn", "hidden") for a in ABLATIONS]
    rows: dict[str, list[torch.Tensor]] = {k: [] for k in keys}
    try:
        for text in sentences:
            enc = tokenizer(text, return_tensors="pt").to(next(model.parameters()).device)
            t = enc["input_ids"].shape[1]
            if t < 3:
                raise ValueError(f"sentence {text!r} has no ordinary token")
            out = model(**enc, output_attentions=True, output_hidden_states=True)
            per_layer: dict[str, list[torch.Tensor]] = {k: [] for k in keys}
            for layer, x, after, alpha in zip(
                layers, out.hidden_states, out.hidden_states[1:], out.attentions, strict=False
            ):
                x, after, alpha = x[0], after[0], alpha[0]  # (T, D), (T, D), (H, T, T)
                f = transformed_values(layer, x[None])[0]  # (H, T, D)
                o = alpha @ f  # (H, T, D): what each head adds
                dense = layer.attention.output.dense
                attn = o.sum(0) + dense.bias  # (T, D): the layer's attention output
                special = [0, t - 1]
                w = alpha[..., special].sum(-1)  # (H, T)
                sink = alpha[..., special] @ f[:, special]  # (H, T, D)
                ordinary = f[:, 1 : t - 1]  # (H, T − 2, D)
                mean = ordinary.mean(1, keepdim=True)  # (H, 1, D)
                picks = torch.randint(t - 2, (draws, *w.shape), generator=generator)
                fetched = ordinary[torch.arange(w.shape[0])[None, :, None], picks.to(f.device)]
                deltas = {
                    "zero": [-sink],
                    "mean": [w[..., None] * mean - sink],
                    "random": list(-w[..., None] * fetched),  # draws × (H, T, D)
                    "off": [-o],
                }
                per_layer["weight"].append(w.mean(-1))
                for name, changes in deltas.items():
                    a_rel, h_rel = [], []
                    for delta in changes:  # (H, T, D): one head changed at a time
                        a_rel.append(delta.flatten(1).norm(dim=1) / attn.norm())
                        changed = _rest_of_layer(layer, x, attn + delta)  # (H, T, D)
                        h_rel.append((changed - after).flatten(1).norm(dim=1) / after.norm())
                    per_layer[f"attn_{name}"].append(torch.stack(a_rel).mean(0))
                    per_layer[f"hidden_{name}"].append(torch.stack(h_rel).mean(0))
            for k in keys:
                rows[k].append(torch.stack(per_layer[k]).float().cpu())  # (L, H)
    finally:
        model.train(was_training)
    return {k: torch.stack(v) for k, v in rows.items()}  # (N, L, H) each


def _rest_of_layer(layer: torch.nn.Module, x: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
    """A BERT layer's output from its input `x` `(T, D)` and attention output `attn`
    `(..., T, D)` (before the residual): add and normalise, feed forward, add and normalise,
    as `BertLayer` does in eval mode."""
    a = layer.attention.output.LayerNorm(attn + x)  # (..., T, D)
    return layer.output(layer.intermediate(a), a)  # (..., T, D)
