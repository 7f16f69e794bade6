"""Chapter 7's initialisation study: scaled projections of chosen heads, optimizers, clipping,
training traces, score gradients and the floors, each against an independent reference."""

import dataclasses
import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
import torch

from mha_lib.core.heads import merge_heads, split_heads
from mha_lib.experiments.floors import (
    chance_accuracy,
    context_mode_accuracy,
    expected_context_mode_accuracy,
)
from mha_lib.experiments.head_health import (
    answer_weight,
    diagnose_heads,
    projection_gradient_norms,
    qk_gradient_norms,
    score_gradient,
)
from mha_lib.experiments.tasks import associative_recall, pair_recall
from mha_lib.experiments.toy_transformer import ToyTransformer, scale_attention_
from mha_lib.experiments.training import (
    EVAL_SEED_OFFSET,
    Config,
    build_model,
    make_task,
    train,
)

TASK = associative_recall(num_keys=4, num_values=4, num_pairs=4, num_queries=2)
SMALL = Config(
    task="associative_recall",
    task_args=dict(num_keys=4, num_values=4, num_pairs=4, num_queries=2),
    d_model=16,
    num_heads=4,
    steps=6,
    eval_every=3,
    warmup=2,
    batch_size=8,
    eval_size=16,
)


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def model(**kwargs):
    torch.manual_seed(0)
    return ToyTransformer(TASK.vocab_size, TASK.num_classes, TASK.seq_len, d_model=16,
                          num_heads=4, **kwargs)  # fmt: skip


def per_head(attention, name, x):
    """Head-split output of one projection, (B, H, T, Dh): what each head computes."""
    return split_heads(getattr(attention, f"{name}_proj")(x), attention.num_heads)


# --- initialisation of chosen projections of chosen heads


def test_scaling_one_head_multiplies_that_heads_projection_and_nothing_else():
    base, scaled = model(), model(init_scale=3.0, init_projections=("q", "k"), init_heads=(2,))
    x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(0))
    for name, factor in (("q", 3.0), ("k", 3.0), ("v", 1.0)):
        a, b = per_head(base.attentions[0], name, x), per_head(scaled.attentions[0], name, x)
        for head in range(4):
            expected = factor * a[:, head] if head == 2 else a[:, head]
            torch.testing.assert_close(b[:, head], expected)
    for a, b in zip(base.parameters(), scaled.parameters(), strict=True):
        if a.shape == b.shape and not torch.equal(a, b):
            assert a is not b  # only the q/k weights of head 2 differ:
    differ = [n for (n, a), (_, b) in zip(base.named_parameters(), scaled.named_parameters(),
                                          strict=True) if not torch.equal(a, b)]  # fmt: skip
    assert differ == ["blocks.0.attn.q_proj.weight", "blocks.0.attn.k_proj.weight"]


def test_default_init_scale_path_is_the_original_one():
    """All projections of all heads: exactly W·s, as before the options existed."""
    base, scaled = model(), model(init_scale=8.0)
    for a, b in zip(base.attentions, scaled.attentions, strict=True):
        for name in ("q", "k", "v"):
            assert torch.equal(getattr(b, f"{name}_proj").weight,
                               getattr(a, f"{name}_proj").weight * 8.0)  # fmt: skip
        assert torch.equal(b.out_proj.weight, a.out_proj.weight)
    explicit = model(init_scale=8.0, init_projections=("q", "k", "v"), init_heads=(0, 1, 2, 3))
    for a, b in zip(explicit.parameters(), scaled.parameters(), strict=True):
        assert torch.equal(a, b)


def test_scaled_queries_and_keys_scale_the_scores_by_the_square():
    """Scores are q·k: scaling W_q and W_k by s multiplies a head's scores by s²."""
    base, scaled = model(), model(init_scale=2.0, init_projections=("q", "k"), init_heads=(1,))
    tokens = TASK.sample(3, torch.Generator().manual_seed(1))[0]
    q0, k0 = base.queries_keys(tokens)
    q1, k1 = scaled.queries_keys(tokens)
    s0, s1 = q0 @ k0.transpose(-2, -1), q1 @ k1.transpose(-2, -1)  # (B, H, T, T)
    torch.testing.assert_close(s1[:, 1], 4.0 * s0[:, 1])
    torch.testing.assert_close(s1[:, [0, 2, 3]], s0[:, [0, 2, 3]])


