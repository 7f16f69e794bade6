"""A seeded, deterministic training loop for the toy transformer on the synthetic tasks.

Chapter 4 compares head counts by their *learning curves* over several seeds,
not by one final number, so the loop records held-out accuracy along the way.
One call, `run_experiment`, builds the task and the model from a
`Config` and a seed and trains it; the sweep script, the notebook and
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

from mha_lib._checks import check_positive_int
from mha_lib.analysis.cost import parameter_count
from mha_lib.core.multihead import MultiHeadAttention
from mha_lib.experiments.head_health import diagnose_heads, qk_gradient_norms
from mha_lib.experiments.tasks import IGNORE, AbsentRecall, KeyValueRecall, Lookback
from mha_lib.experiments.toy_transformer import ToyTransformer

# Held-out batches come from a generator seeded far from the training seed,
# so the two streams never share a state.
EVAL_SEED_OFFSET = 1_000_003


# Fields added after results were committed: `to_dict` leaves them out while they keep their
# default, so the records of older runs (which lack them) still compare equal to new ones.
_LATER_FIELDS = (
    "init_projections",
    "init_heads",
    "optimizer",
    "momentum",
    "projection_optimizer",
    "projection_lr",
    "projection_weight_decay",
    "clip_grad_norm",
    "num_kv_heads",
    "causal",
    "shared_query",
)
OPTIMIZERS = ("adamw", "sgd")


@dataclass(frozen=True)
class Config:
    """Everything that defines one training run except the seed.

    `init_scale` multiplies the Xavier weights of the attention projections named in
    `init_projections` for the heads in `init_heads` (`None`: every head;
    `mha_lib.experiments.toy_transformer.scale_attention_`). `optimizer` is `"adamw"`
    (the default) or `"sgd"` (with `momentum`); both use `lr`, `weight_decay` and the
    same schedule. `projection_optimizer`, `projection_lr` and `projection_weight_decay`,
    when set, give the weights of the projections named in `init_projections` (in every
    layer and for every head, not their biases) their own optimizer, learning rate and weight
    decay; the rest of the model keeps `optimizer`, `lr` and `weight_decay`.
    `clip_grad_norm` clips the gradient of all parameters to that total norm before each
    step (`None`: no clipping). `num_kv_heads`, `shared_query` and `causal` are the
    toy model's (chapter 9: shared key/value heads, one query projection for every head, a
    causal mask); their defaults change nothing.
    """

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
    init_projections: tuple[str, ...] = ("q", "k", "v")
    init_heads: tuple[int, ...] | None = None
    optimizer: str = "adamw"
    momentum: float = 0.9
    projection_optimizer: str | None = None
    projection_lr: float | None = None
    projection_weight_decay: float | None = None
    clip_grad_norm: float | None = None
    num_kv_heads: int | None = None
    causal: bool = False
    shared_query: bool = False

    def __post_init__(self) -> None:
        # JSON gives lists back; keep tuples so that a reloaded config compares equal.
        object.__setattr__(self, "init_projections", tuple(self.init_projections))
        if self.init_heads is not None:
            object.__setattr__(self, "init_heads", tuple(self.init_heads))
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if self.projection_optimizer not in (None, *OPTIMIZERS):
            raise ValueError(
                f"projection_optimizer must be None or one of {OPTIMIZERS}, "
                f"got {self.projection_optimizer!r}"
            )
        decay = self.projection_weight_decay
        if decay is not None and not (isinstance(decay, int | float) and decay >= 0):
            raise ValueError(f"projection_weight_decay must be >= 0 or None, got {decay!r}")
        for name in ("lr", "projection_lr"):
            value = getattr(self, name)
            if value is not None and not (
                isinstance(value, int | float) and math.isfinite(value) and value > 0
            ):
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if not (isinstance(self.momentum, int | float) and 0 <= self.momentum < 1):
            raise ValueError(f"momentum must be in [0, 1), got {self.momentum!r}")
        clip = self.clip_grad_norm
        if clip is not None and not (
            isinstance(clip, int | float) and math.isfinite(clip) and clip > 0
        ):
            raise ValueError(f"clip_grad_norm must be a positive number or None, got {clip!r}")

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        defaults = Config.__dataclass_fields__
        for name in _LATER_FIELDS:
            if data[name] == defaults[name].default:
                del data[name]
            elif isinstance(data[name], tuple):
                data[name] = list(data[name])
        return data


@dataclass
class TrainResult:
    """Learning curve and final held-out accuracy of one run."""

    steps: list[int]
    eval_loss: list[float]
    eval_accuracy: list[float]
    final_accuracy: float
    num_parameters: int
    # Filled by `train(..., record_every=...)`; see `train`.
    trace: dict[str, list] | None = None

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        if data["trace"] is None:
            del data["trace"]  # as the records made before traces existed
        return data


def make_task(name: str, **task_args: int) -> Lookback | KeyValueRecall | AbsentRecall:
    """Build a task of `mha_lib.experiments.tasks` by name."""
    from mha_lib.experiments import tasks

    makers = {
        "lookback": tasks.lookback,
        "associative_recall": tasks.associative_recall,
        "pair_recall": tasks.pair_recall,
        "absent_recall": tasks.absent_recall,
    }
    if name not in makers:
        raise ValueError(f"task must be one of {sorted(makers)}, got {name!r}")
    return makers[name](**task_args)


def build_model(config: Config, task: Lookback | KeyValueRecall, seed: int) -> ToyTransformer:
    """The config's model for `task`, initialised from `seed` (global RNG left untouched)."""
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
            init_projections=config.init_projections,
            init_heads=config.init_heads,
            num_kv_heads=config.num_kv_heads,
            causal=config.causal,
            shared_query=config.shared_query,
        )


