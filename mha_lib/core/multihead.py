"""Multi-head attention: project, split into heads, attend, merge, project back."""

from __future__ import annotations

from collections.abc import Iterable

import torch
import torch.nn.functional as F
from torch import nn

from mha_lib._checks import check_floating, check_positive_int, check_rank
from mha_lib.core.attention import scaled_dot_product_attention
from mha_lib.core.head_removal import (
    head_features,
    keep_input_features,
    keep_output_features,
    slots_of,
    surviving_heads,
)
from mha_lib.core.heads import merge_heads, split_heads
from mha_lib.core.masks import allowed_keys, attends_nowhere, only_causal


class MultiHeadAttention(nn.Module):
    """Batch-first multi-head attention with per-head weights and head masking.

    Each of the `num_heads` heads attends in its own `d_model / num_heads`
    dimensional slice of the projected queries, keys and values; the heads'
    outputs are concatenated and mixed by `out_proj`. Masks:

    - `attn_mask`: `(Tq, Tk)` or broadcastable to `(B, H, Tq, Tk)`. Boolean
      True means *may attend*, as in `torch.nn.functional.scaled_dot_product_attention`
      (note: the opposite of `torch.nn.MultiheadAttention`'s boolean `attn_mask`).
      A float mask is added to the scores.
    - `key_padding_mask`: `(B, Tk)`; boolean True marks padding, as in
      `torch.nn.MultiheadAttention`. A float mask is added to the scores.
    - `head_mask`: float `(H,)` or `(B, H)`, multiplying each head's output
      before `out_proj`; gradients flow to it (head importance uses them).

    `num_kv_heads` (a divisor of `num_heads`; default `num_heads`) gives the
    query heads fewer key and value heads to share: query head `h` reads key/value
    head `h // (num_heads // num_kv_heads)`. Equal to `num_heads` is multi-head
    attention (the default, computed exactly as before), 1 is multi-query attention
    (Shazeer 2019), anything between is grouped-query attention (Ainslie et al. 2023).
    `k_proj` and `v_proj` then have `num_kv_heads · d_head` outputs, and the
    weights, `head_mask` and pruning stay per *query* head.

    `shared_query=True` shares the other side: one query projection (`q_proj` with
    `d_head` outputs) serves every head, and each head keeps its own keys and values.
    Each head then scores the same query against its own keys (chapter 9 asks which side
    the heads need to own). It needs a key/value head per query head: with both sides
    shared, the heads of a group would be copies of each other. The default, `False`,
    is multi-head attention, computed exactly as before.

    Heads keep their original index for good: `prune_heads` takes original
    indices and records the survivors in `kept_heads`, and `head_mask` always has
    one entry per original head (entries of removed heads are ignored). With shared
    keys and values a query head is removed alone, and a key/value head goes only with
    the last query head of its group (`kept_kv_heads`): a shared key/value head
    cannot be removed while a query head still reads it. The returned
    weights are those of the present heads, in `kept_heads` order, and are not
    scaled by `head_mask` (it scales a head's output, not where the head looks).
    `mha_lib.core.masks` states the library's mask conventions in one place.

    With `need_weights=False` the fused kernel runs and no `(B, H, Tq, Tk)`
    map is stored; with `need_weights=True` the explicit path runs and the
    per-head weights are returned. `device` and `dtype` place the parameters,
    as for any torch module.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        *,
        bias: bool = True,
        dropout: float = 0.0,
        num_kv_heads: int | None = None,
        shared_query: bool = False,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("num_heads", num_heads)
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        check_positive_int("num_kv_heads", num_kv_heads)
        if num_heads % num_kv_heads:
            raise ValueError(
                f"num_kv_heads={num_kv_heads} must divide num_heads={num_heads} (each key/value "
                "head serves a whole group of query heads): use a divisor of num_heads"
            )
        if not isinstance(shared_query, bool):
            raise TypeError(f"shared_query must be a bool, got {shared_query!r}")
        if shared_query and num_kv_heads != num_heads:
            raise ValueError(
                f"shared_query=True needs a key/value head per query head (num_kv_heads="
                f"{num_kv_heads}, num_heads={num_heads}): with a shared query and shared keys "
                "and values, the heads of a group would compute the same thing"
            )
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.d_model = d_model
        self.num_heads = num_heads  # heads present now
        self.original_num_heads = num_heads
        self.kept_heads = list(range(num_heads))  # original indices of the present heads
        self.d_head = d_model // num_heads
        self.num_kv_heads = num_kv_heads  # key/value heads present now
        self.original_num_kv_heads = num_kv_heads
        self.kept_kv_heads = list(range(num_kv_heads))  # original indices of those present
        self.shared_query = shared_query  # one query projection for every head
        self.dropout = dropout
        factory = {"bias": bias, "device": device, "dtype": dtype}
        kv_features = num_kv_heads * self.d_head
        q_features = self.d_head if shared_query else d_model
        self.q_proj = nn.Linear(d_model, q_features, **factory)
        self.k_proj = nn.Linear(d_model, kv_features, **factory)
        self.v_proj = nn.Linear(d_model, kv_features, **factory)
        self.out_proj = nn.Linear(d_model, d_model, **factory)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Xavier-uniform weights and zero biases, as `nn.MultiheadAttention` does.

        Xavier keeps the variance of projected queries and keys near that of
        the input, so the scores start in the range where softmax still has
        gradient (chapter 7 measures what happens otherwise).
        """
        for proj in (self.q_proj, self.k_proj, self.v_proj, self.out_proj):
            nn.init.xavier_uniform_(proj.weight)
            if proj.bias is not None:
                nn.init.zeros_(proj.bias)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
        value: torch.Tensor | None = None,
        *,
        attn_mask: torch.Tensor | None = None,
        key_padding_mask: torch.Tensor | None = None,
        head_mask: torch.Tensor | None = None,
        need_weights: bool = False,
        is_causal: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Return `(output (B, Tq, d_model), weights (B, H, Tq, Tk) or None)`.

        `key` defaults to `query` and `value` to `key` (self-attention).
        `is_causal=True` lets query `i` attend to keys `0 … i` only, like a
        lower-triangular `attn_mask`, but the fused kernel then skips the blocks
        above the diagonal instead of reading a mask: about half the attention work.
        """
        key = query if key is None else key
        value = key if value is None else value
        self._check_inputs(query, key, value)
        batch, q_len, _ = query.shape
        k_len = key.shape[1]
        scores_shape = (batch, self.num_heads, q_len, k_len)
        # One mask from here on, named for what True means (mha_lib.core.masks).
        allowed = allowed_keys(attn_mask, key_padding_mask, scores_shape, query)
        if not isinstance(is_causal, bool):
            raise TypeError(f"is_causal must be a bool, got {type(is_causal).__name__}")
        if is_causal and (allowed is not None or need_weights):
            # The kernel's causal flag cannot be combined with a mask: build the mask.
            allowed = only_causal(allowed, q_len, k_len, query.device)
            is_causal = False

        q = self.project_queries(query)  # (B, H, Tq, Dh)
        k = split_heads(self.k_proj(key), self.num_kv_heads)  # (B, Hkv, Tk, Dh)
        v = split_heads(self.v_proj(value), self.num_kv_heads)  # (B, Hkv, Tk, Dh)
        dropout = self.dropout if self.training else 0.0
        # Shared keys and values: the explicit path repeats each K/V head for its query
        # heads; the fused kernel does the same without copying when the groups are even.
        gqa = self.num_kv_heads != self.num_heads
        fused_gqa = gqa and not need_weights and self._groups_are_even()
        if gqa and not fused_gqa:
            index = torch.tensor(self.kv_slot_of_heads(), device=k.device)
            k, v = k.index_select(1, index), v.index_select(1, index)  # (B, H, Tk, Dh)

        if need_weights:
            out, weights = scaled_dot_product_attention(q, k, v, allowed)  # (B, H, Tq, Dh)
            if dropout:
                out = F.dropout(weights, dropout) @ v
        else:
            # Fused kernel: same math, but the (B, H, Tq, Tk) map is never stored.
            # Rows that may attend to nothing are opened up for the kernel (it
            # would return NaN for a float mask) and zeroed after, as the explicit path does.
            nowhere = None if allowed is None else attends_nowhere(allowed)  # (.., Tq, 1)
            if nowhere is not None:
                opened = True if allowed.dtype == torch.bool else 0.0
                allowed = allowed.masked_fill(nowhere, opened)
            extra = {"enable_gqa": True} if fused_gqa else {}
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=allowed, dropout_p=dropout, is_causal=is_causal, **extra
            )
            if nowhere is not None:
                out = out.masked_fill(nowhere, 0.0)
            weights = None

        if head_mask is not None:
            scale = self._head_mask_view(head_mask, batch).to(device=out.device, dtype=out.dtype)
            out = out * scale  # (B, H, Tq, Dh)
        return self.out_proj(merge_heads(out)), weights  # (B, Tq, d_model)

    def project_queries(self, query: torch.Tensor) -> torch.Tensor:
        """Every present head's queries, `(B, Tq, d_model)` → `(B, H, Tq, Dh)`.

        With `shared_query` the one projected query is viewed once per head (`expand`:
        no copy, and its gradient is the sum over the heads).
        """
        if self.shared_query:
            q = self.q_proj(query)  # (B, Tq, Dh)
            return q.unsqueeze(1).expand(-1, self.num_heads, -1, -1)  # (B, H, Tq, Dh)
        return split_heads(self.q_proj(query), self.num_heads)  # (B, H, Tq, Dh)

    @classmethod
    def from_torch(cls, mha: nn.MultiheadAttention) -> MultiHeadAttention:
        """Copy the weights of a `torch.nn.MultiheadAttention` (either `batch_first`).

        The copy is always batch-first; torch packs the three input projections
        into one `in_proj_weight`, which is split here into q, k and v.
        """
        if not isinstance(mha, nn.MultiheadAttention):
            raise TypeError(f"mha must be a torch.nn.MultiheadAttention, got {type(mha).__name__}")
        if not mha._qkv_same_embed_dim:
            raise ValueError("mha has kdim/vdim different from embed_dim, which is not supported")
        if mha.bias_k is not None or mha.add_zero_attn:
            raise ValueError("mha uses add_bias_kv or add_zero_attn, which are not supported")
        bias = mha.in_proj_bias is not None
        weight = mha.in_proj_weight
        new = cls(
            mha.embed_dim,
            mha.num_heads,
            bias=bias,
            dropout=mha.dropout,
            device=weight.device,
            dtype=weight.dtype,
        )
        projections = (new.q_proj, new.k_proj, new.v_proj)
        with torch.no_grad():
            for proj, weight in zip(projections, mha.in_proj_weight.chunk(3), strict=True):
                proj.weight.copy_(weight)
            new.out_proj.weight.copy_(mha.out_proj.weight)
            if bias:
                for proj, b in zip(projections, mha.in_proj_bias.chunk(3), strict=True):
                    proj.bias.copy_(b)
                new.out_proj.bias.copy_(mha.out_proj.bias)
        return new.train(mha.training)

    def prune_heads(self, heads: Iterable[int]) -> None:
        """Remove heads physically: their q/k/v rows and `out_proj` columns go.

        `heads` are *original* indices (0 … `original_num_heads` − 1), as in
        `mha_lib.bert.prune_heads`, so a table of head scores can be pruned in several
        rounds. The result equals masking those heads with a zero `head_mask`, with fewer
        parameters and less compute. The rules of `mha_lib.core.head_removal` apply: a
        head that is out of range or already removed is a ValueError, and so is removing
        the last head; a refused call changes nothing. A shared query projection stays
        whole: the heads left still read it.
        """
        remaining = surviving_heads(self.kept_heads, heads, self.original_num_heads)
        if len(remaining) == self.num_heads:
            return
        slots = slots_of(self.kept_heads, remaining)  # where the survivors sit now
        idx = head_features(slots, self.d_head, self.q_proj.weight.device)
        if not self.shared_query:
            self.q_proj = keep_output_features(self.q_proj, idx)
        if self.original_num_kv_heads == self.original_num_heads:
            self.k_proj = keep_output_features(self.k_proj, idx)
            self.v_proj = keep_output_features(self.v_proj, idx)
            self.kept_kv_heads = list(remaining)
        else:
            # A shared K/V head stays while any query head of its group does.
            group = self.original_num_heads // self.original_num_kv_heads
            kv_left = sorted({h // group for h in remaining})
            kv_idx = head_features(
                slots_of(self.kept_kv_heads, kv_left), self.d_head, self.q_proj.weight.device
            )
            self.k_proj = keep_output_features(self.k_proj, kv_idx)
            self.v_proj = keep_output_features(self.v_proj, kv_idx)
            self.kept_kv_heads = kv_left
        self.out_proj = keep_input_features(self.out_proj, idx)
        self.kept_heads = remaining
        self.num_heads = len(remaining)
        self.num_kv_heads = len(self.kept_kv_heads)

    @property
    def group_size(self) -> int:
        """How many query heads (originally) share one key/value head."""
        return self.original_num_heads // self.original_num_kv_heads

    def kv_slot_of_heads(self) -> list[int]:
        """For each present query head, the slot of the key/value head it reads."""
        slot = {kv: s for s, kv in enumerate(self.kept_kv_heads)}
        return [slot[h // self.group_size] for h in self.kept_heads]

    def _groups_are_even(self) -> bool:
        """Whether present query heads come in equal consecutive groups per K/V head
        (what `enable_gqa` of the fused kernel assumes)."""
        if self.num_heads % self.num_kv_heads:
            return False
        per = self.num_heads // self.num_kv_heads
        return self.kv_slot_of_heads() == [i // per for i in range(self.num_heads)]

    def extra_repr(self) -> str:
        pruned = "" if self.num_heads == self.original_num_heads else f", kept={self.kept_heads}"
        shared = ""
        if self.original_num_kv_heads != self.original_num_heads:
            shared = f", num_kv_heads={self.num_kv_heads}"
        if self.shared_query:
            shared = ", shared_query=True"
        return (
            f"d_model={self.d_model}, num_heads={self.num_heads}{shared}, "
            f"d_head={self.d_head}{pruned}"
        )

    def _check_inputs(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> None:
        for name, x in (("query", query), ("key", key), ("value", value)):
            check_floating(x, name)
            check_rank(x, 3, name, "(batch, time, d_model)")
            if x.shape[-1] != self.d_model:
                raise ValueError(
                    f"{name} has last dimension {x.shape[-1]}, expected d_model={self.d_model}"
                )
        if not (query.shape[0] == key.shape[0] == value.shape[0]):
            raise ValueError(
                f"query, key and value must share the batch size, got "
                f"{query.shape[0]}, {key.shape[0]}, {value.shape[0]}"
            )
        if key.shape[1] != value.shape[1]:
            raise ValueError(
                f"key and value must have the same length, got {key.shape[1]} and {value.shape[1]}"
            )

    def _head_mask_view(self, head_mask: torch.Tensor, batch: int) -> torch.Tensor:
        """`(H,)` or `(B, H)` over the original heads → `(1 or B, H_kept, 1, 1)`."""
        check_floating(head_mask, "head_mask")
        h = self.original_num_heads
        if tuple(head_mask.shape) not in ((h,), (batch, h)):
            raise ValueError(
                f"head_mask must have shape ({h},) or ({batch}, {h}) (one entry per original "
                f"head), got {tuple(head_mask.shape)}"
            )
        kept = head_mask[..., self.kept_heads]  # (H_kept,) or (B, H_kept)
        return kept.reshape(-1, self.num_heads, 1, 1)
