"""Which heads can go? Michel et al. (2019) importance, progressive pruning, and what it saves.

Every function here works on a *head adapter*: a small object that can mask a
model's heads with an `(L, H)` float mask, remove heads physically (given in
the original numbering), and compute a differentiable loss on one batch and a
metric on a list of batches. Two adapters cover the book: `MHAHeads` for
any model built from `mha_lib.MultiHeadAttention` modules (the toy transformer
of chapter 4) and `BertHeads` for a BERT-family transformers model.

- `head_importance`: `I_h = E_x |∂L/∂ξ_h|` for a head mask `ξ` of ones,
  one forward and backward pass per batch, normalised per layer by its l2 norm
  (Michel et al. 2019, section 4).
- `ablation_scores`: the loss change when one head alone is masked, the
  slow quantity that the gradient is a first-order proxy for.
- `pruning_curve`: prune `step` heads, re-score, repeat; by importance,
  in reverse, or at random. A layer always keeps one head: pruning never empties a layer
  (the rules are `mha_lib.core.head_removal`'s, shared with the models' own pruning).
- `one_head_per_layer`: keep one head in one layer, all others intact.
- `even_plan`: the same share of heads from every layer, for latency; what
  removal saves is measured by `mha_lib.analysis.cost`.

The package is split by job: `adapters`, `scores`
and `curves`; everything is importable from `mha_lib.pruning`.
"""

from mha_lib.pruning.adapters import BertHeads, HeadAdapter, MHAHeads
from mha_lib.pruning.curves import (
    ORDERS,
    PruningCurve,
    best_single_heads,
    core_heads,
    even_plan,
    heads_within,
    one_head_per_layer,
    prunable_count,
    pruning_curve,
    select_heads,
    survival_rank,
)
from mha_lib.pruning.scores import (
    ablation_effects,
    ablation_scores,
    head_importance,
    mean_loss,
    spearman,
)

__all__ = [
    "ORDERS",
    "ablation_effects",
    "BertHeads",
    "HeadAdapter",
    "MHAHeads",
    "PruningCurve",
    "ablation_scores",
    "best_single_heads",
    "core_heads",
    "even_plan",
    "head_importance",
    "heads_within",
    "mean_loss",
    "one_head_per_layer",
    "prunable_count",
    "pruning_curve",
    "select_heads",
    "spearman",
    "survival_rank",
]
