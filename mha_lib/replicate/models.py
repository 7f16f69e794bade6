"""What the report runs on: a hub name, a local folder, or a seeded random BERT (the control).

The report reads heads through `mha_lib.bert`, which edits transformers' BERT modules
directly, so a model is accepted only when its architecture has the parts those functions
touch; the check builds the architecture from its config on the `meta` device (no weights,
no memory) and names what is missing. Nothing is fetched unless a hub name is given, and
`HF_HUB_OFFLINE` is transformers' own switch, left to it. Remote code is never run.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from mha_lib.bert.loading import default_model_path, encoder_layers

# `random:NAME` shapes: (layers, heads, head width, feed-forward width). BERT-base's is
# Devlin et al.'s; any other shape is written `random:LxHxD` (e.g. `random:2x4x16`).
RANDOM_SHAPES = {"bert-base": (12, 12, 64, 3072), "bert-large": (24, 16, 64, 4096)}
RANDOM_PREFIX = "random:"
DEFAULT_SEED = 0
# Model types whose transformers modules have BERT's attention layout
# (encoder.layer[i].attention.self.{query,key,value}, attention.output.dense).
_BERT_PARTS = (
    "encoder.layer[i].attention.self.{query,key,value}",
    "encoder.layer[i].attention.output.dense",
)


class UnsupportedModelError(ValueError):
    """The model is not BERT-family: the report's measurements cannot reach its heads."""


@dataclass(frozen=True)
class Shape:
    """Layers, heads per layer and head width, read from the model's config."""

    layers: int
    heads: int
    d_head: int

    @property
    def total_heads(self) -> int:
        return self.layers * self.heads

    def __str__(self) -> str:
        return f"{self.layers} layers × {self.heads} heads × {self.d_head}"


@dataclass
class Loaded:
    """A model ready for the report: eval mode, eager attention, with its tokenizer."""

    model: nn.Module
    tokenizer: object
    name: str  # as the report names it
    shape: Shape
    random_init: bool


def shape_of(config: object) -> Shape:
    """The head layout from a config: nothing assumes MiniLM's 6 × 12 × 32."""
    layers = int(config.num_hidden_layers)
    heads = int(config.num_attention_heads)
    width = int(config.hidden_size)
    if width % heads:
        raise UnsupportedModelError(f"hidden_size {width} is not a multiple of {heads} heads")
    return Shape(layers, heads, width // heads)


def missing_parts(config: object) -> list[str]:
    """What the report needs and this architecture lacks ([] when it is BERT-family), read
    from the modules the config builds on the `meta` device, without weights."""
    from transformers import AutoModel

    needs = []
    for name in ("num_hidden_layers", "num_attention_heads", "hidden_size"):
        if not isinstance(getattr(config, name, None), int):
            needs.append(f"config.{name}")
    if needs:
        return needs
    try:
        with torch.device("meta"):
            skeleton = AutoModel.from_config(config)
    except (ValueError, KeyError) as err:  # a config transformers cannot build without remote code
        return [f"a model class transformers knows for model_type {config.model_type!r} ({err})"]
    try:
        encoder_layers(skeleton)
    except TypeError:
        return list(_BERT_PARTS)
    return []


def check_supported(config: object, source: str) -> None:
    """Refuse a non-BERT architecture with a message naming what is missing."""
    missing = missing_parts(config)
    if missing:
        kind = getattr(config, "model_type", "?")
        raise UnsupportedModelError(
            f"{source!r} (model_type {kind!r}) is not a BERT-family encoder: the report needs "
            f"{', '.join(missing)}; supported are models like bert, roberta, electra whose "
            "layers have BERT's attention modules"
        )


def random_config(spec: str) -> tuple[object, str]:
    """A BERT config of the shape `spec` names (`random:bert-base` or `random:LxHxD`),
    with MiniLM's vocabulary, and the report's name for it."""
    from transformers import BertConfig

    key = spec[len(RANDOM_PREFIX):]
    if key in RANDOM_SHAPES:
        layers, heads, d_head, ffn = RANDOM_SHAPES[key]
    else:
        match = re.fullmatch(r"(\d+)x(\d+)x(\d+)", key)
        if not match:
            raise ValueError(
                f"unknown random shape {key!r}: use one of {sorted(RANDOM_SHAPES)} or LxHxD, "
                "e.g. random:2x4x16"
            )
        layers, heads, d_head = (int(g) for g in match.groups())
        ffn = 4 * heads * d_head
    vocab = BertConfig.from_pretrained(default_model_path())
    config = BertConfig(
        vocab_size=vocab.vocab_size,
        hidden_size=heads * d_head,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=ffn,
        max_position_embeddings=vocab.max_position_embeddings,
        type_vocab_size=vocab.type_vocab_size,
        pad_token_id=vocab.pad_token_id,
    )
    return config, f"random BERT, {layers} × {heads} × {d_head} ({key})"


def load_model(
    spec: str | os.PathLike[str] | None,
    *,
    device: torch.device | str = "cpu",
    seed: int = DEFAULT_SEED,
    random_init: bool = False,
) -> Loaded:
    """The model the report measures: `None` (the packaged MiniLM), a local folder, a hub
    name (the only case that may download, and only if `HF_HUB_OFFLINE` allows), or
    `random:SHAPE`, a BERT of that shape initialised from `seed` with MiniLM's tokenizer.
    `random_init` keeps a named model's config and tokenizer and draws its weights afresh
    from `seed` (its own negative control; no weights are read)."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from mha_lib import bert

    if spec is not None and str(spec).startswith(RANDOM_PREFIX):
        config, name = random_config(str(spec))
        config._attn_implementation = "eager"
        torch.manual_seed(seed)
        model = AutoModel.from_config(config, attn_implementation="eager")
        tokenizer = AutoTokenizer.from_pretrained(default_model_path())
        model = model.to(device).eval()
        encoder_layers(model)
        return Loaded(model, tokenizer, f"{name}, seed {seed}", shape_of(config), True)
    source = default_model_path() if spec is None else spec
    if Path(source).expanduser().is_dir() and not (Path(source) / "config.json").is_file():
        raise UnsupportedModelError(f"{str(source)!r} has no config.json: not a model folder")
    config = AutoConfig.from_pretrained(source, trust_remote_code=False)
    check_supported(config, str(source))
    if random_init:
        torch.manual_seed(seed)
        model = AutoModel.from_config(config, attn_implementation="eager").to(device).eval()
        tokenizer = AutoTokenizer.from_pretrained(source)
        name = f"{'all-MiniLM-L6-v2' if spec is None else spec} with random weights, seed {seed}"
        return Loaded(model, tokenizer, name, shape_of(config), True)
    model, tokenizer = bert.load(source, device=device)
    for token in ("cls_token", "sep_token"):
        if getattr(tokenizer, token, None) is None:
            raise UnsupportedModelError(
                f"{str(source)!r}: its tokenizer has no {token}; the report reads heads' weight "
                "on the first and last special tokens"
            )
    name = "all-MiniLM-L6-v2 (packaged)" if spec is None else str(spec)
    return Loaded(model, tokenizer, name, shape_of(model.config), False)
