"""Attention maps of a BERT-family model: per sentence, in batches, and merged into words."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from mha_lib._checks import check_floating, check_positive_int
from mha_lib.bert.loading import encoder_layers, require_eager
from mha_lib.bert.norms import norm_weighted as _norm_weighted
from mha_lib.bert.norms import transformed_values
from mha_lib.bert.surgery import heads_per_layer


def attention_maps(
    model: nn.Module,
    tokenizer: object,
    text: str | Sequence[str],
    *,
    words: bool = False,
    norm_weighted: bool = False,
) -> tuple[list[str], torch.Tensor]:
    """Return `(tokens, maps (L, H, T, T))` for one sentence.

    `text` is a string, or a list of words (already split, e.g. with gold
    syntax). With `words=True` the maps are word-level (see
    `to_word_level`) and the labels are words plus `[CLS]`/`[SEP]`.
    With `norm_weighted=True` each weight is multiplied by the norm of what its
    key moves, rows renormalised (see `mha_lib.bert.norms`).
    """
    if isinstance(text, str):
        batch: list[str] | list[list[str]] = [text]
    else:
        batch = [_check_words(text, "text")]
    return batch_attention_maps(
        model, tokenizer, batch, words=words, norm_weighted=norm_weighted
    )[0]


def batch_attention_maps(
    model: nn.Module,
    tokenizer: object,
    texts: Sequence[str] | Sequence[Sequence[str]],
    *,
    words: bool = False,
    batch_size: int = 32,
    norm_weighted: bool = False,
) -> list[tuple[list[str], torch.Tensor]]:
    """Attention maps for many sentences, padded in batches, each trimmed back to its length.

    Sentences are sorted by length so that a batch carries little padding;
    results come back in input order, one `(tokens, maps (L, H, T, T))` per
    sentence, with no row or column for padding. `norm_weighted=True` gives
    `alpha_ij * ||f(x_j)||` with rows renormalised (Kobayashi et al. 2020).
    """
    if isinstance(texts, str) or not isinstance(texts, Sequence) or not texts:
        raise TypeError("texts must be a non-empty list of strings or of word lists")
    split = not isinstance(texts[0], str)
    if split:
        texts = [_check_words(t, f"texts[{i}]") for i, t in enumerate(texts)]
    elif not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be all strings or all word lists, not a mixture")
    check_positive_int("batch_size", batch_size)
    require_eager(model)
    if len(set(heads_per_layer(model))) != 1:
        raise ValueError(
            f"model has {heads_per_layer(model)} heads per layer after pruning; the maps of "
            "all layers must share one head count to stack into (L, H, T, T)"
        )
    lengths = [len(t) if split else len(t.split()) for t in texts]
    order = sorted(range(len(texts)), key=lambda i: lengths[i])
    results: list[tuple[list[str], torch.Tensor] | None] = [None] * len(texts)
    device = next(model.parameters()).device
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        enc = tokenizer(
            [texts[i] for i in chunk],
            is_split_into_words=split,
            padding=True,
            return_tensors="pt",
        )
        with torch.inference_mode():
            out = model(
                **enc.to(device), output_attentions=True, output_hidden_states=norm_weighted
            )
            attn = torch.stack(out.attentions, dim=1).float()  # (B, L, H, T, T)
            if norm_weighted:
                norms = torch.stack(  # (B, L, H, T): what each key moves, per head
                    [
                        transformed_values(layer, x).norm(dim=-1)
                        for layer, x in zip(encoder_layers(model), out.hidden_states, strict=False)
                    ],
                    dim=1,
                ).float()
                attn = _norm_weighted(attn, norms)
        attn = attn.cpu()
        for b, i in enumerate(chunk):
            keep = enc["attention_mask"][b].bool().nonzero().squeeze(1).cpu()  # (n,)
            maps = attn[b].index_select(-1, keep).index_select(-2, keep)  # (L, H, n, n)
            pieces = tokenizer.convert_ids_to_tokens(enc["input_ids"][b][keep].tolist())
            if words:
                word_ids = [enc.word_ids(b)[k] for k in keep.tolist()]
                groups, labels = _word_groups(pieces, word_ids)
                results[i] = (labels, to_word_level(maps, groups))
            else:
                results[i] = (pieces, maps)
    return results  # type: ignore[return-value]



def word_level_maps(
    model: nn.Module,
    tokenizer: object,
    word_lists: Sequence[Sequence[str]],
    *,
    moved: bool = False,
) -> list[torch.Tensor]:
    """Each sentence's maps `(L, H, W + 2, W + 2)` with word pieces merged into words, as
    dependency arcs and coreference join words ([CLS] and [SEP] are words of their own);
    with `moved=True`, what the heads move (norm-weighted maps, `mha_lib.bert.norms`)."""
    pairs = batch_attention_maps(model, tokenizer, word_lists, words=True, norm_weighted=moved)
    return [maps for _, maps in pairs]

def to_word_level(maps: torch.Tensor, groups: Sequence[int]) -> torch.Tensor:
    """`(..., T, T) → (..., W, W)`: merge word pieces into words (Clark et al. 2019).

    Attention *to* a split word is the sum over its pieces (the mass it gets);
    attention *from* it is the mean over its pieces' rows (one distribution),
    so every row still sums to 1. `groups[t]` is the word index of token `t`
    (0 … W−1, non-decreasing is not required).
    """
    check_floating(maps, "maps")
    if maps.dim() < 2 or maps.shape[-1] != maps.shape[-2]:
        raise ValueError(f"maps must have shape (..., T, T), got {tuple(maps.shape)}")
    g = torch.as_tensor(list(groups), dtype=torch.long, device=maps.device)
    if g.dim() != 1 or len(g) != maps.shape[-1]:
        raise ValueError(
            f"groups must list one word index per token ({maps.shape[-1]}), got {len(g)}"
        )
    n_words = int(g.max()) + 1
    if int(g.min()) < 0 or len(torch.unique(g)) != n_words:
        raise ValueError("groups must use every word index 0 … W−1 at least once")
    one_hot = nn.functional.one_hot(g, n_words).to(maps.dtype)  # (T, W)
    to_words = maps @ one_hot  # (..., T, W): summed over each word's pieces
    mean_rows = one_hot / one_hot.sum(0, keepdim=True)  # (T, W), columns sum to 1
    return mean_rows.transpose(0, 1) @ to_words  # (..., W, W)


def word_groups(tokenizer: object, words: Sequence[str]) -> tuple[list[int], list[str]]:
    """For a pre-split sentence: the word index of every token, and the word labels.

    Pass the result to `to_word_level` with the token-level maps of the
    same word list, to get word-level maps without running the model again.
    Special tokens ([CLS], [SEP]) are words of their own.
    """
    words = _check_words(words, "words")
    enc = tokenizer(words, is_split_into_words=True)
    pieces = tokenizer.convert_ids_to_tokens(enc["input_ids"])
    return _word_groups(pieces, enc.word_ids())


def _word_groups(pieces: list[str], word_ids: list[int | None]) -> tuple[list[int], list[str]]:
    """Word index per token (special tokens are words of their own) and word labels."""
    groups: list[int] = []
    labels: list[str] = []
    previous: int | None = None
    for piece, wid in zip(pieces, word_ids, strict=True):
        if wid is None or wid != previous:
            labels.append(piece)
            groups.append(len(labels) - 1)
        else:
            labels[-1] += piece.removeprefix("##")
            groups.append(len(labels) - 1)
        previous = wid
    return groups, labels


def _check_words(words: object, name: str) -> list[str]:
    if isinstance(words, str) or not isinstance(words, Sequence) or not words:
        raise TypeError(f"{name} must be a string or a non-empty list of words")
    if not all(isinstance(w, str) and w and not w.isspace() for w in words):
        raise TypeError(f"{name} must contain only non-empty strings")
    return list(words)
