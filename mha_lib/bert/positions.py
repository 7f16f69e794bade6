"""A pretrained BERT without its learned positions: what the model sees of a set of words.

Chapter 8 shows that self-attention alone cannot tell "dog bites man" from "man bites
dog"; in a pretrained model the positions come from a learned table, which this switches
off for a while.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn


@contextlib.contextmanager
def without_position_embeddings(model: nn.Module) -> Iterator[nn.Module]:
    """Temporarily zero a BERT-family model's learned position embeddings.

    Inside the block the model sees only which tokens are present, not where;
    the weights are restored on exit, even after an exception.
    """
    embeddings = getattr(getattr(model, "embeddings", None), "position_embeddings", None)
    if not isinstance(embeddings, nn.Embedding):
        raise TypeError(
            "model must have embeddings.position_embeddings (a BERT-family model), "
            f"got {type(model).__name__}"
        )
    saved = embeddings.weight.detach().clone()
    with torch.no_grad():
        embeddings.weight.zero_()
    try:
        yield model
    finally:
        with torch.no_grad():
            embeddings.weight.copy_(saved)
