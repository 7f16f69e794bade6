"""The one set of head-removal rules (mha_lib.core.head_removal), for every caller at once.

The same requests go to `MultiHeadAttention.prune_heads`, `mha_lib.bert.prune_heads` and the
two pruning adapters; each must accept and refuse the same ones, with the same message, and
change nothing when it refuses. References: kept heads and feature indices written out by
hand, `nn.Linear` outputs sliced by hand, and a module's own `head_mask` argument.
"""

import copy

import pytest
import torch
from torch import nn

from mha_lib import MultiHeadAttention, bert, pruning
from mha_lib.core.head_hooks import heads_scaled
from mha_lib.core.head_removal import (
    head_features,
    keep_input_features,
    keep_output_features,
    surviving_heads,
    surviving_heads_per_layer,
)
from mha_lib.experiments.tasks import associative_recall
from mha_lib.experiments.toy_transformer import ToyTransformer
from mha_lib.experiments.training import toy_accuracy, toy_loss

HEADS = 4


def toy_model():
    torch.manual_seed(0)
    task = associative_recall(num_keys=4, num_values=4, num_pairs=4, num_queries=2)
    return ToyTransformer(
        task.vocab_size, task.num_classes, task.seq_len, d_model=16, num_heads=HEADS,
        num_layers=2,
    )  # fmt: skip


class Caller:
    """One way into the rules: `prune({layer: heads})`, `kept()` per layer, `state()`."""

    def __init__(self, name, tiny_bert):
        self.name = name
        if name == "MultiHeadAttention":
            self.module = MultiHeadAttention(16, HEADS)
            self.layers = 1
        elif name == "bert.prune_heads":
            self.module = tiny_bert(num_attention_heads=HEADS)
            self.layers = 2
        elif name == "MHAHeads":
            self.adapter = pruning.MHAHeads(toy_model(), toy_loss, toy_accuracy)
            self.module, self.layers = self.adapter.model, 2
        else:
            model = tiny_bert(num_attention_heads=HEADS)
            self.adapter = pruning.BertHeads(model, lambda m, b: 0, lambda m, b: 0.0)
            self.module, self.layers = self.adapter.model, 2

    def prune(self, plan):
        if self.name == "MultiHeadAttention":
            (heads,) = plan.values()  # one layer: the module's own call takes a list
            return self.module.prune_heads(heads)
        if self.name == "bert.prune_heads":
            return bert.prune_heads(self.module, plan)
        return self.adapter.prune(plan)

    def kept(self):
        if self.name == "MultiHeadAttention":
            return [self.module.kept_heads]
        if self.name == "bert.prune_heads":
            return bert.kept_heads(self.module)
        return self.adapter.kept_heads()

    def state(self):
        return self.kept(), copy.deepcopy(self.module.state_dict())

    def where(self, layer=0):
        """How the messages name a layer (a lone module has none)."""
        return "" if self.name == "MultiHeadAttention" else f" of layer {layer}"


CALLERS = ["MultiHeadAttention", "bert.prune_heads", "MHAHeads", "BertHeads"]


@pytest.fixture(params=CALLERS)
def caller(request, tiny_bert):
    return Caller(request.param, tiny_bert)


def assert_unchanged(caller, before):
    kept, state = caller.state()
    assert kept == before[0]
    assert state.keys() == before[1].keys()
    for key, value in state.items():
        assert torch.equal(value, before[1][key]), key


def test_heads_keep_their_original_index_across_rounds(caller):
    caller.prune({0: [1]})
    caller.prune({0: [3, 3]})  # a head named twice in one request goes once
    caller.prune({0: []})  # an empty request changes nothing
    assert caller.kept()[0] == [0, 2]


def test_a_head_already_pruned_is_refused_by_name_and_nothing_changes(caller):
    caller.prune({0: [1]})
    before = caller.state()
    with pytest.raises(ValueError, match=rf"head 1{caller.where()} is already pruned"):
        caller.prune({0: [2, 1]})  # 2 would be fine: the request is refused as a whole
    assert_unchanged(caller, before)


def test_an_index_out_of_range_is_refused(caller):
    before = caller.state()
    for head in (HEADS, -1):
        with pytest.raises(ValueError, match=rf"head index {head}{caller.where()} is out of range"):
            caller.prune({0: [head]})
    assert_unchanged(caller, before)


