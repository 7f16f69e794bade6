"""mha_lib: the multi-head attention that the book explains, measures and tests."""

from mha_lib.attention import scaled_dot_product_attention
from mha_lib.heads import merge_heads, split_heads
from mha_lib.multihead import MultiHeadAttention

__all__ = [
    "MultiHeadAttention",
    "merge_heads",
    "scaled_dot_product_attention",
    "split_heads",
]
