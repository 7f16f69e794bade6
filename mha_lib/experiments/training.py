"""A seeded, deterministic training loop for the toy transformer on the synthetic tasks.

Chapter 4 compares head counts by their *learning curves* over several seeds,
not by one final number, so the loop records held-out accuracy along the way.
One call, :func:`run_experiment`, builds the task and the model from a
:class:`Config` and a seed and trains it; the sweep script, the notebook and
the tests all go through it, so a cached result can be reproduced exactly.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from mha_lib.analysis.cost import parameter_count
from mha_lib.experiments.tasks import IGNORE, KeyValueRecall, Lookback
from mha_lib.experiments.toy_transformer import ToyTransformer

# Held-out batches come from a generator seeded far from the training seed,
# so the two streams never share a state.
EVAL_SEED_OFFSET = 1_000_003


@dataclass(frozen=True)
class Config:
    """Everything that defines one training run except the seed."""

    task: str = "pair_recall"
    task_args: dict[str, int] = field(default_factory=dict)
    d_model: int = 32
    num_heads: int = 1
    num_layers: int = 1
    mlp_ratio: int = 4
    init_scale: float = 1.0
    steps: int = 1000
    batch_size: int = 64
    lr: float = 3e-3
    weight_decay: float = 0.01
    warmup: int = 50
    eval_every: int = 100
    eval_size: int = 512

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class TrainResult:
    """Learning curve and final held-out accuracy of one run."""

    steps: list[int]
    eval_loss: list[float]
    eval_accuracy: list[float]
    final_accuracy: float
    num_parameters: int

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def make_task(name: str, **task_args: int) -> Lookback | KeyValueRecall:
    """Build a task of :mod:`mha_lib.experiments.tasks` by name."""
    from mha_lib.experiments import tasks

    makers = {
        "lookback": tasks.lookback,
        "associative_recall": tasks.associative_recall,
        "pair_recall": tasks.pair_recall,
    }
    if name not in makers:
        raise ValueError(f"task must be one of {sorted(makers)}, got {name!r}")
    return makers[name](**task_args)


def build_model(config: Config, task: Lookback | KeyValueRecall, seed: int) -> ToyTransformer:
    """The config's model for ``task``, initialised from ``seed`` (global RNG left untouched)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return ToyTransformer(
            task.vocab_size,
            task.num_classes,
            task.seq_len,
            d_model=config.d_model,
            num_heads=config.num_heads,
            num_layers=config.num_layers,
            mlp_ratio=config.mlp_ratio,
            init_scale=config.init_scale,
        )


@torch.no_grad()
def evaluate(
    model: ToyTransformer, inputs: torch.Tensor, targets: torch.Tensor
) -> tuple[float, float]:
    """``(loss, accuracy)`` over the answered positions (target ≠ -100), in eval mode."""
    answered = targets != IGNORE  # (B, T)
    if not answered.any():
        raise ValueError("targets has no answered position (all are -100)")
    was_training = model.training
    model.eval()
    try:
        logits, _ = model(inputs)  # (B, T, C)
    finally:
        model.train(was_training)
    loss = F.cross_entropy(logits[answered], targets[answered]).item()
    correct = logits.argmax(-1)[answered] == targets[answered]
    return loss, correct.float().mean().item()


def train(
    model: ToyTransformer,
    task: Lookback | KeyValueRecall,
    config: Config,
    seed: int,
    *,
    progress: bool | None = None,
) -> TrainResult:
    """Train ``model`` with AdamW on fresh batches of ``task``; record a learning curve.

    Batches are drawn from a generator seeded with ``seed``; the held-out
    set (``config.eval_size`` sequences) from one seeded with
    ``seed + EVAL_SEED_OFFSET``. The learning rate warms up linearly for
    ``config.warmup`` steps, then follows a cosine to zero. With the same seed
    and thread count, two runs on the same CPU and torch build are bit-identical;
    on another CPU the last bits differ, and a long run can amplify them.
    ``progress=None`` shows a tqdm bar unless ``TQDM_DISABLE`` is set now (the
    book's ``setup()`` sets it; tqdm itself only reads it at import).
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {seed!r}")
    if config.steps < 1 or config.eval_every < 1:
        raise ValueError(
            f"steps and eval_every must be positive, got {config.steps}, {config.eval_every}"
        )
    if progress is None:
        progress = os.environ.get("TQDM_DISABLE", "").lower() not in ("1", "true", "yes")
    data = torch.Generator().manual_seed(seed)
    eval_inputs, eval_targets = task.sample(
        config.eval_size, torch.Generator().manual_seed(seed + EVAL_SEED_OFFSET)
    )
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: _lr_factor(step, config.warmup, config.steps)
    )
    loss0, acc0 = evaluate(model, eval_inputs, eval_targets)
    steps, losses, accuracies = [0], [loss0], [acc0]
    model.train()
    for step in tqdm(range(1, config.steps + 1), disable=not progress, desc=task.name):
        inputs, targets = task.sample(config.batch_size, data)  # (B, T), (B, T)
        logits, _ = model(inputs)  # (B, T, C)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step % config.eval_every == 0 or step == config.steps:
            eval_loss, eval_acc = evaluate(model, eval_inputs, eval_targets)
            steps.append(step)
            losses.append(eval_loss)
            accuracies.append(eval_acc)
    return TrainResult(
        steps=steps,
        eval_loss=losses,
        eval_accuracy=accuracies,
        final_accuracy=accuracies[-1],
        num_parameters=parameter_count(model),
    )


def run_experiment(
    config: Config, seed: int, *, progress: bool | None = None
) -> tuple[ToyTransformer, TrainResult]:
    """Build the task and model of ``config`` from ``seed``, train, return both."""
    task = make_task(config.task, **config.task_args)
    model = build_model(config, task, seed)
    return model, train(model, task, config, seed, progress=progress)


def _lr_factor(step: int, warmup: int, total: int) -> float:
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


# Loss and metric of a task batch for the head adapters of mha_lib.pruning.


def toy_loss(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Per-sequence ``(B,)`` cross-entropy over the answered positions of a chapter-4 task batch."""
    device = next(model.parameters()).device
    inputs, targets = (t.to(device) for t in batch)
    logits, _ = model(inputs)  # (B, T, C)
    answered = targets != IGNORE  # (B, T)
    token = F.cross_entropy(
        logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE, reduction="none"
    ).view(targets.shape)  # (B, T)
    return (token * answered).sum(1) / answered.sum(1).clamp_min(1)  # (B,)


def toy_accuracy(model: nn.Module, batches: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> float:
    """Accuracy over the answered positions of all batches."""
    correct = total = 0
    device = next(model.parameters()).device
    for batch in batches:
        inputs, targets = (t.to(device) for t in batch)
        logits, _ = model(inputs)  # (B, T, C)
        answered = targets != IGNORE  # (B, T)
        correct += int((logits.argmax(-1)[answered] == targets[answered]).sum())
        total += int(answered.sum())
    return correct / total
