"""The library's mask conventions, in one place, and the helpers that apply them.

**Attention masks** say which keys a query may see.

- A boolean ``attn_mask`` (and the ``mask`` of `scaled_dot_product_attention`) means
  **True = may attend**, as `torch.nn.functional.scaled_dot_product_attention` does.
- A boolean ``key_padding_mask`` ``(B, Tk)`` means **True = padding**, as
  `torch.nn.MultiheadAttention` does. The two polarities are opposite because torch's are;
  a ``key_padding_mask`` that marks *every* key of a sequence as padding is refused with an
  error, since that is what an inverted mask looks like.
- A float mask is added to the scores. ``-inf`` blocks a key, and so does any value at or
  below half of the dtype's most negative number: transformers fills masks with
  ``torch.finfo(dtype).min``, which would otherwise leave a fully masked row uniform.
- A query that may attend to no key gets zero weights and a zero output, never NaN.

**Head masks** scale a head's output before the output projection (its attention
weights are returned unscaled). They name heads by their **original** index, also after
pruning (entries of removed heads are ignored), and are batch-first:

- one layer (`mha_lib.MultiHeadAttention`): ``(H,)`` for the whole batch, ``(B, H)`` per
  example;
- a whole model (`mha_lib.bert.head_mask`, the `mha_lib.pruning` adapters): ``(L, H)``
  for the whole batch, ``(B, L, H)`` per example.
"""

from __future__ import annotations

import torch

from mha_lib._checks import check_broadcastable, check_mask_dtype, check_tensor


def blocked_keys(mask: torch.Tensor) -> torch.Tensor:
    """Boolean: True where a float mask blocks a key (``-inf``, or ``finfo.min``-filled)."""
    return mask <= torch.finfo(mask.dtype).min / 2  # -inf included


def as_additive(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A boolean (True = may attend) or float mask as an additive one, blocked keys = ``-inf``."""
    if mask.dtype == torch.bool:
        return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(
            ~mask, float("-inf")
        )
    return mask.masked_fill(blocked_keys(mask), float("-inf"))


def combine_masks(
    attn_mask: torch.Tensor | None,
    key_padding_mask: torch.Tensor | None,
    scores_shape: tuple[int, int, int, int],
    like: torch.Tensor,
) -> torch.Tensor | None:
    """One mask broadcastable to ``(B, H, Tq, Tk)``: boolean (True = may attend) or additive.

    ``like`` is a tensor with the scores' dtype and device (e.g. the query).
    """
    masks = []
    if attn_mask is not None:
        check_mask_dtype(attn_mask, "attn_mask", like)
        check_broadcastable(attn_mask, scores_shape, "attn_mask")
        masks.append(attn_mask)
    if key_padding_mask is not None:
        check_tensor(key_padding_mask, "key_padding_mask")
        check_mask_dtype(key_padding_mask, "key_padding_mask", like)
        batch, _, _, k_len = scores_shape
        if tuple(key_padding_mask.shape) != (batch, k_len):
            raise ValueError(
                f"key_padding_mask must have shape (batch, Tk) = ({batch}, {k_len}), "
                f"got {tuple(key_padding_mask.shape)}"
            )
        padded = (
            key_padding_mask
            if key_padding_mask.dtype == torch.bool
            else blocked_keys(key_padding_mask)
        )  # (B, Tk)
        everything = padded.all(dim=-1)  # (B,)
        if bool(everything.any()):
            rows = everything.nonzero().flatten().tolist()
            raise ValueError(
                f"key_padding_mask marks every key of sequence(s) {rows} as padding. Here "
                "True (or -inf) means padding, as in torch.nn.MultiheadAttention, the "
                "opposite of attn_mask (True = may attend): is the mask inverted?"
            )
        padding = key_padding_mask[:, None, None, :]  # (B, 1, 1, Tk)
        masks.append(~padding if padding.dtype == torch.bool else padding)
    if not masks:
        return None
    if all(m.dtype == torch.bool for m in masks):
        combined = masks[0]
        for m in masks[1:]:
            combined = combined & m
        return combined
    additive = [as_additive(m, like.dtype) for m in masks]
    return additive[0] if len(additive) == 1 else additive[0] + additive[1]


def and_masks(mask: torch.Tensor | None, causal: torch.Tensor) -> torch.Tensor:
    """Add the causal constraint to a boolean (True = may attend) or additive mask."""
    if mask is None:
        return causal
    if mask.dtype == torch.bool:
        return mask & causal
    return mask.masked_fill(~causal, float("-inf"))


def blocked_rows(mask: torch.Tensor) -> torch.Tensor:
    """True for query rows whose mask lets them attend to no key."""
    if mask.dtype == torch.bool:
        return ~mask.any(dim=-1, keepdim=True)
    return blocked_keys(mask).all(dim=-1, keepdim=True)
