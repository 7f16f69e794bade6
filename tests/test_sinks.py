"""analysis.sinks.special_mass against an independent route on the packaged MiniLM.

The reference reads the weights from the model's own attentions and what each head moves
from the explicit per-head product of our `MultiHeadAttention` carrying the layer's weights
(``W_o^h v_h(x_j)``, checked here to rebuild that layer's output), not from `bert.norms`.
"""

import pytest
import torch

from mha_lib import bert
from mha_lib.analysis.sinks import special_mass
from mha_lib.core.heads import split_heads

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