@torch.no_grad()
def evaluate(
    model: ToyTransformer, inputs: torch.Tensor, targets: torch.Tensor
) -> tuple[float, float]:
    """`(loss, accuracy)` over the answered positions (target ≠ -100), in eval mode."""
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
    record_every: int | None = None,
    probe: tuple[torch.Tensor, ...] | None = None,
    stop_after: int | None = None,
) -> TrainResult:
    """Train `model` with AdamW (or `config.optimizer`) on fresh batches of `task`;
    record a learning curve.

    Batches are drawn from a generator seeded with `seed`; the held-out
    set (`config.eval_size` sequences) from one seeded with
    `seed + EVAL_SEED_OFFSET`. The learning rate warms up linearly for
    `config.warmup` steps, then follows a cosine to zero. With the same seed
    and thread count, two runs on the same CPU and torch build are bit-identical;
    on another CPU the last bits differ, and a long run can amplify them.
    `progress=None` shows a tqdm bar unless `TQDM_DISABLE` is set now (the
    book's `setup()` sets it; tqdm itself only reads it at import).

    `stop_after` ends the run after that many of its `config.steps` steps, with the
    schedule of the whole run, so the result is the start of the full run (its curve up to
    there, bit for bit): how a chapter checks a long committed run without retraining it.

    `record_every` fills `TrainResult.trace` without changing the run (recording
    reads the gradients, it does not touch the weights, the optimizer or the data):

    - per step, on the training batch and before any clipping: `train_loss`,
      `grad_norm` (total norm of every parameter's gradient), and per layer and head
      `qk_grad` and `qk_relative_grad` (`qk_gradient_norms`);
    - at step 0, every `record_every` steps and at the last step, on the fixed batch
      `probe` = `(inputs, targets[, answers])`: `probe_steps` and `probe`, one
      `diagnose_heads` report (`detail=True`) each.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {seed!r}")
    check_positive_int("config.steps", config.steps)
    check_positive_int("config.eval_every", config.eval_every)
    last = config.steps if stop_after is None else check_positive_int("stop_after", stop_after)
    if last > config.steps:
        raise ValueError(f"stop_after must be at most config.steps ({config.steps}), got {last}")
    if progress is None:
        progress = os.environ.get("TQDM_DISABLE", "").lower() not in ("1", "true", "yes")
    if record_every is not None:
        check_positive_int("record_every", record_every)
        if probe is None or len(probe) not in (2, 3):
            raise ValueError("record_every needs probe = (inputs, targets[, answers])")
    data = torch.Generator().manual_seed(seed)
    eval_inputs, eval_targets = task.sample(
        config.eval_size, torch.Generator().manual_seed(seed + EVAL_SEED_OFFSET)
    )
    optimizers = _optimizers(model, config)
    schedulers = [
        torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: _lr_factor(step, config.warmup, config.steps)
        )
        for optimizer in optimizers
    ]
    trace = None if record_every is None else _Trace(model, probe)
    loss0, acc0 = evaluate(model, eval_inputs, eval_targets)
    steps, losses, accuracies = [0], [loss0], [acc0]
    if trace is not None:
        trace.diagnose(0)
    model.train()
    for step in tqdm(range(1, last + 1), disable=not progress, desc=task.name):
        inputs, targets = task.sample(config.batch_size, data)  # (B, T), (B, T)
        logits, _ = model(inputs)  # (B, T, C)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)
        for optimizer in optimizers:
            optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if trace is not None:
            trace.step(loss)
        if config.clip_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_grad_norm)
        for optimizer, scheduler in zip(optimizers, schedulers, strict=True):
            optimizer.step()
            scheduler.step()
        if step % config.eval_every == 0 or step == last:
            eval_loss, eval_acc = evaluate(model, eval_inputs, eval_targets)
            steps.append(step)
            losses.append(eval_loss)
            accuracies.append(eval_acc)
        if trace is not None and (step % record_every == 0 or step == last):
            trace.diagnose(step)
    return TrainResult(
        steps=steps,
        eval_loss=losses,
        eval_accuracy=accuracies,
        final_accuracy=accuracies[-1],
        num_parameters=parameter_count(model),
        trace=None if trace is None else trace.data,
    )


def _optimizers(model: nn.Module, config: Config) -> list[torch.optim.Optimizer]:
    """One optimizer for the whole model, or two when the projections of `init_projections`
    have their own (`projection_optimizer` / `projection_lr`)."""

    def make(kind: str, params: list, lr: float, decay: float) -> torch.optim.Optimizer:
        if kind == "sgd":
            return torch.optim.SGD(params, lr=lr, momentum=config.momentum, weight_decay=decay)
        return torch.optim.AdamW(params, lr=lr, weight_decay=decay)

    own = (config.projection_optimizer, config.projection_lr, config.projection_weight_decay)
    if all(value is None for value in own):
        return [make(config.optimizer, model.parameters(), config.lr, config.weight_decay)]
    chosen = {
        id(getattr(attention, f"{name}_proj").weight)
        for attention in model.modules()
        if isinstance(attention, MultiHeadAttention)
        for name in config.init_projections
    }
    projections = [p for p in model.parameters() if id(p) in chosen]
    rest = [p for p in model.parameters() if id(p) not in chosen]
    kind = config.projection_optimizer or config.optimizer
    lr = config.lr if config.projection_lr is None else config.projection_lr
    decay = config.weight_decay
    if config.projection_weight_decay is not None:
        decay = config.projection_weight_decay
    return [
        make(config.optimizer, rest, config.lr, config.weight_decay),
        make(kind, projections, lr, decay),
    ]


@torch.no_grad()
def total_grad_norm(model: nn.Module) -> float:
    """The norm of all of `model`'s gradients taken as one vector (what clipping reads)."""
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if not grads:
        raise ValueError("no parameter has a gradient: call backward() first")
    per_tensor = torch.stack([torch.linalg.vector_norm(g) for g in grads])  # (P,)
    return torch.linalg.vector_norm(per_tensor).item()


