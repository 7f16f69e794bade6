"""Head adapters: one small object per model family that can mask heads, remove them and score.

Every function of `mha_lib.pruning` works on an adapter, so the same importance
scores and pruning curves run on the book's toy transformer (`MHAHeads`, any model
built from `mha_lib.MultiHeadAttention`) and on a BERT-family transformers model
(`BertHeads`). Heads are named by their original index; masks are `(L, H)` for
the whole model or `(B, L, H)` per example (see `mha_lib.core.masks`).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from mha_lib._checks import check_floating
from mha_lib.core.head_hooks import heads_scaled
from mha_lib.core.head_removal import surviving_heads_per_layer
from mha_lib.core.multihead import MultiHeadAttention

LossFn = Callable[[nn.Module, Any], torch.Tensor]
MetricFn = Callable[[nn.Module, Sequence[Any]], float]


@dataclass
class HeadAdapter:
    """Shared bookkeeping: original head numbering, head masks, pruning, loss and metric."""

    model: nn.Module
    loss_fn: LossFn
    metric_fn: MetricFn
    num_layers: int = 0
    num_heads: int = 0
    # Model input rows that make one example (e.g. 8 for a retrieval group); the loss of
    # one example must depend on its own rows only.
    rows_per_example: int = 1

    # --- to implement per model family
    def kept_heads(self) -> list[list[int]]:
        raise NotImplementedError

    def _scale_heads(self, head_mask: torch.Tensor) -> contextlib.AbstractContextManager[None]:
        raise NotImplementedError

    def _remove(self, plan: dict[int, list[int]]) -> None:
        raise NotImplementedError

    # --- shared
    @property
    def device(self) -> torch.device:
        """Where the model's parameters (and so every mask given to it) live."""
        return next(self.model.parameters()).device

    def ones(self, *batch: int) -> torch.Tensor:
        """A mask of ones on the model's device: `(L, H)`, or `(B, L, H)` given `B`."""
        return torch.ones(*batch, self.num_layers, self.num_heads, device=self.device)

    def present(self) -> torch.Tensor:
        """`(L, H)` bool on the CPU (bookkeeping): True for heads not pruned."""
        present = torch.zeros(self.num_layers, self.num_heads, dtype=torch.bool, device="cpu")
        for layer, kept in enumerate(self.kept_heads()):
            present[layer, kept] = True
        return present

    def masked(self, mask: torch.Tensor) -> contextlib.AbstractContextManager[None]:
        """Scale each head's output by `mask[layer, head]` (original numbering) in the block.

        `mask` is a float head mask (1 keeps a head as it is, 0 silences it), `(L, H)`,
        or `(B, L, H)` for one mask per input row (the library's convention,
        `mha_lib.core.masks`). Zeros for every head of a layer switch the layer off,
        which pruning never does (`mha_lib.core.head_removal`).
        """
        check_floating(mask, "mask")
        nl, nh = self.num_layers, self.num_heads
        if mask.dim() not in (2, 3) or tuple(mask.shape[-2:]) != (nl, nh):
            raise ValueError(
                f"mask must have shape (layers, heads) = ({nl}, {nh}) or (batch, layers, heads), "
                f"got {tuple(mask.shape)}"
            )
        return self._scale_heads(mask)

    def rows(self, batch: Any) -> int:  # noqa: ANN401 - any batch type
        """Number of model input rows in `batch` (first tensor's first dimension, or len)."""
        if isinstance(batch, tuple | list):
            return int(batch[0].shape[0])
        return len(batch)

    def loss(self, batch: Any) -> torch.Tensor:  # noqa: ANN401 - any batch type
        """The differentiable mean loss of one batch."""
        return self.loss_fn(self.model, batch).mean()

    def metric(self, batches: Sequence[Any]) -> float:
        """The metric over `batches` (higher is better)."""
        with torch.inference_mode():
            return float(self.metric_fn(self.model, batches))

    def prune(self, heads: Mapping[int, Iterable[int]]) -> None:
        """Remove heads `{layer: [heads]}` (original numbering) physically.

        The rules of `mha_lib.core.head_removal`, as for the model's own pruning: a head
        out of range or already pruned is a ValueError, and so is removing a layer's last
        head; the whole plan is checked before any layer changes.
        """
        present = self.kept_heads()
        survivors = surviving_heads_per_layer(heads, present, self.num_heads)
        plan = {
            layer: [h for h in present[layer] if h not in remaining]
            for layer, remaining in survivors.items()
        }
        if plan:
            self._remove(plan)

    def clone(self) -> HeadAdapter:
        """A deep copy (model included) to prune without touching the original."""
        return copy.deepcopy(self)


@dataclass
class MHAHeads(HeadAdapter):
    """Adapter for any model whose attention is `mha_lib.MultiHeadAttention` modules.

    `loss_fn(model, batch)` returns differentiable per-row losses `(B,)`; `metric_fn(model,
    batches)` a float, higher is better. Masks reach every attention module's
    `head_mask` argument through a forward pre-hook (`mha_lib.core.head_hooks`), so the
    model's own `forward` needs no head-mask argument. Layers are the
    attention modules in `model.modules()` order.
    """

    def __post_init__(self) -> None:
        if not isinstance(self.model, nn.Module):
            raise TypeError(f"model must be an nn.Module, got {type(self.model).__name__}")
        attns = self.attentions
        if not attns:
            raise TypeError("model contains no mha_lib.MultiHeadAttention module")
        if len({a.original_num_heads for a in attns}) != 1:
            raise ValueError("every attention module must start with the same head count")
        self.num_layers = len(attns)
        self.num_heads = attns[0].original_num_heads

    @property
    def attentions(self) -> list[MultiHeadAttention]:
        return [m for m in self.model.modules() if isinstance(m, MultiHeadAttention)]

    def kept_heads(self) -> list[list[int]]:
        return [list(a.kept_heads) for a in self.attentions]

    def _scale_heads(self, head_mask: torch.Tensor) -> contextlib.AbstractContextManager[None]:
        attns = self.attentions
        return heads_scaled(attns, [head_mask[..., layer, :] for layer in range(len(attns))])

    def _remove(self, plan: dict[int, list[int]]) -> None:
        attns = self.attentions
        for layer, drop in plan.items():
            attns[layer].prune_heads(drop)  # original numbering, as everywhere


@dataclass
class BertHeads(HeadAdapter):
    """Adapter for a BERT-family transformers model, through `mha_lib.bert`."""

    def __post_init__(self) -> None:
        from mha_lib import bert

        # kept_heads raises a clear TypeError for a model that is not BERT-family
        self.num_layers = len(bert.kept_heads(self.model))
        self.num_heads = int(self.model.config.num_attention_heads)

    def kept_heads(self) -> list[list[int]]:
        from mha_lib import bert

        return bert.kept_heads(self.model)

    def _scale_heads(self, head_mask: torch.Tensor) -> contextlib.AbstractContextManager[None]:
        from mha_lib import bert

        return bert.head_mask(self.model, head_mask)  # (L, H) or (B, L, H), as here

    def _remove(self, plan: dict[int, list[int]]) -> None:
        from mha_lib import bert

        bert.prune_heads(self.model, plan)
