"""mha_lib: the multi-head attention that the book explains, measures and tests."""

from mha_lib.core.attention import scaled_dot_product_attention
from mha_lib.core.heads import merge_heads, split_heads
from mha_lib.core.multihead import MultiHeadAttention

__all__ = [
    "MultiHeadAttention",
    "merge_heads",
    "scaled_dot_product_attention",
    "split_heads",
]
