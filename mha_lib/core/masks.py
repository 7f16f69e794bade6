"""The library's mask conventions, in one place, and the helpers that apply them.

**Attention masks** say which keys a query may see.

- A boolean `attn_mask` (and the `mask` of `scaled_dot_product_attention`) means
  **True = may attend**, as `torch.nn.functional.scaled_dot_product_attention` does.
- A boolean `key_padding_mask` `(B, Tk)` means **True = padding**, as
  `torch.nn.MultiheadAttention` does. The two polarities are opposite because torch's are;
  a `key_padding_mask` that marks *every* key of a sequence as padding is refused with an
  error, since that is what an inverted mask looks like.
- A float mask is added to the scores. `-inf` blocks a key, and so does any value at or
  below half of the dtype's most negative number: transformers fills masks with
  `torch.finfo(dtype).min`, which would otherwise leave a fully masked row uniform.
- A query that may attend to no key gets zero weights and a zero output, never NaN.

Inside the library the public masks are turned, once and here, into one mask named for what
True means: `allowed_keys` returns `allowed`, boolean **True = may attend** (the
padding mask enters it negated), or, when a float mask takes part, the additive form of the
same thing (`0` = may attend, `-inf` = blocked). Every helper below takes and returns
that form, so no code past this point handles a mask whose polarity it must guess.

**Head masks** scale a head's output before the output projection (its attention
weights are returned unscaled). They name heads by their **original** index, also after
pruning (entries of removed heads are ignored), and are batch-first:

- one layer (`mha_lib.MultiHeadAttention`): `(H,)` for the whole batch, `(B, H)` per
  example;
- a whole model (`mha_lib.bert.head_mask`, the `mha_lib.pruning` adapters): `(L, H)`
  for the whole batch, `(B, L, H)` per example.
"""

from __future__ import annotations

import torch

from mha_lib._checks import check_broadcastable, check_mask_dtype, check_tensor


def blocked_by(additive: torch.Tensor) -> torch.Tensor:
    """Boolean, True where an additive mask blocks a key: `-inf`, or `finfo.min`-filled."""
    return additive <= torch.finfo(additive.dtype).min / 2  # -inf included


def as_additive(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """An `allowed` mask (boolean True = may attend, or additive) as an additive one.

    Blocked keys become `-inf` (also `finfo.min`-filled ones), allowed keys `0` (a
    boolean mask) or their own value (an additive mask).
    """
    if allowed.dtype == torch.bool:
        return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill(
            ~allowed, float("-inf")
        )
    return allowed.masked_fill(blocked_by(allowed), float("-inf"))


def allowed_keys(
    attn_mask: torch.Tensor | None,
    key_padding_mask: torch.Tensor | None,
    scores_shape: tuple[int, int, int, int],
    like: torch.Tensor,
) -> torch.Tensor | None:
    """The keys each query may attend to, from the two public masks: `allowed` or None.

    `attn_mask` (boolean True = may attend, or additive) and `key_padding_mask`
    (boolean True = padding, or additive) are checked, the padding negated, and both
    combined into one mask broadcastable to `scores_shape` `(B, H, Tq, Tk)`: boolean
    True = may attend when both are boolean, additive otherwise. `like` is a tensor with
    the scores' dtype and device (e.g. the query).
    """
    allowed = []
    if attn_mask is not None:
        check_mask_dtype(attn_mask, "attn_mask", like)
        check_broadcastable(attn_mask, scores_shape, "attn_mask")
        allowed.append(attn_mask)  # already True = may attend (or additive)
    if key_padding_mask is not None:
        allowed.append(_not_padding(key_padding_mask, scores_shape, like))
    if not allowed:
        return None
    if all(m.dtype == torch.bool for m in allowed):
        combined = allowed[0]
        for m in allowed[1:]:
            combined = combined & m
        return combined
    additive = [as_additive(m, like.dtype) for m in allowed]
    return additive[0] if len(additive) == 1 else additive[0] + additive[1]


def _not_padding(
    key_padding_mask: torch.Tensor, scores_shape: tuple[int, int, int, int], like: torch.Tensor
) -> torch.Tensor:
    """`key_padding_mask` (True = padding) as an allowed mask `(B, 1, 1, Tk)`."""
    check_tensor(key_padding_mask, "key_padding_mask")
    check_mask_dtype(key_padding_mask, "key_padding_mask", like)
    batch, _, _, k_len = scores_shape
    if tuple(key_padding_mask.shape) != (batch, k_len):
        raise ValueError(
            f"key_padding_mask must have shape (batch, Tk) = ({batch}, {k_len}), "
            f"got {tuple(key_padding_mask.shape)}"
        )
    is_padding = (
        key_padding_mask if key_padding_mask.dtype == torch.bool else blocked_by(key_padding_mask)
    )  # (B, Tk)
    all_padding = is_padding.all(dim=-1)  # (B,)
    if bool(all_padding.any()):
        rows = all_padding.nonzero().flatten().tolist()
        raise ValueError(
            f"key_padding_mask marks every key of sequence(s) {rows} as padding. Here "
            "True (or -inf) means padding, as in torch.nn.MultiheadAttention, the "
            "opposite of attn_mask (True = may attend): is the mask inverted?"
        )
    padding = key_padding_mask[:, None, None, :]  # (B, 1, 1, Tk)
    return ~padding if padding.dtype == torch.bool else padding  # an additive one stays


def only_causal(
    allowed: torch.Tensor | None, q_len: int, k_len: int, device: torch.device
) -> torch.Tensor:
    """`allowed` further restricted to keys `0 … i` for query `i` (True = may attend).

    Built explicitly for the paths that cannot pass the fused kernel's `is_causal` flag
    (a mask or the weights are needed as well), on `device` (the scores').
    """
    causal = torch.ones(q_len, k_len, dtype=torch.bool, device=device).tril()  # (Tq, Tk)
    if allowed is None:
        return causal
    if allowed.dtype == torch.bool:
        return allowed & causal
    return allowed.masked_fill(~causal, float("-inf"))


def attends_nowhere(allowed: torch.Tensor) -> torch.Tensor:
    """True for query rows whose `allowed` mask lets them attend to no key `(..., Tq, 1)`."""
    if allowed.dtype == torch.bool:
        return ~allowed.any(dim=-1, keepdim=True)
    return blocked_by(allowed).all(dim=-1, keepdim=True)
