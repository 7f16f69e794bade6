"""The layer itself: scaled dot-product attention, heads as reshapes, `MultiHeadAttention`.

Everything the book's claims rest on, proven equal to torch
(``tests/unit/test_attention_parity.py``):

- :mod:`~mha_lib.core.teaching`: the same computation in the few lines that are the idea,
  without checks, masks or fast path (what a page shows first);
- :mod:`~mha_lib.core.attention`: :func:`scaled_dot_product_attention`, every step explicit;
- :mod:`~mha_lib.core.heads`: :func:`split_heads` and :func:`merge_heads`, two reshapes;
- :mod:`~mha_lib.core.multihead`: :class:`MultiHeadAttention` (explicit and fused paths,
  head masks, pruning);
- :mod:`~mha_lib.core.masks`: the one mask convention, and the helpers that apply it;
- :mod:`~mha_lib.core.head_removal`: the one set of rules for pruning heads, wherever it
  happens, and the weight slicing it shares;
- :mod:`~mha_lib.core.head_hooks`: :func:`~mha_lib.core.head_hooks.heads_scaled`, head masks
  injected into a model's attention modules from outside;
- :mod:`~mha_lib.core.positions`: :func:`sinusoidal_positions`, the fixed position codes;
- :mod:`~mha_lib.core.reference`: the slow, obvious versions benchmarks compare against.
"""

from mha_lib.core.attention import scaled_dot_product_attention
from mha_lib.core.heads import merge_heads, split_heads
from mha_lib.core.multihead import MultiHeadAttention
from mha_lib.core.positions import sinusoidal_positions

__all__ = [
    "MultiHeadAttention",
    "merge_heads",
    "scaled_dot_product_attention",
    "sinusoidal_positions",
    "split_heads",
]
