import pytest
import torch

from mha_lib import MultiHeadAttention
from mha_lib.experiments.head_health import head_states, qk_gradient_norms


def test_head_states_on_hand_made_maps():
    t = 6
    one_hot = torch.eye(t)  # every query on itself
    uniform = torch.full((t, t), 1 / t)
    mixed = torch.softmax(torch.randn(t, t, generator=torch.Generator().manual_seed(0)) * 1.5, -1)
    weights = torch.stack([one_hot, uniform, mixed])[None]  # (1, 3, T, T)
    assert head_states(weights) == ["collapsed", "uniform", "active"]
    # The thresholds are honoured.
    assert head_states(weights, uniform_at=1.01)[1] == "active"


def test_head_states_rejects_bad_shapes():
    with pytest.raises(ValueError, match=r"weights must have shape \(B, H, T, T\)"):
        head_states(torch.rand(2, 3, 4))


def test_qk_gradient_norms_per_head():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(3, 5, 8)
    with pytest.raises(ValueError, match="call backward"):
        qk_gradient_norms(mha)
    mask = torch.tensor([1.0, 0.0])  # head 1 contributes nothing, so it gets no gradient
    mha(x, head_mask=mask)[0].pow(2).sum().backward()
    norms = qk_gradient_norms(mha)
    assert norms.shape == (2,)
    assert norms[0] > 0 and norms[1] == 0
    expected0 = torch.cat([mha.q_proj.weight.grad[:4], mha.k_proj.weight.grad[:4]]).norm()
    torch.testing.assert_close(norms[0], expected0)
    weight0 = torch.cat([mha.q_proj.weight[:4], mha.k_proj.weight[:4]]).norm()
    torch.testing.assert_close(qk_gradient_norms(mha, relative=True)[0], expected0 / weight0)


def test_diagnose_heads_sees_a_collapsed_head():
    from mha_lib.experiments.head_health import diagnose_heads
    from mha_lib.experiments.tasks import associative_recall
    from mha_lib.experiments.toy_transformer import ToyTransformer

    task = associative_recall()
    inputs, targets = task.sample(32, torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    healthy = ToyTransformer(task.vocab_size, task.num_classes, task.seq_len, num_heads=4)
    torch.manual_seed(0)
    blown = ToyTransformer(
        task.vocab_size, task.num_classes, task.seq_len, num_heads=4, init_scale=16.0
    )
    good, bad = diagnose_heads(healthy, inputs, targets), diagnose_heads(blown, inputs, targets)
    assert good["state"][0].count("collapsed") == 0
    assert bad["state"][0].count("collapsed") >= 3
    # Saturated softmax: relative to the size of the weights, the query/key gradient
    # is far smaller (Adam's steps are about the same size for both).
    good_grad = torch.tensor(good["qk_relative_grad"][0]).median()
    bad_grad = torch.tensor(bad["qk_relative_grad"][0]).median()
    assert bad_grad < good_grad / 4
    assert all(p.grad is None for p in blown.parameters())
