"""Do heads affect each other? Probes for the coupling the article says is absent.

The source article says each head is "trained independently" and the heads "do not affect
each other". In the forward pass of one layer that is exact: head `j`'s attention map is a
function of the layer's input and head `j`'s own query and key rows only. Everything else
is shared: the heads' outputs are summed by one `W_o` into the residual stream, which the
next layer reads, and the loss (hence every head's gradient) depends on that sum. These
functions measure each path:

- `map_change_on_ablation`: silence one head, measure how every head's map moves
  (exactly zero in the same layer; the next layer reads the residual stream);
- `gradient_coupling`: silence one head, measure how much every other head's gradient
  changes, beside the change from one batch to another;
- `train_without`: the counterfactual training run, the same seed (same initial
  weights of the other heads, same batches) with some heads removed before the first step;
- `named_key_weight`, `query_maps`, `map_distance`,
  `matched_distance`: what the surviving heads learned, compared run against run.

Heads keep their original index everywhere; a removed head's entries are NaN.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

from mha_lib.core.multihead import MultiHeadAttention
from mha_lib.experiments.tasks import KeyValueRecall
from mha_lib.experiments.toy_transformer import ToyTransformer
from mha_lib.experiments.training import (
    Config,
    TrainResult,
    build_model,
    make_task,
    toy_accuracy,
    toy_loss,
    train,
)
from mha_lib.pruning import MHAHeads


def train_without(
    config: Config,
    seed: int,
    removed: Mapping[int, Sequence[int]] | None = None,
    *,
    stop_after: int | None = None,
) -> tuple[ToyTransformer, TrainResult]:
    """Train `config` from `seed` with the heads `removed` (`{layer: [heads]}`) pruned
    before the first step.

    The other heads start from exactly the weights they have in the full model of the same
    seed and see the same batches: if heads did not affect each other, they would learn
    exactly what they learn in the full model. `stop_after` trains only the first steps
    of the run, with its whole schedule (`train`).
    """
    task = make_task(config.task, **config.task_args)
    model = build_model(config, task, seed)
    for layer, heads in (removed or {}).items():
        model.blocks[layer].attn.prune_heads(list(heads))
    return model, train(model, task, config, seed, progress=False, stop_after=stop_after)


def _original_heads(attn: MultiHeadAttention, per_kept: torch.Tensor) -> torch.Tensor:
    """Put per-present-head values `(H_kept, ...)` at their original indices; NaN elsewhere."""
    out = torch.full(
        (attn.original_num_heads, *per_kept.shape[1:]), float("nan"), dtype=per_kept.dtype
    )
    out[attn.kept_heads] = per_kept
    return out


@torch.no_grad()
def query_maps(model: ToyTransformer, task: KeyValueRecall, inputs: torch.Tensor) -> torch.Tensor:
    """Every head's attention rows at the query positions, `(L, H, B, Q, T)`, by original
    head index (NaN for a removed head)."""
    was_training = model.training
    model.eval()
    try:
        _, maps = model(inputs, need_weights=True)  # L × (B, H_kept, T, T)
    finally:
        model.train(was_training)
    n = task.num_pairs
    return torch.stack(
        [
            _original_heads(attn, m[:, :, n:, :].transpose(0, 1))  # (H, B, Q, T)
            for attn, m in zip(model.attentions, maps, strict=True)
        ]
    )


def named_key_weight(
    model: ToyTransformer, task: KeyValueRecall, inputs: torch.Tensor
) -> torch.Tensor:
    """Weight each head puts on the slot holding the key its query names, per named key:
    `(L, H, num_keys)` (NaN for a removed head).

    On associative recall the heads of a layer divide the keys among themselves; this is
    the division.
    """
    if task.keys_per_query != 1:
        raise ValueError("named_key_weight needs a one-key task (keys_per_query == 1)")
    n = task.num_pairs
    slot = task.answer_positions(inputs)[:, n:, 0]  # (B, Q)
    named = inputs[:, :n].gather(1, slot) // task.num_values  # (B, Q)
    rows = query_maps(model, task, inputs)  # (L, H, B, Q, T)
    on = rows.gather(-1, slot[None, None, :, :, None].expand(*rows.shape[:-1], 1))[..., 0]
    return torch.stack(
        [on[..., named == k].mean(-1) for k in range(task.num_keys)], dim=-1
    )  # (L, H, K)


def map_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Mean total-variation distance between two sets of attention rows `(..., T)`, over
    everything but the leading `(L, H)`: 0 for the same maps, 1 for disjoint ones."""
    if a.shape != b.shape or a.dim() < 3:
        raise ValueError(f"a and b must share a shape (L, H, ..., T), got {a.shape}, {b.shape}")
    tv = 0.5 * (a - b).abs().sum(-1)  # (L, H, ...)
    return tv.flatten(2).mean(-1)  # (L, H)


