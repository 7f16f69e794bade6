"""mha_lib.pruning: importance against finite differences, pruning against masking, the rules.

References are independent of the code under test: central finite differences
of the loss, a zero head mask applied through `MultiHeadAttention`'s own
`head_mask` or `mha_lib.bert.head_mask`, scipy's Spearman correlation, and
torch's parameter counts.
"""

import itertools

import pytest
import torch
from scipy.stats import spearmanr
from torch import nn

from mha_lib import pruning
from mha_lib.analysis import cost
from mha_lib.experiments.tasks import associative_recall
from mha_lib.experiments.toy_transformer import ToyTransformer
from mha_lib.experiments.training import toy_accuracy, toy_loss

LAYERS, HEADS = 2, 4


def toy_model(seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    task = associative_recall(num_keys=4, num_values=4, num_pairs=4, num_queries=2)
    model = ToyTransformer(
        task.vocab_size, task.num_classes, task.seq_len, d_model=16, num_heads=HEADS,
        num_layers=LAYERS,
    ).to(dtype)  # fmt: skip
    return model.eval(), task


def toy_batches(task, n=2, size=6, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [task.sample(size, g) for _ in range(n)]


def toy_heads(**kwargs):
    model, task = toy_model()
    return pruning.MHAHeads(model, toy_loss, toy_accuracy, **kwargs), task


def bert_batch(seed=0, batch=3, length=7):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, 40, (batch, length), generator=g)
    mask = torch.ones(batch, length, dtype=torch.long)
    mask[0, -2:] = 0  # some padding
    return ids, mask


def bert_loss(model, batch):
    ids, mask = batch
    hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state  # (B, T, D)
    return hidden.pow(2).mean((1, 2))  # (B,) any smooth per-row function will do


def bert_heads(tiny_bert, **kwargs):
    model = tiny_bert(
        vocab_size=40, hidden_size=24, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=30, max_position_embeddings=32,
    )  # fmt: skip
    return pruning.BertHeads(model, bert_loss, lambda m, bs: 0.0, **kwargs)


# ---------------------------------------------------------------- importance


def finite_difference_importance(heads, batches, eps=1e-5, per_example=True):
    """mean over examples (or batches) of |dL/dxi_h| by central differences of the loss."""
    out = torch.zeros(heads.num_layers, heads.num_heads, dtype=torch.float64)
    units = []
    for inputs, targets in batches:
        if per_example:
            units += [(inputs[i : i + 1], targets[i : i + 1]) for i in range(len(inputs))]
        else:
            units.append((inputs, targets))
    for layer, head in itertools.product(range(heads.num_layers), range(heads.num_heads)):
        total = 0.0
        for unit in units:
            values = []
            for sign in (1, -1):
                mask = torch.ones(heads.num_layers, heads.num_heads, dtype=torch.float64)
                mask[layer, head] += sign * eps
                with heads.masked(mask), torch.no_grad():
                    values.append(float(heads.loss_fn(heads.model, unit).mean()))
            total += abs(values[0] - values[1]) / (2 * eps)
        out[layer, head] = total / len(units)
    return out


@pytest.mark.parametrize("per_example", [True, False])
def test_importance_equals_finite_differences(per_example):
    heads, task = toy_heads()
    batches = toy_batches(task, n=2, size=2 if per_example else 3)
    ours = pruning.head_importance(heads, batches, normalize=False, per_example=per_example)
    reference = finite_difference_importance(heads, batches, per_example=per_example)
    torch.testing.assert_close(ours.double(), reference, rtol=1e-4, atol=1e-7)


def test_importance_is_l2_normalised_per_layer_and_nan_for_pruned_heads():
    heads, task = toy_heads()
    batches = toy_batches(task)
    raw = pruning.head_importance(heads, batches, normalize=False)
    normed = pruning.head_importance(heads, batches)
    torch.testing.assert_close(normed, raw / raw.norm(dim=-1, keepdim=True))
    heads.prune({1: [2]})
    after = pruning.head_importance(heads, batches)
    assert torch.isnan(after[1, 2]) and torch.isfinite(after[0]).all()
    torch.testing.assert_close(after[1].nan_to_num().norm(), torch.tensor(1.0))


def test_per_example_bert_mask_equals_layer_mask_when_rows_agree(tiny_bert):
    heads = bert_heads(tiny_bert)
    batch = bert_batch()
    mask = torch.rand(LAYERS, HEADS, generator=torch.Generator().manual_seed(3))
    with heads.masked(mask), torch.no_grad():
        ref = bert_loss(heads.model, batch)
    rows = mask[None].expand(3, LAYERS, HEADS).contiguous()  # (B, L, H), batch first
    with heads.masked(rows), torch.no_grad():
        ours = bert_loss(heads.model, batch)
    torch.testing.assert_close(ours, ref)


def test_ablation_scores_are_loss_increases():
    heads, task = toy_heads()
    batches = toy_batches(task)
    scores = pruning.ablation_scores(heads, batches)
    model = heads.model
    with torch.no_grad():
        base = sum(float(toy_loss(model, b).mean()) for b in batches) / len(batches)
        for layer, head in [(0, 1), (1, 3)]:
            # Independent reference: the attention module's own head_mask argument.
            attn = model.blocks[layer].attn
            mask = torch.ones(HEADS, dtype=torch.float64)
            mask[head] = 0.0
            handle = attn.register_forward_pre_hook(
                lambda m, a, k, mask=mask: (a, {**k, "head_mask": mask}), with_kwargs=True
            )
            loss = sum(float(toy_loss(model, b).mean()) for b in batches) / len(batches)
            handle.remove()
            assert scores[layer, head].item() == pytest.approx(loss - base, rel=1e-5, abs=1e-9)


def test_spearman_matches_scipy_and_skips_nan():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(3, 5, generator=g), torch.randn(3, 5, generator=g)
    b[0, 0] = a[0, 1] = float("nan")
    keep = torch.isfinite(a) & torch.isfinite(b)
    expected = spearmanr(a[keep].numpy(), b[keep].numpy()).statistic
    assert pruning.spearman(a, b) == pytest.approx(expected, abs=1e-9)
    with pytest.raises(ValueError, match="same shape"):
        pruning.spearman(a, b[:2])


# ---------------------------------------------------------------- pruning equals masking


def test_toy_physical_pruning_equals_masking_across_rounds():
    heads, task = toy_heads()
    inputs, _ = toy_batches(task, n=1)[0]
    masked = heads.clone()
    heads.prune({0: [1, 3]})
    heads.prune({0: [0], 1: [2]})  # original numbering in the second round too
    assert heads.kept_heads() == [[2], [0, 1, 3]]
    assert [a.num_heads for a in heads.model.attentions] == [1, 3]
    mask = torch.ones(LAYERS, HEADS, dtype=torch.float64)
    mask[0, [0, 1, 3]] = 0.0
    mask[1, 2] = 0.0
    with torch.no_grad(), masked.masked(mask):
        ref, _ = masked.model(inputs)
    with torch.no_grad():
        ours, _ = heads.model(inputs)
    torch.testing.assert_close(ours, ref)
    # Fewer parameters: three projections lose rows, the output projection columns.
    lost = 4 * 16 * 4 * 4  # 4 heads × d_head 4 × d_model 16 × (q, k, v, out)
    lost += 3 * 4 * 4  # q, k, v biases of the removed heads
    assert cost.parameter_count(masked.model) - cost.parameter_count(heads.model) == lost


def test_bert_physical_pruning_equals_masking(tiny_bert):
    heads = bert_heads(tiny_bert)
    masked = heads.clone()
    ids, attention = bert_batch()
    heads.prune({0: [0, 2], 1: [3]})
    heads.prune({1: [1]})
    mask = torch.ones(LAYERS, HEADS)
    mask[0, [0, 2]] = 0.0
    mask[1, [1, 3]] = 0.0
    with torch.no_grad(), masked.masked(mask):
        ref = masked.model(input_ids=ids, attention_mask=attention).last_hidden_state
    with torch.no_grad():
        ours = heads.model(input_ids=ids, attention_mask=attention).last_hidden_state
    torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-5)
    assert heads.kept_heads() == [[1, 3], [0, 2]]


