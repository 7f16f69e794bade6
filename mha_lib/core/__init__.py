"""The layer itself: scaled dot-product attention, heads as reshapes, `MultiHeadAttention`.

Everything the book's claims rest on, proven equal to torch
(`tests/unit/test_attention_parity.py`):

- `teaching`: the same computation in the few lines that are the idea,
  without checks, masks or fast path (what a page shows first);
- `attention`: `scaled_dot_product_attention`, every step explicit;
- `heads`: `split_heads` and `merge_heads`, two reshapes;
- `multihead`: `MultiHeadAttention` (explicit and fused paths,
  head masks, pruning);
- `masks`: the one mask convention, and the helpers that apply it;
- `head_removal`: the one set of rules for pruning heads, wherever it
  happens, and the weight slicing it shares;
- `head_hooks`: `heads_scaled`, head masks
  injected into a model's attention modules from outside;
- `positions`: `sinusoidal_positions`, the fixed position codes;
- `reference`: the slow, obvious versions benchmarks compare against.
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
