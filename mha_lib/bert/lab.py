"""The live lab's model: MiniLM with a head mask as input, every map and the sentence embedding out.

The book's lab page (`book/lab.md`) runs this very module in the reader's browser: the
build exports `LabStages` to ONNX, one model per layer (`scripts/export_lab_model.py`),
and the page feeds it a sentence and a `(layers, heads)` mask. The head mask goes through
`mha_lib.bert.head_mask`, the library's own path, so the browser, the chapters and the
tests switch a head off the same way. The returned maps follow the library's convention: a
removed head's map is its softmax as computed (where it *would* look), only its output is
zeroed (transformers 4 returned zeros instead; the outputs are the same either way).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from mha_lib._checks import check_floating
from mha_lib.bert.loading import default_model_path, encoder_layers, num_heads, require_eager
from mha_lib.bert.surgery import head_mask


def max_tokens(model_dir: Path | None = None) -> int:
    """How many word pieces the lab reads: as many as sentence-transformers gives the model.

    all-MiniLM-L6-v2 has 512 positions, but sentence-transformers cuts its input at the
    `max_seq_length` of `sentence_bert_config.json` (256; the model was trained on 128), so
    a longer text gets an embedding it was never trained for. The lab cuts where the model's
    own users do, which also keeps a long text's update quick in a browser.
    """
    folder = default_model_path() if model_dir is None else Path(model_dir)
    config = json.loads((folder / "config.json").read_text())
    positions = int(config["max_position_embeddings"])
    settings = folder / "sentence_bert_config.json"
    if not settings.is_file():
        return positions
    length = json.loads(settings.read_text()).get("max_seq_length")
    if not isinstance(length, int) or isinstance(length, bool) or length < 2:
        raise ValueError(f"{settings}: max_seq_length must be an integer >= 2, got {length!r}")
    return min(length, positions)


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """`(B, T, D), (B, T) → (B, D)`: the mean over real tokens (sentence-transformers' pooling).

    all-MiniLM-L6-v2's sentence embedding is this mean, then L2-normalised; cosine
    similarity needs no normalisation, so the lab returns the plain mean.
    """
    check_floating(hidden, "hidden")
    if hidden.dim() != 3 or tuple(attention_mask.shape) != tuple(hidden.shape[:2]):
        raise ValueError(
            f"hidden must be (B, T, D) and attention_mask (B, T), got {tuple(hidden.shape)} "
            f"and {tuple(attention_mask.shape)}"
        )
    weight = attention_mask.to(hidden.dtype).unsqueeze(-1)  # (B, T, 1)
    return (hidden * weight).sum(1) / weight.sum(1).clamp_min(1e-9)


class LabModel(nn.Module):
    """`(input_ids (1, T), attention_mask (1, T), head_mask (L, H))` → `(maps, embedding)`.

    `maps` is `(L, H, T, T)`, every layer's attention probabilities; `embedding`
    `(1, D)`, the mean-pooled last hidden state.

    One sentence at a time (the page's batch is one reader). `head_mask` multiplies
    each head's output (1 keeps, 0 removes; values in between scale it) through
    `mha_lib.bert.head_mask`.
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        require_eager(model)
        self.model = model
        self.num_layers = len(encoder_layers(model))
        self.num_heads = num_heads(model)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        with head_mask(self.model, mask):
            out = self.model(
                input_ids=input_ids, attention_mask=attention_mask, output_attentions=True
            )
        maps = torch.stack(out.attentions, dim=1)[0]  # (L, H, T, T)
        return maps, mean_pool(out.last_hidden_state, attention_mask)



class LabStages(LabModel):
    """`LabModel` with every layer's map and hidden state as outputs of their own, for a batch.

    The export cuts this graph into one stage per layer (`stages`), so that the page can run
    a text again from the first layer whose heads changed: the layers below it see the same
    input under the same mask, so their numbers are the ones it already has. A batch of texts
    padded to one length (attention mask 0 on the padding) runs as one: the page's candidate
    sentences take one run of each layer together. Each layer's maps are `(B, H, T, T)`, the
    embedding `(B, D)`.
    """

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        with head_mask(self.model, mask):
            out = self.model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                output_attentions=True,
                output_hidden_states=True,
            )
        maps = list(out.attentions)  # L × (B, H, T, T)
        embedding = mean_pool(out.last_hidden_state, attention_mask)
        return (*maps, *out.hidden_states, embedding)

    def output_names(self) -> list[str]:
        """The names of `forward`'s outputs, in order."""
        layers = range(self.num_layers)
        hidden = [f"hidden_{i}" for i in range(self.num_layers + 1)]
        return [f"maps_{i}" for i in layers] + hidden + ["sentence_embedding"]

    def stages(self) -> list[tuple[list[str], list[str]]]:
        """Each stage's (inputs, outputs): stage `i` runs layer `i` (stage 0 the embeddings
        too) and hands `hidden_{i+1}` to the next; the last gives the sentence embedding."""
        inputs = ["input_ids", "attention_mask", "head_mask"]
        last = self.num_layers - 1
        return [
            (
                inputs + ([f"hidden_{i}"] if i > 0 else []),
                [f"maps_{i}", "sentence_embedding" if i == last else f"hidden_{i + 1}"],
            )
            for i in range(self.num_layers)
        ]

def lab_outputs(
    model: nn.Module, tokenizer: object, text: str, mask: torch.Tensor | None = None
) -> tuple[list[str], torch.Tensor, torch.Tensor]:
    """The lab's answer in Python: `(tokens, maps (L, H, T, T), embedding (D,))` for `text`.

    The reference the browser test compares the page with; truncated to `max_tokens()`
    word pieces as the page truncates.
    """
    lab = LabModel(model)
    if mask is None:
        mask = torch.ones(lab.num_layers, lab.num_heads)
    enc = tokenizer(
        text, truncation=True, max_length=max_tokens(), return_tensors="pt"
    )
    with torch.inference_mode():
        maps, embedding = lab(enc["input_ids"], enc["attention_mask"], mask.float())
    tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())
    return tokens, maps.float(), embedding[0].float()