def test_selection_never_takes_a_layers_last_head_unless_ranking_every_survivor():
    """Pruning refuses to empty a layer (tests/unit/test_head_removal.py); selection and the
    prunable count follow: one head per layer is never offered."""
    heads, _ = toy_heads()
    heads.prune({1: [0, 1, 2]})
    alive = heads.present()
    assert pruning.prunable_count(heads) == HEADS - 1  # layer 0's three; layer 1 has none left
    scores = torch.zeros(LAYERS, HEADS)
    scores[1, 3] = -1.0  # layer 1's last head ranks first but cannot go
    assert pruning.select_heads(scores, alive, 3) == [(0, 0), (0, 1), (0, 2)]
    with pytest.raises(ValueError, match="last head of a layer, which pruning refuses"):
        pruning.select_heads(scores, alive, 4)
    every = pruning.select_heads(scores, alive, 5, include_last_heads=True)
    assert every == [(1, 3), (0, 0), (0, 1), (0, 2), (0, 3)]  # a ranking of every survivor


def test_bad_arguments_name_themselves():
    heads, task = toy_heads()
    with pytest.raises(ValueError, match="mask must have shape"):
        heads.masked(torch.ones(3, HEADS, dtype=torch.float64))
    with pytest.raises(TypeError, match="mask must be a floating-point"):
        heads.masked(torch.ones(LAYERS, HEADS, dtype=torch.long))
    with pytest.raises(ValueError, match="layer index 5 is out of range"):
        heads.prune({5: [0]})
    with pytest.raises(ValueError, match="rule must be one of"):
        pruning.pruning_curve(heads, toy_batches(task), rule="best")
    with pytest.raises(ValueError, match="batches must be a non-empty"):
        pruning.head_importance(heads, [])
    with pytest.raises(TypeError, match="BERT-family"):
        pruning.BertHeads(nn.Linear(2, 2), bert_loss, lambda m, b: 0.0)