def test_zero_queries_and_keys_give_uniform_attention_that_training_keeps():
    config = Config(**{**SMALL.to_dict(), "steps": 5})
    for optimizer in ("adamw", "sgd"):
        net = build_model(Config(**{**config.to_dict(), "optimizer": optimizer}), TASK, seed=0)
        for attention in net.attentions:
            scale_attention_(attention, 0.0, ("q", "k"))
        tokens = TASK.sample(2, torch.Generator().manual_seed(0))[0]
        assert torch.equal(net.attention_maps(tokens), torch.full((1, 2, 4, 6, 6), 1 / 6))
        train(net, TASK, Config(**{**config.to_dict(), "optimizer": optimizer}), 0,
              progress=False)  # fmt: skip
        attention = net.attentions[0]
        assert not attention.q_proj.weight.any() and not attention.k_proj.weight.any()
        assert attention.v_proj.weight.any()


def test_bad_init_options_raise():
    with pytest.raises(ValueError, match="projections"):
        model(init_projections=("q", "o"))
    with pytest.raises(ValueError, match="projections"):
        model(init_projections=())
    with pytest.raises(TypeError, match="projections"):
        model(init_projections="qk")
    with pytest.raises(ValueError, match="heads"):
        model(init_heads=(4,))
    with pytest.raises(ValueError, match="heads"):
        model(init_heads=(1, 1))
    with pytest.raises(ValueError, match="scale"):
        scale_attention_(model().attentions[0], -1.0)
    with pytest.raises(ValueError, match="optimizer"):
        Config(optimizer="lion")
    with pytest.raises(ValueError, match="momentum"):
        Config(momentum=1.0)
    with pytest.raises(ValueError, match="clip_grad_norm"):
        Config(clip_grad_norm=0.0)
    with pytest.raises(ValueError, match="projection_weight_decay"):
        Config(projection_weight_decay=-1.0)


# --- Config: new fields stay out of old records


def test_config_records_of_older_runs_still_compare_equal():
    old = json.loads(json.dumps(Config(task="pair_recall", steps=20).to_dict()))
    for name in ("init_projections", "init_heads", "optimizer", "momentum", "projection_lr",
                 "projection_optimizer", "projection_weight_decay", "clip_grad_norm"):  # fmt: skip
        assert name not in old
    assert Config(**old).to_dict() == old
    new = Config(init_projections=("v",), init_heads=(0,), optimizer="sgd", clip_grad_norm=1.0)
    again = Config(**json.loads(json.dumps(new.to_dict())))
    assert again == new and again.to_dict() == new.to_dict()
    assert again.init_projections == ("v",) and again.init_heads == (0,)


# --- optimizer and clipping: one SGD step by hand


def first_batch_gradient(config, seed):
    """The model of `config` at init and its gradient on the first training batch."""
    task = make_task(config.task, **config.task_args)
    net = build_model(config, task, seed)
    inputs, targets = task.sample(config.batch_size, torch.Generator().manual_seed(seed))
    logits, _ = net(inputs)
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(),
                                             ignore_index=-100)  # fmt: skip
    loss.backward()
    return net, loss


def test_one_sgd_step_is_lr_times_the_clipped_gradient():
    lr, warmup, clip = 0.5, 4, 0.01
    config = Config(**{**SMALL.to_dict(), "optimizer": "sgd", "lr": lr, "warmup": warmup,
                       "weight_decay": 0.0, "steps": 1, "clip_grad_norm": clip})  # fmt: skip
    reference, _ = first_batch_gradient(config, seed=3)
    norm = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in reference.parameters()))
    assert norm > clip  # the clip is active
    trained = build_model(config, TASK, seed=3)
    result = train(trained, TASK, config, 3, progress=False)
    step = lr / warmup  # the warm-up factor of step 0
    for before, after in zip(reference.parameters(), trained.parameters(), strict=True):
        expected = before.detach() - step * before.grad * clip / (norm + 1e-6)
        torch.testing.assert_close(after.detach(), expected, atol=1e-6, rtol=1e-5)
    assert result.steps == [0, 1]


def test_adamw_default_is_unchanged_and_a_loose_clip_changes_nothing():
    task = TASK
    plain = build_model(SMALL, task, seed=1)
    loose = build_model(SMALL, task, seed=1)
    a = train(plain, task, SMALL, 1, progress=False)
    b = train(loose, task, Config(**{**SMALL.to_dict(), "clip_grad_norm": 1e9}), 1, progress=False)
    assert a == b
    for p, q in zip(plain.parameters(), loose.parameters(), strict=True):
        assert torch.equal(p, q)