class _Trace:
    """What `train` records with `record_every` (the gradients are only read)."""

    def __init__(self, model: ToyTransformer, probe: tuple[torch.Tensor, ...]) -> None:
        self.model, self.probe = model, probe
        self.attentions = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
        self.data: dict[str, list] = {
            key: []
            for key in (
                "train_loss",
                "grad_norm",
                "qk_grad",
                "qk_relative_grad",
                "probe_steps",
                "probe",
            )
        }

    @torch.no_grad()
    def step(self, loss: torch.Tensor) -> None:
        self.data["train_loss"].append(loss.item())
        self.data["grad_norm"].append(total_grad_norm(self.model))
        self.data["qk_grad"].append([qk_gradient_norms(a).tolist() for a in self.attentions])
        self.data["qk_relative_grad"].append(
            [qk_gradient_norms(a, relative=True).tolist() for a in self.attentions]
        )

    def diagnose(self, step: int) -> None:
        inputs, targets, *answers = self.probe
        report = diagnose_heads(
            self.model, inputs, targets, answers=answers[0] if answers else None, detail=True
        )
        self.data["probe_steps"].append(step)
        self.data["probe"].append(report)


def run_experiment(
    config: Config, seed: int, *, progress: bool | None = None, stop_after: int | None = None
) -> tuple[ToyTransformer, TrainResult]:
    """Build the task and model of `config` from `seed`, train (the first `stop_after`
    steps only, if given: see `train`), return both."""
    task = make_task(config.task, **config.task_args)
    model = build_model(config, task, seed)
    return model, train(model, task, config, seed, progress=progress, stop_after=stop_after)


def _lr_factor(step: int, warmup: int, total: int) -> float:
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


# Loss and metric of a task batch for the head adapters of mha_lib.pruning.


def toy_loss(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Per-sequence `(B,)` cross-entropy over the answered positions of a chapter-4 task batch."""
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


def toy_sequence_accuracy(
    model: nn.Module, batches: Sequence[tuple[torch.Tensor, torch.Tensor]]
) -> torch.Tensor:
    """`(N,)` float64 on the CPU: the share of each sequence's answered positions that the
    model gets right, every sequence of `batches` in turn. Its queries share one context, so
    a sequence, not a query, is the unit a paired test over items counts; weighted by the
    answered positions of each sequence, its mean is `toy_accuracy`."""
    out = []
    device = next(model.parameters()).device
    with torch.inference_mode():
        for batch in batches:
            inputs, targets = (t.to(device) for t in batch)
            logits, _ = model(inputs)  # (B, T, C)
            answered = targets != IGNORE  # (B, T)
            right = (logits.argmax(-1) == targets) & answered  # (B, T)
            out.append((right.sum(1) / answered.sum(1).clamp_min(1)).double().cpu())
    return torch.cat(out)
