"""The layer itself: scaled dot-product attention, heads as reshapes, `MultiHeadAttention`.

Everything the book's claims rest on, proven equal to torch (``tests/test_attention_parity.py``);
:mod:`~mha_lib.core.masks` holds the one mask convention, :mod:`~mha_lib.core.positions` the
sinusoidal codes, and :mod:`~mha_lib.core.reference` the slow, obvious versions benchmarks
compare against.
"""
