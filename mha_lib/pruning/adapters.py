"""Head adapters: one small object per model family that can mask heads, remove them and score.

Every function of :mod:`mha_lib.pruning` works on an adapter, so the same importance
scores and pruning curves run on the book's toy transformer (:class:`MHAHeads`, any model
built from `mha_lib.MultiHeadAttention`) and on a BERT-family transformers model
(:class:`BertHeads`). Heads are named by their original index; masks are ``(L, H)`` for
the whole model or ``(B, L, H)`` per example (see :mod:`mha_lib.core.masks`).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from mha_lib._checks import check_floating
from mha_lib.core.multihead import MultiHeadAttention

LossFn = Callable[[nn.Module, Any], torch.Tensor]
MetricFn = Callable[[nn.Module, Sequence[Any]], float]


@dataclass
class HeadAdapter:
    """Shared bookkeeping: original head numbering, silenced heads, loss and metric under them."""

    model: nn.Module
    loss_fn: LossFn
    metric_fn: MetricFn
    num_layers: int = 0
    num_heads: int = 0
    allow_empty_layers: bool = False
    # Model input rows that make one example (e.g. 8 for a retrieval group); the loss of
    # one example must depend on its own rows only.
    rows_per_example: int = 1
    # Heads a caller removed although they were the last of their layer: they cannot
    # leave physically, so they stay as zero-masked weights.
    silenced: set[tuple[int, int]] = field(default_factory=set)

    # --- to implement per model family
    def kept_heads(self) -> list[list[int]]:
        raise NotImplementedError

    def _raw_mask(self, mask: torch.Tensor) -> contextlib.AbstractContextManager[None]:
        raise NotImplementedError

    def _remove(self, plan: dict[int, list[int]]) -> None:
        raise NotImplementedError

    # --- shared
    @property
    def device(self) -> torch.device:
        """Where the model's parameters (and so every mask given to it) live."""
        return next(self.model.parameters()).device

    def ones(self, *batch: int) -> torch.Tensor:
        """A mask of ones on the model's device: ``(L, H)``, or ``(B, L, H)`` given ``B``."""
        return torch.ones(*batch, self.num_layers, self.num_heads, device=self.device)

    def present(self) -> torch.Tensor:
        """``(L, H)`` bool on the CPU (bookkeeping): True for heads still doing work."""
        alive = torch.zeros(self.num_layers, self.num_heads, dtype=torch.bool, device="cpu")
        for layer, kept in enumerate(self.kept_heads()):
            alive[layer, kept] = True
        for layer, head in self.silenced:
            alive[layer, head] = False
        return alive

    def masked(self, mask: torch.Tensor) -> contextlib.AbstractContextManager[None]:
        """Scale each head's output by ``mask[layer, head]`` (original numbering) in the block.

        ``mask`` is ``(L, H)``, or ``(B, L, H)`` for one mask per input row (the
        library's convention, :mod:`mha_lib.core.masks`).
        """
        check_floating(mask, "mask")
        nl, nh = self.num_layers, self.num_heads
        if mask.dim() not in (2, 3) or tuple(mask.shape[-2:]) != (nl, nh):
            raise ValueError(
                f"mask must have shape (layers, heads) = ({nl}, {nh}) or (batch, layers, heads), "
                f"got {tuple(mask.shape)}"
            )
        if self.silenced:
            keep = torch.ones(nl, nh, dtype=mask.dtype, device=mask.device)
            for layer, head in self.silenced:
                keep[layer, head] = 0.0
            mask = mask * keep  # ([B,] L, H)
        return self._raw_mask(mask)

    def rows(self, batch: Any) -> int:  # noqa: ANN401 - any batch type
        """Number of model input rows in ``batch`` (first tensor's first dimension, or len)."""
        if isinstance(batch, tuple | list):
            return int(batch[0].shape[0])
        return len(batch)

    @contextlib.contextmanager
    def as_pruned(self) -> Iterator[None]:
        """Run the model as pruned so far: heads that had to stay as weights are switched off.

        Wrap any direct use of ``adapter.model`` (e.g. computing embeddings) in it.
        """
        if self.silenced:
            with self.masked(self.ones()):
                yield
        else:
            yield

    def loss(self, batch: Any) -> torch.Tensor:  # noqa: ANN401 - any batch type
        """The differentiable mean loss of one batch, silenced heads switched off."""
        with self.as_pruned():
            return self.loss_fn(self.model, batch).mean()

    def metric(self, batches: Sequence[Any]) -> float:
        """The metric over ``batches`` (higher is better), silenced heads switched off."""
        with self.as_pruned(), torch.inference_mode():
            return float(self.metric_fn(self.model, batches))

    def prune(self, heads: Mapping[int, Sequence[int]]) -> None:
        """Remove heads (original numbering); refuse to empty a layer unless allowed."""
        if not isinstance(heads, Mapping):
            raise TypeError(f"heads must be a mapping {{layer: [heads]}}, got {type(heads)}")
        alive = self.present()
        plan: dict[int, list[int]] = {}
        for layer, drop in heads.items():
            if isinstance(layer, bool) or not isinstance(layer, int):
                raise TypeError(f"layer indices must be ints, got {layer!r}")
            if not 0 <= layer < self.num_layers:
                raise ValueError(f"layer {layer} is out of range for {self.num_layers} layers")
            drop = sorted(set(drop))
            for h in drop:
                if isinstance(h, bool) or not isinstance(h, int) or not 0 <= h < self.num_heads:
                    raise ValueError(
                        f"heads[{layer}] has head {h!r}, expected ints in 0 … {self.num_heads - 1}"
                    )
                if not alive[layer, h]:
                    raise ValueError(f"head {h} of layer {layer} is already pruned")
            if drop and len(drop) >= int(alive[layer].sum()) and not self.allow_empty_layers:
                raise ValueError(
                    f"pruning heads {drop} would remove every head of layer {layer}; "
                    "pass allow_empty_layers=True to the adapter to allow it"
                )
            plan[layer] = drop
        physical: dict[int, list[int]] = {}
        kept = self.kept_heads()
        for layer, drop in plan.items():
            remaining = [h for h in kept[layer] if h not in drop]
            if remaining:
                physical[layer] = drop
            else:  # the last head stays as weights but is switched off for good
                last = kept[layer][-1]
                physical[layer] = [h for h in drop if h != last]
                self.silenced.add((layer, last))
        physical = {k: v for k, v in physical.items() if v}
        if physical:
            self._remove(physical)

    def clone(self) -> HeadAdapter:
        """A deep copy (model included) to prune without touching the original."""
        return copy.deepcopy(self)


