"""The coupling probes of `mha_lib.experiments.coupling` on hand-checked cases."""

import numpy as np
import pytest
import torch

from mha_lib.experiments.coupling import (
    gradient_coupling,
    map_change_on_ablation,
    map_distance,
    matched_distance,
    named_key_weight,
    query_maps,
    takeover,
    train_without,
)
from mha_lib.experiments.training import Config, build_model, make_task

TASK = {"num_keys": 6, "num_values": 4, "num_pairs": 5, "num_queries": 3}


def _model(layers=1, heads=4, seed=0):
    task = make_task("associative_recall", **TASK)
    config = Config(task="associative_recall", task_args=TASK, d_model=16, num_heads=heads,
                    num_layers=layers)  # fmt: skip
    return build_model(config, task, seed), task


def _inputs(task, n=32):
    return task.sample(n, torch.Generator().manual_seed(1))


def test_map_distance_hand_cases():
    one_hot = torch.eye(3)[None, None]  # (1, 1, 3, 3): three rows, each on its own key
    shifted = one_hot.roll(1, dims=-1)
    half = torch.full_like(one_hot, 1 / 3)
    assert map_distance(one_hot, one_hot).item() == 0.0
    assert map_distance(one_hot, shifted).item() == pytest.approx(1.0)  # disjoint rows
    assert map_distance(one_hot, half).item() == pytest.approx(2 / 3)  # 1/2·(2/3 + 2·1/3)
    with pytest.raises(ValueError, match="shape"):
        map_distance(one_hot, one_hot[..., :2])


def test_matched_distance_undoes_a_permutation_of_heads():
    torch.manual_seed(0)
    a = torch.softmax(torch.randn(2, 4, 5, 7), -1)  # (L, H, rows, T)
    order = [2, 0, 3, 1]
    b = a[:, order]  # head i of b is head order[i] of a
    distances, partners = matched_distance(a, b)
    assert torch.equal(distances, torch.zeros(2, 4))
    assert partners == [[order.index(i) for i in range(4)]] * 2
    assert (map_distance(a, b) > 0).all()  # by index they differ


def test_ablation_leaves_its_own_layer_exactly_alone_and_moves_the_next():
    model, task = _model(layers=2)
    inputs, _ = _inputs(task)
    change = map_change_on_ablation(model, task, inputs, layer=0, head=1)
    assert torch.equal(change[0], torch.zeros(4))  # same layer: bit-identical maps
    assert (change[1] > 1e-4).all()  # the next layer reads the residual stream
    # Silencing a head of the last layer moves nothing at all.
    assert torch.equal(map_change_on_ablation(model, task, inputs, 1, 2), torch.zeros(2, 4))


def test_gradient_coupling_is_zero_for_a_head_that_contributes_nothing():
    model, task = _model()
    batches = [_inputs(task), task.sample(32, torch.Generator().manual_seed(2))]
    coupled = gradient_coupling(model, batches, layer=0, head=0)
    assert torch.isnan(coupled["ablation"][0, 0])
    assert (coupled["ablation"][0, 1:] > 1e-3).all()
    assert (coupled["batch"] > 0).all()
    attn = model.blocks[0].attn
    with torch.no_grad():
        attn.out_proj.weight[:, : attn.d_head] = 0.0  # head 0 is mixed in with weight 0
    silent = gradient_coupling(model, batches, layer=0, head=0)
    assert torch.equal(silent["ablation"][0, 1:], torch.zeros(3))


def test_train_without_starts_the_other_heads_where_the_full_model_does():
    config = Config(task="associative_recall", task_args=TASK, d_model=16, num_heads=4,
                    steps=1, eval_every=1, eval_size=8, batch_size=4)  # fmt: skip
    task = make_task(config.task, **config.task_args)
    full = build_model(config, task, seed=3).blocks[0].attn
    model, _ = train_without(replace_steps(config), 3, {0: [1]})
    attn = model.blocks[0].attn
    assert attn.kept_heads == [0, 2, 3]
    keep = torch.cat([torch.arange(h * 4, (h + 1) * 4) for h in (0, 2, 3)])
    # One step of lr 0 leaves every weight where it started.
    assert torch.equal(attn.q_proj.weight, full.q_proj.weight[keep])
    assert torch.equal(attn.out_proj.weight, full.out_proj.weight[:, keep])


def replace_steps(config):
    from dataclasses import replace

    return replace(config, lr=1e-30, weight_decay=0.0)


def test_named_key_weight_and_query_maps_mark_removed_heads():
    model, task = _model()
    model.blocks[0].attn.prune_heads([2])
    inputs, _ = _inputs(task)
    maps = query_maps(model, task, inputs)
    assert maps.shape == (1, 4, 32, TASK["num_queries"], task.seq_len)
    assert torch.isnan(maps[0, 2]).all() and not torch.isnan(maps[0, [0, 1, 3]]).any()
    torch.testing.assert_close(maps[0, [0, 1, 3]].sum(-1), torch.ones(3, 32, 3))
    weight = named_key_weight(model, task, inputs)
    assert weight.shape == (1, 4, TASK["num_keys"])
    assert torch.isnan(weight[0, 2]).all()


def test_takeover_hand_case():
    full = np.array([[0.9, 0.8, 0.1, 0.2], [0.3, 0.2, 0.7, 0.6], [0.1, 0.4, 0.2, 0.1]])
    removed = full.copy()
    removed[0] = np.nan
    removed[1, 0] = 0.6  # head 1 takes over key 0
    out = takeover(full, removed, head=0)
    assert out["own_keys"] == 2  # keys 0 and 1 were head 0's
    assert out["own_before"] == pytest.approx((0.3 + 0.4) / 2)
    assert out["own_after"] == pytest.approx((0.6 + 0.4) / 2)
    assert out["other_before"] == out["other_after"] == pytest.approx((0.7 + 0.6) / 2)
    assert out["removed_head_weight"] == pytest.approx(0.85)
    assert takeover(full, removed, head=2) is None  # head 2 was nobody's best reader


def test_train_without_stop_after_is_the_start_of_the_whole_run():
    """What the chapter's converged check relies on: the first steps of a run, trained alone
    with the whole run's schedule, are those of the whole run to the last bit."""
    config = Config(task="associative_recall", task_args=TASK, d_model=16, num_heads=4,
                    steps=12, eval_every=3)  # fmt: skip
    _, whole = train_without(config, 0, {0: [1]})
    _, start = train_without(config, 0, {0: [1]}, stop_after=6)
    assert start.steps == [0, 3, 6] == whole.steps[:3]
    assert start.eval_loss == whole.eval_loss[:3]
    _, other = train_without(config, 0, stop_after=6)  # with head 1: another run
    assert other.eval_loss[1:] != start.eval_loss[1:]


def test_steps_to_a_level_on_a_hand_made_curve():
    from mha_lib.experiments.studies.ch3_coupling import steps_to

    assert steps_to([0, 50, 100, 150], [0.1, 0.5, 0.96, 0.99], 0.95) == 100
    assert steps_to([0, 50], [0.1, 0.5], 0.95) is None
