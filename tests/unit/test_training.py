"""The training loop learns and is deterministic under a seed.

The committed sweep is checked in test_committed_results.py.
"""

import pytest
import torch

from mha_lib.experiments.training import Config, build_model, make_task, run_experiment, train

TRIVIAL = Config(
    task="lookback",
    task_args=dict(vocab_size=8, seq_len=8, offset=2),
    steps=80,
    eval_every=40,
    warmup=10,
    eval_size=256,
    lr=1e-2,
)


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_learns_the_trivial_task(one_thread):
    _, result = run_experiment(TRIVIAL, seed=0, progress=False)
    chance = 1 / 8
    assert result.eval_accuracy[0] < 2 * chance
    assert result.final_accuracy >= 0.95
    assert result.eval_loss[-1] < result.eval_loss[0]
    assert result.steps == [0, 40, 80]


def test_same_seed_is_bit_identical_other_seed_differs(one_thread):
    small = Config(**{**TRIVIAL.to_dict(), "steps": 20, "eval_every": 10})
    model_a, a = run_experiment(small, seed=5, progress=False)
    model_b, b = run_experiment(small, seed=5, progress=False)
    _, c = run_experiment(small, seed=6, progress=False)
    assert a == b
    for pa, pb in zip(model_a.parameters(), model_b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    assert a.eval_loss != c.eval_loss


def test_stop_after_is_the_start_of_the_full_run(one_thread):
    """The first steps of a run with the whole run's schedule: its curve up to there, bit for
    bit (a run of fewer steps would decay its learning rate sooner and differ)."""
    _, full = run_experiment(TRIVIAL, seed=3, progress=False)
    _, start = run_experiment(TRIVIAL, seed=3, progress=False, stop_after=40)
    assert start.steps == [0, 40] and start.eval_loss == full.eval_loss[:2]
    short = Config(**{**TRIVIAL.to_dict(), "steps": 40})
    assert run_experiment(short, seed=3, progress=False)[1].eval_loss != start.eval_loss
    _, odd = run_experiment(TRIVIAL, seed=3, progress=False, stop_after=50)
    assert odd.steps == [0, 40, 50]  # the last step evaluated, as a full run's is
    for bad in (0, TRIVIAL.steps + 1, 1.5):
        with pytest.raises(ValueError, match="stop_after"):
            run_experiment(TRIVIAL, seed=3, progress=False, stop_after=bad)


def test_build_model_leaves_global_rng_alone():
    task = make_task("pair_recall")
    state = torch.get_rng_state()
    a = build_model(TRIVIAL, task, seed=1)
    assert torch.equal(torch.get_rng_state(), state)
    b = build_model(TRIVIAL, task, seed=1)
    assert torch.equal(a.tok_emb.weight, b.tok_emb.weight)


def test_progress_bar_respects_tqdm_disable_at_call_time(capfd, monkeypatch):
    tiny = Config(**{**TRIVIAL.to_dict(), "steps": 2, "eval_every": 1, "eval_size": 8})
    monkeypatch.setenv("TQDM_DISABLE", "1")
    run_experiment(tiny, seed=0)
    assert capfd.readouterr().err == ""
    monkeypatch.delenv("TQDM_DISABLE")
    run_experiment(tiny, seed=0)
    assert "lookback" in capfd.readouterr().err


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="task"):
        make_task("sorting")
    task = make_task("lookback")
    model = build_model(TRIVIAL, task, seed=0)
    with pytest.raises(TypeError, match="seed"):
        train(model, task, TRIVIAL, seed=1.5)
    with pytest.raises(ValueError, match="steps"):
        train(model, task, Config(steps=0), seed=1)