# --- traces: recording reads, it does not change the run


def probe_of(task, seed, size=16):
    inputs, targets = task.sample(size, torch.Generator().manual_seed(seed + 2 * EVAL_SEED_OFFSET))
    return inputs, targets, task.answer_positions(inputs)


def test_recording_leaves_the_run_bit_identical():
    config = Config(**{**SMALL.to_dict(), "init_scale": 4.0, "init_projections": ("q", "k")})
    plain, traced = build_model(config, TASK, 2), build_model(config, TASK, 2)
    a = train(plain, TASK, config, 2, progress=False)
    b = train(traced, TASK, config, 2, progress=False, record_every=2, probe=probe_of(TASK, 2))
    assert a.trace is None and b.trace is not None
    assert (a.eval_loss, a.eval_accuracy) == (b.eval_loss, b.eval_accuracy)
    for p, q in zip(plain.parameters(), traced.parameters(), strict=True):
        assert torch.equal(p, q)
    assert "trace" not in a.to_dict() and "trace" in b.to_dict()


def test_trace_records_the_first_batch_gradient_and_the_probe():
    config = Config(**{**SMALL.to_dict(), "init_scale": 4.0, "init_projections": ("q", "k")})
    reference, loss = first_batch_gradient(config, seed=5)
    norm = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in reference.parameters()))
    probe = probe_of(TASK, 5)
    at_init = diagnose_heads(build_model(config, TASK, 5), *probe[:2], answers=probe[2],
                             detail=True)  # fmt: skip
    net = build_model(config, TASK, 5)
    trace = train(net, TASK, config, 5, progress=False, record_every=4, probe=probe).trace
    assert len(trace["grad_norm"]) == config.steps
    assert trace["grad_norm"][0] == pytest.approx(norm, rel=1e-5)
    assert trace["train_loss"][0] == pytest.approx(loss.item(), rel=1e-6)
    expected = qk_gradient_norms(reference.attentions[0]).tolist()
    assert trace["qk_grad"][0][0] == pytest.approx(expected, rel=1e-5)
    assert trace["probe_steps"] == [0, 4, 6]
    assert trace["probe"][0] == at_init


def test_record_every_needs_a_probe():
    net = build_model(SMALL, TASK, 0)
    with pytest.raises(ValueError, match="probe"):
        train(net, TASK, SMALL, 0, progress=False, record_every=2)
    with pytest.raises(ValueError, match="record_every"):
        train(net, TASK, SMALL, 0, progress=False, record_every=0, probe=probe_of(TASK, 0))


# --- the gradient that reaches the scores


def test_score_gradient_is_softmax_backward():
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(3, 2, 5, 7, generator=gen, dtype=torch.float64, requires_grad=True)
    upstream = torch.randn(3, 2, 5, 7, generator=gen, dtype=torch.float64)
    weights = torch.softmax(scores, -1)
    (weights * upstream).sum().backward()
    torch.testing.assert_close(score_gradient(weights.detach(), upstream), scores.grad)
    # A saturated softmax passes (almost) nothing, whatever comes from above.
    sharp = torch.softmax(torch.tensor([[30.0, 0.0, 0.0]], dtype=torch.float64), -1)
    assert score_gradient(sharp, torch.ones(1, 3, dtype=torch.float64) * 5).abs().max() < 1e-11


def test_diagnose_score_gradient_matches_an_explicit_forward():
    """The model's forward written out with the scores as a leaf of the graph."""
    net = model(init_scale=3.0, init_projections=("q", "k"), init_heads=(0,))
    inputs, targets, answers = probe_of(TASK, 0)
    report = diagnose_heads(net, inputs, targets, answers=answers, detail=True)
    assert all(p.grad is None for p in net.parameters())  # diagnose clears what it made
    block, attention = net.blocks[0], net.attentions[0]
    x = net.tok_emb(inputs) + net.pos_emb(torch.arange(inputs.shape[1]))
    h = block.ln_attn(x)
    q, k, v = (per_head(attention, name, h) for name in ("q", "k", "v"))
    scores = (q @ k.transpose(-2, -1) / math.sqrt(attention.d_head)).detach().requires_grad_()
    x = x + attention.out_proj(merge_heads(torch.softmax(scores, -1) @ v))
    logits = net.head(net.ln_out(x + block.mlp(block.ln_mlp(x))))
    torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(),
                                      ignore_index=-100).backward()  # fmt: skip
    expected = scores.grad.transpose(0, 1).flatten(1).norm(dim=1)
    assert report["score_grad"][0] == pytest.approx(expected.tolist(), rel=1e-4)
    weights = torch.softmax(scores.detach(), -1)
    assert report["answer_weight"][0] == pytest.approx(answer_weight(weights, answers).tolist())