def test_a_layers_last_head_is_never_removed(caller):
    caller.prune({0: [0, 1]})
    before = caller.state()
    with pytest.raises(ValueError, match=rf"cannot prune all 2 heads{caller.where()} \(\[2, 3\]\)"):
        caller.prune({0: [2, 3]})
    assert_unchanged(caller, before)
    caller.prune({0: [2]})  # down to one head is allowed
    assert caller.kept()[0] == [3]


def test_indices_must_be_ints(caller):
    before = caller.state()
    for bad in (1.0, True, "1"):
        with pytest.raises(TypeError, match="must contain ints"):
            caller.prune({0: [bad]})
    assert_unchanged(caller, before)


@pytest.mark.parametrize("name", [c for c in CALLERS if c != "MultiHeadAttention"])
def test_a_plan_is_checked_in_every_layer_before_any_changes(name, tiny_bert):
    caller = Caller(name, tiny_bert)
    before = caller.state()
    with pytest.raises(ValueError, match="cannot prune all 4 heads of layer 1"):
        caller.prune({0: [0, 1], 1: [0, 1, 2, 3]})
    assert_unchanged(caller, before)
    with pytest.raises(ValueError, match="layer index 2 is out of range for 2 layers"):
        caller.prune({0: [0], 2: [0]})
    with pytest.raises(TypeError, match="layer indices must be ints"):
        caller.prune({0.0: [0]})
    with pytest.raises(TypeError, match="heads must be a mapping"):
        caller.prune([[0]])
    with pytest.raises(TypeError, match=r"heads\[0\] must be a list of head indices"):
        caller.prune({0: 3})
    assert_unchanged(caller, before)


def test_surviving_heads_by_hand():
    assert surviving_heads([0, 2, 5], [5, 0], 6) == [2]
    assert surviving_heads([0, 2, 5], (), 6) == [0, 2, 5]
    assert surviving_heads_per_layer({1: [4], 0: []}, [[0, 1], [3, 4]], 5) == {1: [3]}
    with pytest.raises(TypeError, match="heads must be a list of head indices"):
        surviving_heads([0, 1], 1, 2)


def test_head_features_and_weight_slicing_by_hand():
    assert head_features([0, 2], 3, "cpu").tolist() == [0, 1, 2, 6, 7, 8]
    assert head_features([2, 0], 2, "cpu").tolist() == [4, 5, 0, 1]  # in the order given
    assert head_features([], 2, "cpu").tolist() == []
    torch.manual_seed(0)
    linear = nn.Linear(5, 6, dtype=torch.float64)
    x = torch.randn(3, 5, dtype=torch.float64)
    idx = torch.tensor([1, 4, 5])
    torch.testing.assert_close(keep_output_features(linear, idx)(x), linear(x)[:, idx])
    wide = torch.randn(3, 6, dtype=torch.float64)
    only = torch.zeros_like(wide)
    only[:, idx] = wide[:, idx]  # the other inputs set to zero: their columns contribute nothing
    out = nn.Linear(6, 2, dtype=torch.float64)
    torch.testing.assert_close(keep_input_features(out, idx)(wide[:, idx]), out(only))


def test_heads_scaled_equals_the_modules_own_head_mask():
    torch.manual_seed(0)
    first, second = MultiHeadAttention(8, 2).double(), MultiHeadAttention(8, 2).double()
    x = torch.randn(2, 3, 8, dtype=torch.float64)
    scale = [
        torch.tensor([0.0, 2.0], dtype=torch.float64),  # (H,) for the first layer
        torch.tensor([[1.0, 0.5], [3.0, 0.0]], dtype=torch.float64),  # (B, H) for the second
    ]
    given = torch.tensor([0.5, 4.0], dtype=torch.float64)
    with heads_scaled([first, second], scale):
        hooked = first(x)[0], second(x)[0], first(x, head_mask=given)[0]
    for ours, (module, mask) in zip(
        hooked, [(first, scale[0]), (second, scale[1]), (first, scale[0] * given)], strict=True
    ):
        torch.testing.assert_close(ours, module(x, head_mask=mask)[0])
    torch.testing.assert_close(first(x)[0], first(x, head_mask=torch.ones(2).double())[0])
    with pytest.raises(RuntimeError, match="inside"), heads_scaled([first], [scale[0]]):
        raise RuntimeError("inside")
    assert not first._forward_pre_hooks  # removed on an error too
    with pytest.raises(ValueError, match="one mask per attention module"):
        heads_scaled([first, second], scale[:1]).__enter__()