def matched_distance(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, list[list[int]]]:
    """`map_distance` after pairing the heads of `b` with those of `a` so that the
    total distance is smallest, layer by layer (two runs from different seeds number their
    heads arbitrarily). Returns the `(L, H)` distances and, per layer, `a`'s partner in
    `b` of each head."""
    if a.shape != b.shape or a.dim() < 3:
        raise ValueError(f"a and b must share a shape (L, H, ..., T), got {a.shape}, {b.shape}")
    distances, partners = [], []
    for la, lb in zip(a, b, strict=True):  # (H, ..., T)
        tv = 0.5 * (la[:, None] - lb[None]).abs().sum(-1)  # (H, H, ...): head i of a, j of b
        cost = tv.flatten(2).mean(-1)  # (H, H)
        rows, cols = linear_sum_assignment(cost.numpy())
        distances.append(cost[rows, cols])
        partners.append(cols.tolist())
    return torch.stack(distances), partners


@torch.no_grad()
def map_change_on_ablation(
    model: ToyTransformer, task: KeyValueRecall, inputs: torch.Tensor, layer: int, head: int
) -> torch.Tensor:
    """How far every head's maps move (`map_distance`, `(L, H)`) when head `head`
    of layer `layer` is silenced: exactly 0 in its own layer, and in layers before it."""
    heads = MHAHeads(model, toy_loss, toy_accuracy)
    head_mask = heads.ones()  # 1 keeps a head as it is, 0 silences it
    head_mask[layer, head] = 0.0
    full = query_maps(model, task, inputs)
    with heads.masked(head_mask):
        silenced = query_maps(model, task, inputs)
    return map_distance(full, silenced)


def _head_gradients(model: ToyTransformer, batch: tuple, head_mask: torch.Tensor | None) -> list:
    """Per layer, each head's gradient flattened `(H, P)`: its rows of `W_q`, `W_k`,
    `W_v` (and biases) and its columns of `W_o`."""
    heads = MHAHeads(model, toy_loss, toy_accuracy)
    model.zero_grad(set_to_none=True)
    head_mask = heads.ones() if head_mask is None else head_mask
    with heads.masked(head_mask):
        toy_loss(model, batch).mean().backward()
    out = []
    for attn in heads.attentions:
        h, dh = attn.num_heads, attn.d_head
        parts = [
            getattr(attn, f"{p}_proj").weight.grad.view(h, dh, -1).flatten(1)
            for p in ("q", "k", "v")
        ]
        parts += [getattr(attn, f"{p}_proj").bias.grad.view(h, dh) for p in ("q", "k", "v")]
        parts.append(attn.out_proj.weight.grad.view(-1, h, dh).transpose(0, 1).flatten(1))
        out.append(torch.cat(parts, dim=1))  # (H, P)
    model.zero_grad(set_to_none=True)
    return out


def gradient_coupling(
    model: ToyTransformer, batches: Sequence[tuple], layer: int, head: int
) -> dict[str, torch.Tensor]:
    """How much silencing head `head` of layer `layer` changes every head's gradient.

    Returns `(L, H)` tensors: `"ablation"`, the relative change
    `‖g − g_silenced‖ / ‖g‖` on the first batch, and `"batch"`, the relative change
    from the first batch to the second with nothing silenced (minibatch noise: what a
    change of data alone does). The silenced head's own entry is NaN under `"ablation"`.
    If heads did not affect each other, every other entry of `"ablation"` would be 0.
    """
    if len(batches) != 2:
        raise ValueError(f"batches must hold two batches, got {len(batches)}")
    heads = MHAHeads(model, toy_loss, toy_accuracy)
    head_mask = heads.ones()  # 1 keeps a head as it is, 0 silences it
    head_mask[layer, head] = 0.0
    full = _head_gradients(model, batches[0], None)
    silenced = _head_gradients(model, batches[0], head_mask)
    other = _head_gradients(model, batches[1], None)

    def relative(a: list, b: list) -> torch.Tensor:
        return torch.stack(
            [(x - y).norm(dim=1) / x.norm(dim=1) for x, y in zip(a, b, strict=True)]
        )  # (L, H)

    ablation = relative(full, silenced)
    ablation[layer, head] = float("nan")
    return {"ablation": ablation, "batch": relative(full, other)}


def takeover(full: np.ndarray, removed: np.ndarray, head: int) -> dict[str, float] | None:
    """Where the keys of a removed head went: `full` and `removed` are one layer's
    `named_key_weight` `(H, K)` in the full model and with `head` removed (same seed).

    The removed head's keys are those it read most strongly of all heads in the full model
    (`None` if there are none). For them and for the other keys, the best weight any
    *other* head puts on the key, in the full model and without the head: if heads did not
    affect each other, both would stay where they were.
    """
    if full.shape != removed.shape or full.ndim != 2:
        raise ValueError(
            f"full and removed must share a shape (H, K), got {full.shape}, {removed.shape}"
        )
    own = np.nanargmax(full, axis=0) == head  # (K,)
    if not own.any():
        return None
    if own.all():
        raise ValueError(f"head {head} is the strongest reader of every key: no other keys")
    others = [h for h in range(full.shape[0]) if h != head]
    before = full[others].max(0)  # (K,)
    after = removed[others].max(0)  # (K,)
    return {
        "own_keys": int(own.sum()),
        "own_before": float(before[own].mean()),
        "own_after": float(after[own].mean()),
        "other_before": float(before[~own].mean()),
        "other_after": float(after[~own].mean()),
        "removed_head_weight": float(full[head, own].mean()),
    }