# ---------------------------------------------------------------- curves and orders


@pytest.mark.parametrize("rule", pruning.ORDERS)
def test_orders_are_permutations_and_curves_monotone(rule):
    heads, task = toy_heads()
    batches = toy_batches(task)
    curve = pruning.pruning_curve(heads, batches, rule=rule, step=2, seed=4)
    everything = sorted(itertools.product(range(LAYERS), range(HEADS)))
    assert sorted(curve.order) == everything
    assert curve.pruned[0] == 0 and curve.pruned[-1] == LAYERS * (HEADS - 1)
    assert all(b > a for a, b in itertools.pairwise(curve.pruned))
    assert len(curve.metric) == len(curve.pruned)
    assert curve.metric[0] == pytest.approx(heads.metric(batches))
    assert heads.present().all()  # the curve worked on a copy
    # The survivors are the last entries of the order: one per layer.
    assert sorted(layer for layer, _ in curve.order[-LAYERS:]) == list(range(LAYERS))


def test_importance_rule_removes_the_least_important_head_first():
    heads, task = toy_heads()
    batches = toy_batches(task)
    scores = pruning.head_importance(heads, batches)
    first = divmod(int(scores.flatten().argmin()), HEADS)
    last = divmod(int(scores.flatten().argmax()), HEADS)
    assert pruning.pruning_curve(heads, batches, step=1).order[0] == first
    assert pruning.pruning_curve(heads, batches, rule="reverse", step=1).order[0] == last


def test_random_rule_depends_on_seed_and_extra_metrics_are_recorded():
    heads, task = toy_heads()
    batches = toy_batches(task)
    orders = {
        tuple(pruning.pruning_curve(heads, batches, rule="random", seed=s).order) for s in range(4)
    }
    assert len(orders) > 1
    curve = pruning.pruning_curve(
        heads, batches, step=3, extra={"alive": lambda h: float(h.present().sum())}
    )
    assert curve.extra["alive"] == [LAYERS * HEADS - p for p in curve.pruned]


def test_heads_within_and_core_heads():
    curve = pruning.PruningCurve(
        "importance", None, [0, 2, 4, 6], [0.9, 0.895, 0.85, 0.9], {}, [], 8
    )
    assert pruning.heads_within(curve, 0.01) == 2
    assert pruning.heads_within(curve, 0.1) == 6
    a = [(0, 0), (0, 1), (1, 0), (1, 1)]
    b = [(0, 1), (0, 0), (1, 1), (1, 0)]
    assert pruning.core_heads([a, b], 2) == [(1, 0), (1, 1)]
    ranks = pruning.survival_rank([a, b], (2, 2))
    torch.testing.assert_close(ranks, torch.tensor([[1 / 6, 1 / 6], [5 / 6, 5 / 6]]))


def test_one_head_per_layer_and_oracle():
    heads, task = toy_heads()
    batches = toy_batches(task, size=32)
    keep = [1, 2]
    values = pruning.one_head_per_layer(heads, batches, keep)
    for layer, head in enumerate(keep):
        work = heads.clone()
        work.prune({layer: [h for h in range(HEADS) if h != head]})
        assert values[layer] == pytest.approx(work.metric(batches))
    best, best_values = pruning.best_single_heads(heads, batches)
    assert best_values == pruning.one_head_per_layer(heads, batches, best)
    for layer in range(LAYERS):
        for head in range(HEADS):
            trial = [best[i] if i != layer else head for i in range(LAYERS)]
            assert pruning.one_head_per_layer(heads, batches, trial)[layer] <= best_values[layer]


# ---------------------------------------------------------------- what removal saves


def test_even_plan_flops_and_latency():
    plan = pruning.even_plan([list(range(12))] * 2, 0.5)
    assert plan == {0: list(range(6, 12)), 1: list(range(6, 12))}
    assert pruning.even_plan([[0, 1]], 0.75) == {0: [1]}  # one head always stays
    with pytest.raises(ValueError, match="fraction"):
        pruning.even_plan([[0, 1]], 1.0)
    linear = nn.Linear(8, 5)
    x = torch.randn(3, 8)
    assert cost.forward_flops(lambda: linear(x)) == 2 * 3 * 8 * 5
    times = cost.interleaved_samples(
        {"a": lambda: linear(x), "b": lambda: linear(x)}, repeats=3, min_sample=0.001
    )["wall"]
    assert set(times) == {"a", "b"} and all(t > 0 for s in times.values() for t in s)
