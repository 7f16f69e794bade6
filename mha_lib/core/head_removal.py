"""Removing heads: the one set of rules, and the weight slicing every model shares.

`mha_lib.MultiHeadAttention.prune_heads`, `mha_lib.bert.prune_heads` and the pruning
adapters (`mha_lib.pruning.HeadAdapter.prune`) check every request here and cut weights
with the same helpers, so the three agree on what a request means and what they refuse:

1. **Heads keep their original index.** A request names heads by the index they had before
   any pruning (as transformers 4 did), so a table of head scores can be pruned in rounds
   and a head mask after pruning still has one entry per original head.
2. **Only a present head can be removed.** An index that is out of range, or a head already
   removed, is a `ValueError` naming the layer and the head. Pruning a head twice is a
   bookkeeping mistake in the caller (a stale score table, a plan applied twice), and
   ignoring it would hide that; no caller in the library or the book needs it to pass.
3. **Every layer keeps at least one head.** Removing a layer's last present head is a
   `ValueError` naming the layer, in all three places: a layer without heads would need
   a different module, not a smaller one. To switch a whole layer off, mask it (a zero head
   mask, `mha_lib.core.masks`); the pruning curves stop at one head per layer.
4. **Indices are ints** (not bools): anything else is a `TypeError`; a plan is a mapping
   `{layer: [heads]}` and each entry a collection of heads. Naming a head twice in one
   request removes it once; an empty request changes nothing.
5. **A refused request changes nothing**: the whole request, every layer of it, is checked
   before any weight is cut.

Head `h` owns the projected features `h·d_head … (h+1)·d_head − 1` (see
`mha_lib.split_heads`), so removing heads keeps those rows of the query, key and value
projections and those columns of the output projection (`head_features`).
Tested once, for all three callers, in `tests/unit/test_head_removal.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import torch
from torch import nn


def surviving_heads(
    present: Sequence[int], drop: Iterable[int], num_heads: int, *, layer: int | None = None
) -> list[int]:
    """The heads of `present` (original indices, in order) left after removing `drop`.

    `num_heads` is the original head count; `layer` only names the layer in errors.
    Applies rules 2-4 of this module to one layer.
    """
    where = "" if layer is None else f" of layer {layer}"
    if isinstance(drop, str | bytes | torch.Tensor) or not isinstance(drop, Iterable):
        name = "heads" if layer is None else f"heads[{layer}]"
        raise TypeError(f"{name} must be a list of head indices, got {drop!r}")
    removed: set[int] = set()
    for head in drop:
        if isinstance(head, bool) or not isinstance(head, int):
            name = "heads" if layer is None else f"heads[{layer}]"
            raise TypeError(f"{name} must contain ints, got {head!r}")
        if not 0 <= head < num_heads:
            raise ValueError(
                f"head index {head}{where} is out of range for {num_heads} heads "
                "(heads keep their original index)"
            )
        if head not in present:
            raise ValueError(
                f"head {head}{where} is already pruned (present: {list(present)}); "
                "pruning a head twice is refused"
            )
        removed.add(head)
    remaining = [h for h in present if h not in removed]
    if not remaining:
        raise ValueError(
            f"cannot prune all {len(present)} heads{where} ({sorted(removed)}): every layer "
            "keeps at least one head; a zero head mask switches a whole layer off"
        )
    return remaining


def surviving_heads_per_layer(
    heads: Mapping[int, Iterable[int]], present: Sequence[Sequence[int]], num_heads: int
) -> dict[int, list[int]]:
    """`{layer: heads left}` for the layers a plan `{layer: [heads]}` changes.

    `present` lists each layer's present heads (original indices); `num_heads` is the
    original head count of every layer. Every layer is checked (rules 2-4) before this
    returns, so a caller that cuts weights only afterwards changes nothing on a refusal.
    """
    if not isinstance(heads, Mapping):
        raise TypeError(f"heads must be a mapping {{layer: [heads]}}, got {type(heads).__name__}")
    survivors: dict[int, list[int]] = {}
    for layer, drop in heads.items():
        if isinstance(layer, bool) or not isinstance(layer, int):
            raise TypeError(f"layer indices must be ints, got {layer!r}")
        if not 0 <= layer < len(present):
            raise ValueError(f"layer index {layer} is out of range for {len(present)} layers")
        remaining = surviving_heads(present[layer], drop, num_heads, layer=layer)
        if len(remaining) != len(present[layer]):
            survivors[layer] = remaining
    return survivors


def head_features(slots: Sequence[int], d_head: int, device: torch.device | str) -> torch.Tensor:
    """Indices of the projected features that belong to the heads in `slots`, `(len · d_head,)`.

    `slots` are positions among the heads a module holds *now* (after any pruning), not
    original indices: head slot `s` owns features `s·d_head … (s+1)·d_head − 1`.
    """
    if not slots:
        return torch.zeros(0, dtype=torch.long, device=device)
    return torch.cat([torch.arange(s * d_head, (s + 1) * d_head, device=device) for s in slots])


def slots_of(present: Sequence[int], heads: Iterable[int]) -> list[int]:
    """Positions (slots) of `heads`, given by original index, among the `present` ones."""
    where = {h: slot for slot, h in enumerate(present)}
    return [where[h] for h in heads]


def keep_output_features(linear: nn.Linear, idx: torch.Tensor) -> nn.Linear:
    """A new `nn.Linear` with only the output features `idx` (rows of weight and bias)."""
    new = nn.Linear(linear.in_features, len(idx), **_factory(linear))
    with torch.no_grad():
        new.weight.copy_(linear.weight[idx])
        if linear.bias is not None:
            new.bias.copy_(linear.bias[idx])
    return new


def keep_input_features(linear: nn.Linear, idx: torch.Tensor) -> nn.Linear:
    """A new `nn.Linear` reading only the input features `idx` (its bias stays whole)."""
    new = nn.Linear(len(idx), linear.out_features, **_factory(linear))
    with torch.no_grad():
        new.weight.copy_(linear.weight[:, idx])
        if linear.bias is not None:
            new.bias.copy_(linear.bias)
    return new


def _factory(linear: nn.Linear) -> dict[str, object]:
    return {
        "bias": linear.bias is not None,
        "device": linear.weight.device,
        "dtype": linear.weight.dtype,
    }
