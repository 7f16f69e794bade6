"""analysis.head_stats.special_mass and analysis.knockout.sink_ablation against independent
routes on the packaged MiniLM.

The reference reads the weights from the model's own attentions and what each head moves
from the explicit per-head product of our `MultiHeadAttention` carrying the layer's weights
(`W_o^h v_h(x_j)`, checked here to rebuild that layer's output), not from `bert.norms`.
"""

import pytest
import torch

from mha_lib import bert
from mha_lib.analysis.head_stats import special_mass
from mha_lib.analysis.knockout import ABLATIONS, sink_ablation
from mha_lib.core.heads import split_heads
from mha_lib.experiments.kv_sharing import first_position_mass, query_position_mass

SENTENCES = ["The cat sat on the mat because it was tired.", "Dogs bark."]


@torch.no_grad()
def reference(model, tok, text):
    enc = tok(text, return_tensors="pt")
    out = model(**enc, output_attentions=True, output_hidden_states=True)
    rows = {"cls": [], "sep": [], "cls_moved": [], "sep_moved": []}
    for i, x in enumerate(out.hidden_states[:-1]):
        mha = bert.mha_from_layer(model, i).eval()
        w = out.attentions[i][0]  # (H, T, T)
        v = split_heads(mha.v_proj(x), mha.num_heads)  # (1, H, T, Dh)
        w_o = mha.out_proj.weight.view(mha.d_model, mha.num_heads, mha.d_head)
        f = torch.einsum("bhtd,ohd->bhto", v, w_o)[0]  # (H, T, D): what head h moves from t
        rebuilt = torch.einsum("hij,hjo->io", w, f) + mha.out_proj.bias
        torch.testing.assert_close(rebuilt, mha(x)[0][0], atol=1e-5, rtol=1e-4)
        moved = w * f.norm(dim=-1)[:, None, :]
        moved = moved / moved.sum(-1, keepdim=True)
        rows["cls"].append(w[..., 0].mean(-1))
        rows["sep"].append(w[..., -1].mean(-1))
        rows["cls_moved"].append(moved[..., 0].mean(-1))
        rows["sep_moved"].append(moved[..., -1].mean(-1))
    return {k: torch.stack(v) for k, v in rows.items()}, 1.0 / enc["input_ids"].shape[1]


def test_special_mass_equals_the_explicit_per_head_route():
    model, tok = bert.load()
    mass = special_mass(model, tok, SENTENCES)
    refs = [reference(model, tok, s) for s in SENTENCES]
    for key in ("cls", "sep", "cls_moved", "sep_moved"):
        expected = sum(r[key] for r, _ in refs) / len(SENTENCES)
        torch.testing.assert_close(mass[key], expected, atol=1e-5, rtol=1e-4)
    assert float(mass["uniform"]) == pytest.approx(sum(u for _, u in refs) / len(SENTENCES))
    # what the chapter reports: [CLS] gets weight but moves little
    assert float(mass["cls_moved"].mean()) < 0.5 * float(mass["cls"].mean())


def test_no_sentences_is_refused():
    model, tok = bert.load()
    with pytest.raises(ValueError, match="at least one sentence"):
        special_mass(model, tok, [])


def _hooked_layer_change(model, tok, text, layer, head, replace):
    """The relative change of `layer`'s attention output and output hidden state when the
    value vectors of head `head` at [CLS] and [SEP] are replaced inside the model
    (`replace(v_head (T, Dh)) -> (2, Dh)`), by a hook on the value projection: a route
    that shares no code with sink_ablation."""
    enc = tok(text, return_tensors="pt")
    sa = model.encoder.layer[layer].attention.self
    dense = model.encoder.layer[layer].attention.output.dense
    dh = sa.attention_head_size
    t = enc["input_ids"].shape[1]
    seen = {}

    def values(module, args, out):
        out = out.clone()
        part = out[0, :, head * dh : (head + 1) * dh]
        out[0, [0, t - 1], head * dh : (head + 1) * dh] = replace(part)
        return out

    def keep(module, args, out):
        seen["attn"] = out[0]

    with torch.no_grad():
        handle = dense.register_forward_hook(keep)
        plain = model(**enc, output_hidden_states=True).hidden_states[layer + 1][0]
        base = seen["attn"]
        hooks = [sa.value.register_forward_hook(values), handle]
        try:
            changed = model(**enc, output_hidden_states=True).hidden_states[layer + 1][0]
        finally:
            for h in hooks:
                h.remove()
    return (seen["attn"] - base).norm() / base.norm(), (changed - plain).norm() / plain.norm()


