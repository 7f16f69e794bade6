"""Every tensor a library function creates lives on its inputs' device, in any dtype.

This machine has no GPU, so a tensor created on the wrong device would go unnoticed here
and fail on a reader's Colab GPU. `DeviceAudit` catches it anyway: it watches every
tensor factory call (`torch.ones`, `torch.arange`, `torch.tensor` ...) made from
`mha_lib`'s own code and records those that name no device. Such a tensor lands on the
default device (the CPU) whatever device the model is on. `*_like` calls and `Tensor`
methods follow their input and are fine. The BERT, pruning and word-sense pipelines run
under the audit, in float32, float64 and bfloat16; on a machine with CUDA they also run
there for real.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch.overrides import TorchFunctionMode

from mha_lib import MultiHeadAttention, bert, pruning
from mha_lib.analysis import head_stats, probes
from mha_lib.data import senses
from mha_lib.experiments import training
from mha_lib.experiments.tasks import associative_recall
from mha_lib.experiments.toy_transformer import ToyTransformer

LIBRARY = Path(__import__("mha_lib").__file__).resolve().parent
TORCH = Path(torch.__file__).resolve().parent
FACTORIES = {
    torch.ones, torch.zeros, torch.full, torch.empty, torch.arange, torch.tensor,
    torch.as_tensor, torch.eye, torch.linspace, torch.rand, torch.randn, torch.randint,
    torch.randperm,
}  # fmt: skip


class DeviceAudit(TorchFunctionMode):
    """Record factory calls from mha_lib that give no `device` (they would land on the CPU)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        kwargs = kwargs or {}
        derived = func is torch.as_tensor and args and isinstance(args[0], torch.Tensor)
        if func in FACTORIES and kwargs.get("device") is None and not derived:
            frame = sys._getframe(1)
            while frame and Path(frame.f_code.co_filename).resolve().is_relative_to(TORCH):
                frame = frame.f_back
            if frame and Path(frame.f_code.co_filename).resolve().is_relative_to(LIBRARY):
                where = Path(frame.f_code.co_filename).relative_to(LIBRARY)
                self.found.append(f"{where}:{frame.f_lineno} {func.__name__} without a device")
        return func(*args, **kwargs)


def audited(fn):
    with DeviceAudit() as audit:
        fn()
    return sorted(set(audit.found))


@pytest.fixture(scope="module")
def minilm(tiny_bert):
    """A tiny random BERT with MiniLM's vocabulary, and MiniLM's tokenizer: fast, same code."""
    _, tokenizer = bert.load()
    model = tiny_bert(
        vocab_size=tokenizer.vocab_size, hidden_size=24, num_attention_heads=4,
        intermediate_size=32, max_position_embeddings=64,
    )  # fmt: skip
    return model, tokenizer


def bert_pipeline(model, tokenizer, device):
    """Maps, head mask with gradients, the word-sense probe, importance, pruning, a layer copy."""
    model = model.to(device)
    batches = probes.make_batches(tokenizer, senses.make_sense_set("eval", 8, seed=0))
    tokens, maps = bert.attention_maps(model, tokenizer, "the cat sat on the mat.")
    head_stats.head_statistics([maps], [tokens])
    probe = probes.sense_probe(model, batches)
    layers, heads = model.config.num_hidden_layers, model.config.num_attention_heads
    mask = torch.ones(layers, heads, device=device, requires_grad=True)
    with bert.head_mask(model, mask):
        probes.sense_loss(model, batches[0], probe).backward()
    assert mask.grad is not None and mask.grad.device == mask.device
    probes.sense_accuracy(model, batches, probe)
    adapter = pruning.BertHeads(
        model,
        lambda m, b: probes.sense_loss(m, b, probe, reduction="none"),
        lambda m, bs: probes.sense_accuracy(m, bs, probe),
    )
    pruning.head_importance(adapter, batches)
    pruning.ablation_effects(adapter, batches)
    pruning.pruning_curve(adapter, batches, step=heads, max_pruned=heads)
    pruning.one_head_per_layer(adapter, batches, [0] * layers)
    bert.mha_from_layer(model, 0)


def toy_setup(device, dtype=torch.float32):
    """A toy transformer and task batches on `device` (built outside the audit: tasks draw
    their data with a CPU generator by design, and the reader moves it)."""
    task = associative_recall(num_keys=4, num_values=4, num_pairs=4, num_queries=2)
    model = ToyTransformer(task.vocab_size, task.num_classes, task.seq_len, d_model=16,
                           num_heads=4, num_layers=2).to(device=device, dtype=dtype)  # fmt: skip
    g = torch.Generator().manual_seed(0)
    batches = [tuple(t.to(device) for t in task.sample(8, g)) for _ in range(2)]
    return model.eval(), batches


def toy_pipeline(model, batches):
    """The toy transformer's adapter: importance, ablation, a pruning curve."""
    adapter = pruning.MHAHeads(model, training.toy_loss, training.toy_accuracy)
    pruning.head_importance(adapter, batches)
    pruning.ablation_scores(adapter, batches)
    pruning.pruning_curve(adapter, batches, step=1, max_pruned=3)


def test_bert_and_retrieval_pipelines_create_nothing_off_device(minilm):
    model, tokenizer = minilm
    assert audited(lambda: bert_pipeline(model, tokenizer, "cpu")) == []


def test_toy_pruning_pipeline_creates_nothing_off_device():
    model, batches = toy_setup("cpu")
    assert audited(lambda: toy_pipeline(model, batches)) == []


def test_multihead_attention_creates_nothing_off_device():
    mha, theirs = MultiHeadAttention(16, 4), torch.nn.MultiheadAttention(16, 4)
    x = torch.randn(2, 5, 16)
    padding = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    head_mask, allowed = torch.ones(4), torch.ones(5, 5, dtype=torch.bool)

    def run():
        mha(x, key_padding_mask=padding, head_mask=head_mask, need_weights=True)
        mha(x, is_causal=True, attn_mask=allowed)
        mha(x, attn_mask=allowed.float().log(), key_padding_mask=padding)
        mha.prune_heads([1])
        MultiHeadAttention.from_torch(theirs)
        MultiHeadAttention(16, 4, device=x.device, dtype=x.dtype)

    assert audited(run) == []


def test_the_audit_catches_a_factory_call_without_a_device(monkeypatch):
    """The audit itself can fail: a library function that forgets the device is reported."""
    from mha_lib.analysis import probes
    from mha_lib.data import senses

    def careless(batch_size):
        return torch.arange(batch_size) % len(senses.SPLITS)  # no device

    careless.__code__ = careless.__code__.replace(co_filename=probes.__file__)
    found = audited(lambda: careless(8))
    assert found and "without a device" in found[0]


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=str)
def test_pipelines_run_in_other_dtypes(minilm, dtype):
    model, tokenizer = minilm
    import copy

    other = copy.deepcopy(model).to(dtype)
    bert_pipeline(other, tokenizer, "cpu")
    toy_pipeline(*toy_setup("cpu", dtype))
    mha = MultiHeadAttention(8, 2).to(dtype)
    out, weights = mha(torch.randn(1, 3, 8, dtype=dtype), head_mask=torch.ones(2),
                       need_weights=True)  # fmt: skip
    assert out.dtype == weights.dtype == dtype


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_pipelines_run_on_cuda(minilm):
    import copy

    model, tokenizer = minilm
    bert_pipeline(copy.deepcopy(model), tokenizer, "cuda")
    toy_pipeline(*toy_setup("cuda"))
