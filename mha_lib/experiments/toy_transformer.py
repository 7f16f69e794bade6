"""A minimal pre-norm encoder built on `MultiHeadAttention`, small enough to train on a CPU.

Chapters 4 and 7 train it on synthetic tasks to compare head counts at a fixed
`d_model` (so the parameter count does not change with `num_heads`), and
read every layer's per-head attention maps back for analysis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from mha_lib._checks import check_positive_int, check_rank, check_tensor
from mha_lib.core.head_removal import head_features, slots_of
from mha_lib.core.heads import split_heads
from mha_lib.core.multihead import MultiHeadAttention

READOUTS = ("token", "mean")
PROJECTIONS = ("q", "k", "v")


def scale_attention_(
    attention: MultiHeadAttention,
    scale: float,
    projections: tuple[str, ...] = PROJECTIONS,
    heads: tuple[int, ...] | None = None,
) -> None:
    """Multiply the weights of some projections of some heads of `attention`, in place.

    `projections` names any of `"q"`, `"k"`, `"v"` (the query, key and value
    projections); `heads` lists present heads by original index, as everywhere in the
    library (`None`: all of them). A head owns `d_head` output features of each
    projection, i.e. those rows of its weight
    (`mha_lib.core.head_removal.head_features`), so scaling them changes that head
    alone. Biases are left alone. `scale` may be 0: with `W_q = W_k = 0`
    (and zero biases) every score is 0, the attention is uniform and the gradient of
    each of the two, which is proportional to the other, is exactly 0, so training
    keeps them at 0 — a model that cannot attend by content.
    """
    if not isinstance(attention, MultiHeadAttention):
        raise TypeError(f"attention must be a MultiHeadAttention, got {type(attention).__name__}")
    if (
        isinstance(scale, bool)
        or not isinstance(scale, int | float)
        or not math.isfinite(scale)
        or scale < 0
    ):
        raise ValueError(f"scale must be a finite number >= 0, got {scale!r}")
    chosen = _check_projections(projections)
    shared = attention.original_num_kv_heads != attention.original_num_heads
    if shared and heads is not None and set(chosen) & {"k", "v"}:
        raise ValueError(
            "heads cannot select key/value rows of a layer whose key/value heads are shared "
            f"(num_kv_heads={attention.num_kv_heads}): scale q alone, or every head"
        )
    if attention.shared_query and heads is not None and "q" in chosen:
        raise ValueError(
            "heads cannot select query rows of a layer whose query is shared "
            "(shared_query=True): scale k and v alone, or every head"
        )
    rows = _head_rows(
        heads,
        attention.kept_heads,
        attention.original_num_heads,
        attention.d_head,
        attention.q_proj.weight.device,
    )
    with torch.no_grad():
        for name in chosen:
            weight = getattr(attention, f"{name}_proj").weight  # (D_out, D_in)
            if rows is None:
                weight.mul_(scale)
            else:
                weight[rows] *= scale


def _check_projections(projections: object) -> tuple[str, ...]:
    if isinstance(projections, str) or not isinstance(projections, tuple | list):
        raise TypeError(f"projections must be a tuple of names, got {projections!r}")
    if not projections or len(set(projections)) != len(projections):
        raise ValueError(f"projections must be distinct and not empty, got {projections!r}")
    unknown = [p for p in projections if p not in PROJECTIONS]
    if unknown:
        raise ValueError(f"projections must be among {PROJECTIONS}, got {unknown}")
    return tuple(projections)


def _head_rows(
    heads: object,
    present: Sequence[int],
    num_heads: int,
    d_head: int,
    device: torch.device | str = "cpu",
) -> torch.Tensor | None:
    """The weight rows owned by `heads` (original indices among `present`; `None`: all)."""
    if heads is None:
        return None
    if isinstance(heads, str) or not isinstance(heads, tuple | list):
        raise TypeError(f"heads must be a tuple of head indices or None, got {heads!r}")
    if (
        not heads
        or len(set(heads)) != len(heads)
        or any(
            isinstance(h, bool) or not isinstance(h, int) or not 0 <= h < num_heads for h in heads
        )
    ):
        raise ValueError(
            f"heads must be distinct indices in [0, {num_heads}) and not empty, got {heads!r}"
        )
    absent = [h for h in heads if h not in present]
    if absent:
        raise ValueError(f"heads {absent} are pruned; present heads: {list(present)}")
    return head_features(slots_of(present, heads), d_head, device)


class Block(nn.Module):
    """Pre-norm block: `x + attn(LN(x))`, then `x + mlp(LN(x))`."""

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        mlp_ratio: int,
        num_kv_heads: int | None = None,
        causal: bool = False,
        shared_query: bool = False,
    ) -> None:
        super().__init__()
        self.causal = causal
        self.ln_attn = nn.LayerNorm(d_model)
        self.attn = MultiHeadAttention(
            d_model, num_heads, num_kv_heads=num_kv_heads, shared_query=shared_query
        )
        self.ln_mlp = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, mlp_ratio * d_model),
            nn.GELU(),
            nn.Linear(mlp_ratio * d_model, d_model),
        )

    def forward(
        self, x: torch.Tensor, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        attended, weights = self.attn(
            self.ln_attn(x), need_weights=need_weights, is_causal=self.causal
        )  # (B, T, D)
        x = x + attended  # (B, T, D)
        return x + self.mlp(self.ln_mlp(x)), weights  # (B, T, D), (B, H, T, T) or None


class ToyTransformer(nn.Module):
    """Token embedding + learned positions + `num_layers` pre-norm blocks + a readout.

    `readout="token"` classifies every position (`(B, T, num_classes)`
    logits; tasks mark the positions without an answer with `-100`);
    `readout="mean"` mean-pools the positions first (`(B, num_classes)`).
    `init_scale` multiplies the attention projections' Xavier weights after
    initialisation (1.0 leaves them alone; chapter 7 studies larger values):
    by default the query, key and value weights of every head; `init_projections`
    and `init_heads` restrict it to some of them (`scale_attention_`).
    `num_kv_heads` shares key/value heads between query heads and `shared_query` one
    query projection between heads (chapter 9; `MultiHeadAttention`), `causal=True` lets
    position `t` see positions `0 … t` only; their defaults build the model of the
    earlier chapters unchanged.
    """

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        max_len: int,
        *,
        d_model: int = 32,
        num_heads: int = 1,
        num_layers: int = 1,
        mlp_ratio: int = 4,
        readout: str = "token",
        init_scale: float = 1.0,
        init_projections: tuple[str, ...] = PROJECTIONS,
        init_heads: tuple[int, ...] | None = None,
        num_kv_heads: int | None = None,
        causal: bool = False,
        shared_query: bool = False,
    ) -> None:
        super().__init__()
        if not isinstance(causal, bool):
            raise TypeError(f"causal must be a bool, got {causal!r}")
        for name, value in (
            ("vocab_size", vocab_size),
            ("num_classes", num_classes),
            ("max_len", max_len),
            ("d_model", d_model),
            ("num_heads", num_heads),
            ("num_layers", num_layers),
            ("mlp_ratio", mlp_ratio),
        ):
            check_positive_int(name, value)
        if readout not in READOUTS:
            raise ValueError(f"readout must be one of {READOUTS}, got {readout!r}")
        if not (isinstance(init_scale, int | float) and math.isfinite(init_scale)) or (
            init_scale <= 0
        ):
            raise ValueError(f"init_scale must be a positive finite number, got {init_scale!r}")
        _check_projections(init_projections)
        if d_model % num_heads == 0:
            _head_rows(init_heads, range(num_heads), num_heads, d_model // num_heads)
        self.vocab_size = vocab_size
        self.max_len = max_len
        self.readout = readout
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(
            Block(d_model, num_heads, mlp_ratio, num_kv_heads, causal, shared_query)
            for _ in range(num_layers)
        )
        self.ln_out = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, num_classes)
        if init_scale != 1.0:
            if tuple(init_projections) == PROJECTIONS and init_heads is None:
                # The original path, kept as it was: committed results were made with it.
                with torch.no_grad():
                    for block in self.blocks:
                        for proj in (block.attn.q_proj, block.attn.k_proj, block.attn.v_proj):
                            proj.weight.mul_(init_scale)
            else:
                for block in self.blocks:
                    scale_attention_(block.attn, init_scale, init_projections, init_heads)

    @property
    def attentions(self) -> list[MultiHeadAttention]:
        """The attention module of every layer, first layer first."""
        return [block.attn for block in self.blocks]

    def forward(
        self, tokens: torch.Tensor, need_weights: bool = False
    ) -> tuple[torch.Tensor, list[torch.Tensor] | None]:
        """Return `(logits, weights)`; `weights` is one `(B, H, T, T)` map per layer.

        With `need_weights=False` the fused attention kernel runs and
        `weights` is `None`.
        """
        check_tensor(tokens, "tokens")
        check_rank(tokens, 2, "tokens", "(batch, time)")
        if tokens.dtype != torch.long:
            raise TypeError(f"tokens must be a torch.long tensor, got dtype {tokens.dtype}")
        length = tokens.shape[1]
        if length > self.max_len:
            raise ValueError(f"tokens has length {length}, more than max_len={self.max_len}")
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= self.vocab_size):
            raise ValueError(f"tokens must lie in [0, {self.vocab_size}), got ids outside it")
        positions = torch.arange(length, device=tokens.device)  # (T,)
        x = self.tok_emb(tokens) + self.pos_emb(positions)  # (B, T, D)
        maps = []
        for block in self.blocks:
            x, weights = block(x, need_weights=need_weights)  # (B, T, D)
            maps.append(weights)
        x = self.ln_out(x)  # (B, T, D)
        if self.readout == "mean":
            x = x.mean(dim=1)  # (B, D)
        logits = self.head(x)  # (B, T, C) or (B, C)
        return logits, (maps if need_weights else None)

    @torch.no_grad()
    def attention_maps(self, tokens: torch.Tensor) -> torch.Tensor:
        """Every layer's per-head attention weights, `(L, B, H, T, T)`, in eval mode."""
        was_training = self.training
        self.eval()
        try:
            _, maps = self(tokens, need_weights=True)
        finally:
            self.train(was_training)
        return torch.stack(maps)  # (L, B, H, T, T)

    @torch.no_grad()
    def queries_keys(
        self, tokens: torch.Tensor, layer: int = 0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The per-head query and key vectors of one layer, each `(B, H, T, Dh)`.

        Chapter 4 compares the geometry of these learned vectors with that of
        random ones.
        """
        if isinstance(layer, bool) or not isinstance(layer, int):
            raise TypeError(f"layer must be an int, got {layer!r}")
        if not 0 <= layer < len(self.blocks):
            raise ValueError(f"layer must be in [0, {len(self.blocks)}), got {layer}")
        was_training = self.training
        self.eval()
        try:
            captured: dict[str, torch.Tensor] = {}
            block = self.blocks[layer]
            handle = block.ln_attn.register_forward_hook(
                lambda _m, _i, out: captured.__setitem__("x", out)
            )
            try:
                self(tokens)
            finally:
                handle.remove()
        finally:
            self.train(was_training)
        attn = block.attn
        q = attn.project_queries(captured["x"])  # (B, H, T, Dh)
        k = split_heads(attn.k_proj(captured["x"]), attn.num_kv_heads)  # (B, Hkv, T, Dh)
        if attn.num_kv_heads != attn.num_heads:  # shared keys: one copy per query head
            k = k[:, attn.kv_slot_of_heads()]  # (B, H, T, Dh)
        return q, k