@dataclass
class MHAHeads(HeadAdapter):
    """Adapter for any model whose attention is `mha_lib.MultiHeadAttention` modules.

    ``loss_fn(model, batch)`` returns differentiable per-row losses ``(B,)``; ``metric_fn(model,
    batches)`` a float, higher is better. Masks are injected into every
    attention module's ``head_mask`` argument by a forward pre-hook, so the
    model's own ``forward`` needs no head-mask argument. Layers are the
    attention modules in ``model.modules()`` order.
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

    @contextlib.contextmanager
    def _raw_mask(self, mask: torch.Tensor) -> Iterator[None]:
        def make_hook(layer: int):  # noqa: ANN202 - a torch hook
            def hook(module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
                scale = mask[..., layer, :]  # (H,) or (B, H), original numbering
                given = kwargs.get("head_mask")
                kwargs = {**kwargs, "head_mask": scale if given is None else given * scale}
                return args, kwargs

            return hook

        handles = [
            attn.register_forward_pre_hook(make_hook(i), with_kwargs=True)
            for i, attn in enumerate(self.attentions)
        ]
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

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

    def _raw_mask(self, mask: torch.Tensor) -> contextlib.AbstractContextManager[None]:
        from mha_lib import bert

        return bert.head_mask(self.model, mask)  # (L, H) or (B, L, H), as here

    def _remove(self, plan: dict[int, list[int]]) -> None:
        from mha_lib import bert

        bert.prune_heads(self.model, plan)