def test_value_gradient_norms_are_the_heads_rows():
    net = model()
    inputs, targets, _ = probe_of(TASK, 0)
    logits, _ = net(inputs)
    torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(),
                                      ignore_index=-100).backward()  # fmt: skip
    attention = net.attentions[0]
    grad, weight = attention.v_proj.weight.grad, attention.v_proj.weight
    norms = projection_gradient_norms(attention, ("v",), relative=True)
    for head in range(4):
        rows = slice(4 * head, 4 * head + 4)
        assert norms[head].item() == pytest.approx((grad[rows].norm() / weight[rows].norm()).item())


# --- where the answer is, and how much weight a head puts there


def test_answer_positions_on_a_hand_made_sequence():
    task = associative_recall(num_keys=4, num_values=3, num_pairs=3, num_queries=2)
    # context: key 2 → value 1, key 0 → value 2, key 3 → value 0; queries name keys 3 and 2
    context = [2 * 3 + 1, 0 * 3 + 2, 3 * 3 + 0]
    queries = [4 * 3 + 3, 4 * 3 + 2]
    inputs = torch.tensor([context + queries])
    assert task.answer_positions(inputs)[0, :, 0].tolist() == [-1, -1, -1, 2, 0]
    pair = pair_recall(num_keys=3, num_values=2, num_pairs=3, num_queries=1)
    inputs, _ = pair.sample(5, torch.Generator().manual_seed(0))
    found = pair.answer_positions(inputs)[:, -1]  # (B, 2)
    named = torch.tensor(pair.tuples)[inputs[:, -1] - pair.num_keys * pair.num_values]
    assert torch.equal(inputs.gather(1, found) // pair.num_values, named)


def test_answer_weight_of_hand_made_maps():
    t = 4
    answers = torch.tensor([[[-1], [-1], [0], [1]]])  # (1, T, 1): rows 2 and 3 answer
    right = torch.zeros(t, t)
    right[2, 0] = right[3, 1] = 1.0
    right[0, 0] = right[1, 1] = 1.0
    uniform = torch.full((t, t), 1 / t)
    weights = torch.stack([right, uniform, torch.eye(t)])[None]  # (1, 3, T, T)
    assert answer_weight(weights, answers).tolist() == pytest.approx([1.0, 0.25, 0.0])


# --- the floors


def test_expected_mode_accuracy_closed_forms():
    # Two values, two pairs: equal values (probability 1/2) are always right, a tie half.
    assert expected_context_mode_accuracy(2, 2) == Fraction(3, 4)
    assert expected_context_mode_accuracy(5, 1) == 1
    # Brute force over every assignment of values to slots.
    values, pairs = 3, 4
    total = Fraction(0)
    for assignment in itertools.product(range(values), repeat=pairs):
        counts = [assignment.count(v) for v in range(values)]
        total += Fraction(max(counts), pairs)
    assert expected_context_mode_accuracy(values, pairs) == total / values**pairs


def test_mode_accuracy_on_hand_made_batch_and_on_a_large_sample():
    task = associative_recall(num_keys=3, num_values=3, num_pairs=3, num_queries=1)
    # values (1, 1, 2): answer 1 is a mode; values (0, 1, 2): three-way tie
    inputs = torch.tensor([[0 * 3 + 1, 1 * 3 + 1, 2 * 3 + 2, 9 + 0],
                           [0 * 3 + 0, 1 * 3 + 1, 2 * 3 + 2, 9 + 1]])  # fmt: skip
    targets = torch.tensor([[-100, -100, -100, 1], [-100, -100, -100, 1]])
    assert context_mode_accuracy(task, inputs, targets) == pytest.approx((1 + 1 / 3) / 2)
    big = associative_recall()
    inputs, targets = big.sample(20_000, torch.Generator().manual_seed(0))
    measured = context_mode_accuracy(big, inputs, targets)
    exact = float(expected_context_mode_accuracy(8, 8))
    assert abs(measured - exact) < 4 * math.sqrt(exact * (1 - exact) / 20_000)
    assert chance_accuracy(big) == 1 / 8 < exact
    with pytest.raises(ValueError, match="one key per query"):
        context_mode_accuracy(pair_recall(), inputs, targets)


def test_projection_optimizer_steps_only_the_named_projections_by_sgd():
    """One step: W_q, W_k follow SGD (lr · warm-up · gradient); every other weight AdamW,
    whose first step is lr · warm-up · g / (|g| + eps) plus its decoupled decay."""
    lr, sgd_lr, warmup, decay, sgd_decay = 0.01, 0.5, 4, 0.1, 0.3
    config = Config(**{**SMALL.to_dict(), "init_projections": ("q", "k"), "steps": 1,
                       "projection_optimizer": "sgd", "projection_lr": sgd_lr, "lr": lr,
                       "warmup": warmup, "weight_decay": decay,
                       "projection_weight_decay": sgd_decay})  # fmt: skip
    reference, _ = first_batch_gradient(config, seed=4)
    trained = build_model(config, TASK, seed=4)
    train(trained, TASK, config, 4, progress=False)
    sgd_names = {"blocks.0.attn.q_proj.weight", "blocks.0.attn.k_proj.weight"}
    for (name, before), after in zip(reference.named_parameters(), trained.parameters(),
                                     strict=True):  # fmt: skip
        w, g = before.detach(), before.grad
        if name in sgd_names:  # coupled L2: the decay enters the gradient
            expected = w - sgd_lr / warmup * (g + sgd_decay * w)
        else:
            step = lr / warmup
            expected = w * (1 - step * decay) - step * g / (g.abs() + 1e-8)
        torch.testing.assert_close(after.detach(), expected, atol=2e-6, rtol=1e-4, msg=name)


def test_silencing_a_head_is_zeroing_its_output_columns():
    from mha_lib.experiments.head_health import ablation_accuracy

    net = model(init_scale=2.0)
    inputs, targets, _ = probe_of(TASK, 1, size=64)
    report = ablation_accuracy(net, inputs, targets)
    answered = targets != -100

    def accuracy(m):
        logits, _ = m(inputs)
        return (logits.argmax(-1)[answered] == targets[answered]).float().mean().item()

    assert report["accuracy"] == accuracy(net)
    for head in range(4):
        silenced = model(init_scale=2.0)
        with torch.no_grad():
            silenced.attentions[0].out_proj.weight[:, 4 * head : 4 * head + 4] = 0.0
        assert report["without_head"][0][head] == pytest.approx(accuracy(silenced), abs=1e-9)


# --- what chapter 7's pages read: committed runs by condition, table cells and glue keys


def test_arms_read_runs_by_condition_in_seed_order():
    from mha_lib.experiments.studies.ch7_init import Arms, Condition, condition_of, key_of, pm, sgd

    xavier, big = Condition(), Condition(scale=16.0, heads=(0,))

    def record(condition, seed, accuracy):
        return {"condition": {**dataclasses.asdict(condition), "name": condition.name},
                "seed": seed, "result": {"final_accuracy": accuracy},
                "probe": {"top_weight": [[seed, 0.5], [seed + 1, 0.5]]},
                "train": {"grad_norm_first": 10.0 * seed}}  # fmt: skip

    arms = Arms([record(big, 1, 0.25), record(xavier, 0, 0.5), record(big, 0, 0.75)])
    assert [r["seed"] for r in arms[big.name]] == [0, 1]  # sorted by seed
    assert arms.final(big).tolist() == [75.0, 25.0]
    assert arms.probe(big, "top_weight", step=1).tolist() == [[1, 0.5], [2, 0.5]]
    assert arms.train_stat(big, "grad_norm_first").tolist() == [0.0, 10.0]
    with pytest.raises(KeyError, match="no committed runs"):
        arms.final(sgd())
    assert pm([1.0, 2.0, 3.0]) == "2.0 ± 1.0"
    assert key_of(xavier) == "1_qk" and key_of(big) == "16_qk_h0"
    assert key_of(sgd(scale=16.0, clip=True)) == "16_qk_sgd_clip"
    assert key_of(Condition(scale=16.0, projections=("q", "k", "v"), steps=3000)) == "16_qkv_long"
    assert key_of(Condition(scale=2.5, projections=("v",))) == "2_5_v"
    assert condition_of(arms[big.name][0]) == big


def test_glue_values_of_a_condition_by_hand():
    from mha_lib.experiments.studies.ch7_init import Arms, Condition, glue_values

    big = Condition(scale=16.0, heads=(0,))

    def record(seed, accuracy, top, answer, qk):
        # two probe steps (init, end), two heads
        return {"condition": {**dataclasses.asdict(big), "name": big.name}, "seed": seed,
                "result": {"final_accuracy": accuracy},
                "probe": {"top_weight": top, "answer_weight": answer, "qk_weight": qk}}  # fmt: skip

    arms = Arms([
        record(0, 0.50, [[1.0, 0.5], [0.75, 0.25]], [[0, 0], [0.5, 0.25]], [[4, 2], [8, 6]]),
        record(1, 0.25, [[0.5, 0.0], [0.25, 0.75]], [[0, 0], [0.25, 0.0]], [[2, 0], [6, 4]]),
    ])  # fmt: skip
    # finals 50 and 25 %: mean 37.5, sample sd 25 / sqrt(2); top weight at the end: mean of
    # 0.75, 0.25, 0.25, 0.75 = 0.5; on the answer: (0.5 + 0.25 + 0.25 + 0) / 4 = 0.25
    short = glue_values(arms, big)
    assert short == pytest.approx({"acc_16_qk_h0": 37.5, "acc_sd_16_qk_h0": 25 / 2**0.5,
                                   "top1_16_qk_h0": 0.5, "ans1_16_qk_h0": 0.25})  # fmt: skip
    assert list(short) == ["acc_16_qk_h0", "acc_sd_16_qk_h0", "top1_16_qk_h0", "ans1_16_qk_h0"]
    # against Xavier's 40 and 20 %: differences 10 and 5, mean 7.5; top weight at init 0.5;
    # q/k weight at init (4 + 2 + 2 + 0) / 4 = 2, at the end (8 + 6 + 6 + 4) / 4 = 6
    full = glue_values(arms, big, against=np.array([40.0, 20.0]))
    assert full == pytest.approx({**short, "acc_min_16_qk_h0": 25.0, "acc_max_16_qk_h0": 50.0,
                                  "diff_16_qk_h0": 7.5, "top0_16_qk_h0": 0.5,
                                  "qkw0_16_qk_h0": 2.0, "qkw1_16_qk_h0": 6.0})  # fmt: skip
    assert all(type(v) is float for v in full.values())


# --- the deep study: which weights, how deep, which optimizer


def test_scale_weights_multiplies_one_group_in_every_layer():
    from mha_lib.experiments.studies.ch7_deep import scale_weights_

    groups = {
        "qk": ("attn.q_proj.weight", "attn.k_proj.weight"),
        "qkv": ("attn.q_proj.weight", "attn.k_proj.weight", "attn.v_proj.weight"),
        "v": ("attn.v_proj.weight",),
        "vo": ("attn.v_proj.weight", "attn.out_proj.weight"),
        "mlp": ("mlp.0.weight", "mlp.2.weight"),
    }
    for weights, names in [*groups.items(), ("readout", None)]:
        base, scaled = model(num_layers=2), model(num_layers=2)
        assert scale_weights_(scaled, weights, 3.0) is scaled
        expected = {"head.weight"} if names is None else {
            f"blocks.{layer}.{name}" for layer in range(2) for name in names}  # fmt: skip
        after = dict(scaled.named_parameters())
        differ = {n for n, p in base.named_parameters() if not torch.equal(p, after[n])}
        assert differ == expected, weights
        for name in differ:
            torch.testing.assert_close(after[name], 3.0 * dict(base.named_parameters())[name])
    # "qkv" is the toy model's own init_scale path: exactly W · s
    for a, b in zip(scale_weights_(model(num_layers=2), "qkv", 16.0).parameters(),
                    model(num_layers=2, init_scale=16.0).parameters(), strict=True):  # fmt: skip
        assert torch.equal(a, b)
    with pytest.raises(ValueError, match="weights"):
        scale_weights_(model(), "o", 2.0)
    with pytest.raises(TypeError, match="ToyTransformer"):
        scale_weights_(torch.nn.Linear(2, 2), "qk", 2.0)


def test_deep_conditions_name_and_configure_their_arms():
    from mha_lib.experiments.studies import ch7_deep as deep

    c = deep.DeepCondition(weights="qkv", scale=16.0, optimizer="sgd", clip=True)
    assert c.name == "6 layers post-norm, qkv ×16, SGD, clipped"
    config = c.config()
    assert (config.num_layers, config.steps, config.optimizer, config.lr) == (
        6, deep.STEPS, "sgd", deep.SGD_LR)  # fmt: skip
    assert (config.weight_decay, config.clip_grad_norm, config.init_scale) == (0.0, deep.CLIP, 1)
    assert deep.DeepCondition(layers=1).name == "1 layer post-norm, Xavier, AdamW"
    assert deep.DeepCondition(optimizer="sgd", lr=0.3).config().lr == 0.3
    assert len(deep.conditions()) == 7 + 2 * (len(deep.DEPTHS) - 1)
    assert deep.xavier_of(c) == deep.DeepCondition(optimizer="sgd", clip=True)
    every = deep.conditions() + deep.init_conditions()
    assert len({c.name for c in every}) == len(set(every))  # a name names one arm
    for bad in ({"scale": 2.0}, {"weights": "qkv"}, {"norm": "mid"}, {"optimizer": "lion"},
                {"weights": "o", "scale": 2.0}):  # fmt: skip
        with pytest.raises(ValueError):
            deep.DeepCondition(**bad)


def test_deep_at_init_is_the_first_step_of_training():
    from mha_lib.experiments.studies import ch7_deep as deep

    condition = deep.DeepCondition(layers=2, weights="qk", scale=4.0)
    first = deep.at_init(condition, 3)
    _, result, _ = deep.trained(condition, 3, stop_after=1)
    assert first["grad_norm_first"] == deep.as_stored(result.trace["grad_norm"][0])
    assert first["top_weight"] == deep.as_stored(result.trace["probe"][0]["top_weight"])
    assert first["condition"]["name"] == condition.name and first["seed"] == 3


def test_explosion_reads_the_log_ratios_against_ten_times():
    from mha_lib.experiments.studies.ch7_deep import EXPLODES, explosion

    assert EXPLODES == 10.0
    assert explosion([100.0, 200.0, 150.0, 120.0])[0] == "explodes"
    assert explosion([1.1, 0.9, 1.3, 1.0])[0] == "does not explode"
    outcome, difference = explosion([5.0, 30.0, 8.0, 20.0])  # around ten times, spread
    assert outcome == "undecided" and difference.low95 < 1 < difference.high95


def test_deep_readers_of_committed_records():
    from mha_lib.experiments.studies import ch7_deep as deep

    run = {"top_weight": [[[0.2, 0.4]], [[0.9, 1.0]]],  # (probes, layers, heads)
           "ablation": {"accuracy": 0.9, "without_head": [[0.895, 0.5]]},
           "result": {"eval_loss": [2.1, 0.3]}}  # fmt: skip
    nan = {"top_weight": [[[0.2, 0.4]], [[None, None]]], "ablation": run["ablation"],
           "result": {"eval_loss": [2.1, None]}}  # weights NaN by the end  # fmt: skip
    assert deep.mean_top([run]).tolist() == pytest.approx([0.95])
    assert deep.mean_top([run, nan], 0).tolist() == pytest.approx([0.3, 0.3])
    assert math.isnan(deep.mean_top([nan])[0])
    assert deep.unused_heads([run]).tolist() == [1]  # head 0 costs half a point, head 1 forty
    assert deep.diverged([run, nan]).tolist() == [False, True]
    assert math.isnan(deep.unused_heads([nan])[0])
    big = deep.DeepCondition(layers=2, weights="qk", scale=16.0)
    records = [
        {"condition": {"name": c.name}, "seed": seed, "top_weight": [[top, top]],
         "grad_norm_first": norm * (seed + 1)}
        for c, norm, top in ((deep.xavier_of(big), 2.0, 0.3), (big, 50.0, 0.99))
        for seed in reversed(deep.INIT_SEEDS)
    ]  # fmt: skip
    assert deep.init_ratios(records, big).tolist() == [25.0] * len(deep.INIT_SEEDS)
    assert deep.init_top(records, big).tolist() == pytest.approx([0.99] * len(deep.INIT_SEEDS))
    with pytest.raises(ValueError, match="lacks seeds"):
        deep.init_ratios(records[1:], big)