@pytest.mark.parametrize(("layer", "head"), [(0, 3), (2, 0), (5, 11)])
def test_sink_ablation_equals_changing_the_values_inside_the_model(layer, head):
    model, tok = bert.load()
    text = SENTENCES[0]
    got = sink_ablation(model, tok, [text], draws=2)
    zero = _hooked_layer_change(model, tok, text, layer, head, lambda v: torch.zeros(2, v.shape[1]))
    mean = _hooked_layer_change(
        model, tok, text, layer, head, lambda v: v[1:-1].mean(0).expand(2, -1)
    )
    for name, (attn, hidden) in {"zero": zero, "mean": mean}.items():
        torch.testing.assert_close(got[f"attn_{name}"][0, layer, head], attn, rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(
            got[f"hidden_{name}"][0, layer, head], hidden, rtol=1e-3, atol=1e-6
        )
    # switching the head off: the library's head mask, the same layer's output
    mask = torch.ones(6, 12)
    mask[layer, head] = 0.0
    enc = tok(text, return_tensors="pt")
    with torch.no_grad():
        plain = model(**enc, output_hidden_states=True).hidden_states[layer + 1][0]
        with bert.head_mask(model, mask):
            off = model(**enc, output_hidden_states=True).hidden_states[layer + 1][0]
    expected = (off - plain).norm() / plain.norm()
    torch.testing.assert_close(got["hidden_off"][0, layer, head], expected, rtol=1e-3, atol=1e-6)


def test_sink_ablation_weight_and_baselines():
    model, tok = bert.load()
    got = sink_ablation(model, tok, SENTENCES, draws=3, seed=1)
    mass = special_mass(model, tok, SENTENCES)
    torch.testing.assert_close(got["weight"].mean(0), mass["cls"] + mass["sep"])
    assert set(got) == {"weight"} | {f"{p}_{a}" for p in ("attn", "hidden") for a in ABLATIONS}
    assert all(v.shape == (2, 6, 12) for v in got.values())
    again = sink_ablation(model, tok, SENTENCES, draws=3, seed=1)
    torch.testing.assert_close(got["attn_random"], again["attn_random"], rtol=0, atol=0)
    # every ablation changes something: no head's values at [CLS]/[SEP] are exactly zero
    assert all(bool((got[f"attn_{a}"] > 0).all()) for a in ABLATIONS)


def test_sink_ablation_refuses_bad_input():
    model, tok = bert.load()
    with pytest.raises(ValueError, match="at least one sentence"):
        sink_ablation(model, tok, [])
    with pytest.raises(ValueError, match="draws"):
        sink_ablation(model, tok, ["Dogs bark."], draws=0)


def _hand_maps():
    """One layer, one sequence of 4 positions, 2 context slots, two heads: head 0 spreads
    each row evenly over what the causal mask lets it see, head 1 puts everything on 0."""
    even = torch.tril(torch.ones(4, 4))
    even = even / even.sum(-1, keepdim=True)
    first = torch.zeros(4, 4)
    first[:, 0] = 1.0
    return torch.stack([even, first])[None, None]  # (L, B, H, T, T)


def test_first_position_mass_on_a_hand_checked_case():
    first, others = first_position_mass(_hand_maps(), slots=2)
    # rows 2 and 3 are read: head 0 gives position 0 (and 1) 1/3 and 1/4
    torch.testing.assert_close(first, torch.tensor([[7 / 24, 1.0]]))
    torch.testing.assert_close(others, torch.tensor([[7 / 24, 0.0]]))
    # the queries keep 1/3 (row 2) and 2/4 (row 3) among themselves in head 0
    torch.testing.assert_close(
        query_position_mass(_hand_maps(), slots=2), torch.tensor([[5 / 12, 0.0]])
    )


def test_first_position_mass_accounts_for_every_row_of_a_causal_toy():
    from mha_lib.experiments.toy_transformer import ToyTransformer

    torch.manual_seed(0)
    model = ToyTransformer(20, 5, 12, d_model=16, num_heads=4, num_layers=2, causal=True)
    maps = model.attention_maps(torch.randint(20, (8, 12)))  # (L, B, H, T, T)
    slots = 5
    first, others = first_position_mass(maps, slots)
    queries = query_position_mass(maps, slots)
    # position 0, the other slots and the queries hold every query row's weight
    torch.testing.assert_close(first + (slots - 1) * others + queries, torch.ones(2, 4))


def test_first_position_mass_refuses_bad_input():
    with pytest.raises(ValueError, match="maps"):
        first_position_mass(torch.ones(4, 4), 2)
    with pytest.raises(ValueError, match="slots"):
        first_position_mass(_hand_maps(), 1)
    with pytest.raises(ValueError, match="slots"):
        query_position_mass(_hand_maps(), 4)
