"""Position information: the one thing self-attention cannot work out for itself.

Self-attention treats its input as a set: permute the tokens and the outputs are
permuted the same way, nothing else changes. Order has to be added to the input; the fixed
sinusoidal codes are one way (a pretrained BERT's learned ones are switched off by
`mha_lib.bert.without_position_embeddings`).
"""

from __future__ import annotations

import math

import torch

from mha_lib._checks import check_positive_int


def sinusoidal_positions(length: int, d_model: int) -> torch.Tensor:
    """The fixed encodings of Vaswani et al. (2017): `(length, d_model)`.

    `PE[p, 2i] = sin(p / 10000^(2i/d))` and `PE[p, 2i+1] = cos(…)`: each pair of
    features is a clock running at its own frequency, so every position gets a
    distinct code and nearby positions get similar ones.
    """
    check_positive_int("length", length)
    check_positive_int("d_model", d_model)
    if d_model % 2:
        raise ValueError(f"d_model must be even (sine/cosine pairs), got {d_model}")
    position = torch.arange(length, dtype=torch.float64)[:, None]  # (T, 1)
    frequency = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2) / d_model)  # (D/2,)
    angles = position * frequency  # (T, D/2)
    pe = torch.empty(length, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe.float()
