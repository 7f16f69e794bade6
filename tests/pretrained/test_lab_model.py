"""mha_lib.bert.lab, the model the live lab exports, against computations that do not use it.

The references:

* unmasked maps: `mha_lib.bert.attention_maps` (transformers' own eager probabilities);
* the embedding: a mean written here over transformers' own `BertModel` output;
* masked maps and embeddings: a BERT forward pass written here from the model's weights
  (`bert_by_hand`), which multiplies each head's context by its mask entry itself, with
  no hook and no `mha_lib.bert.head_mask`. It is first checked against `BertModel`.

Every masked comparison also checks that the mask moves the reference by far more than the
tolerance, so a `LabModel` that ignored its mask would fail it. Only pinned packages.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from torch import nn

from mha_lib import bert

# float32 throughout; the hand-written pass sums in another order than transformers' kernels
# (measured: 2e-6 at most, maps and hidden states alike, whose coordinates reach about 6).
MAP_TOLERANCE = 1e-5  # largest |Δ attention weight|
EMBEDDING_TOLERANCE = 2e-5  # largest |Δ| of a hidden-state or embedding coordinate
MOVED = 100  # a mask must move the reference by this many tolerances for the test to bite
SENTENCES = [
    "The cat sat on the mat because it was tired.",
    "Most of the students had already left when the lecture ended.",
]


def _masks() -> dict[str, torch.Tensor]:
    one = torch.ones(6, 12)
    one[2, 4] = 0.0
    layer = torch.ones(6, 12)
    layer[1] = 0.0
    scaled = torch.ones(6, 12)
    scaled[0, :6] = 0.5  # values between 0 and 1 scale a head's output
    half = (torch.rand(6, 12, generator=torch.Generator().manual_seed(23)) > 0.5).float()
    return {
        "head 2-4 off": one,
        "layer 1 off": layer,
        "layer 0 half on": scaled,
        "random half off": half,
        "all off": torch.zeros(6, 12),
    }


MASKS = _masks()


@pytest.fixture(scope="module")
def loaded() -> tuple[nn.Module, object]:
    return bert.load()


def _layer_norm(x: torch.Tensor, norm: nn.LayerNorm) -> torch.Tensor:
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias


def _linear(x: torch.Tensor, layer: nn.Linear) -> torch.Tensor:
    return x @ layer.weight.T + layer.bias


@torch.no_grad()
def bert_by_hand(
    model: nn.Module, input_ids: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """One unpadded sentence `(T,)` → `(maps (L, H, T, T), last hidden state (T, D))`.

    Each head's context (its softmax times its values) is multiplied by `mask[layer, head]`
    before the layer's output projection: where transformers 4 applied `head_mask`.
    """
    config = model.config
    assert config.hidden_act == "gelu" and config.position_embedding_type == "absolute"
    heads, width = config.num_attention_heads, config.hidden_size
    d_head = width // heads
    tokens = input_ids.shape[0]
    emb = model.embeddings
    x = (
        emb.word_embeddings.weight[input_ids]
        + emb.position_embeddings.weight[:tokens]
        + emb.token_type_embeddings.weight[0]
    )
    x = _layer_norm(x, emb.LayerNorm)
    maps = []
    for index, layer in enumerate(model.encoder.layer):
        sa = layer.attention.self

        def split(linear: nn.Linear, x: torch.Tensor = x) -> torch.Tensor:
            return _linear(x, linear).reshape(tokens, heads, d_head).transpose(0, 1)  # (H, T, d)

        q, k, v = split(sa.query), split(sa.key), split(sa.value)
        weights = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(d_head), dim=-1)  # (H, T, T)
        maps.append(weights)
        context = (weights @ v) * mask[index][:, None, None]  # the head switched off by hand
        context = context.transpose(0, 1).reshape(tokens, width)
        out = layer.attention.output
        x = _layer_norm(x + _linear(context, out.dense), out.LayerNorm)
        hidden = torch.nn.functional.gelu(_linear(x, layer.intermediate.dense))
        x = _layer_norm(x + _linear(hidden, layer.output.dense), layer.output.LayerNorm)
    return torch.stack(maps), x


def _lab(model: nn.Module, tokenizer: object, text: str, mask: torch.Tensor):  # noqa: ANN202
    enc = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        maps, embedding = bert.LabModel(model)(enc["input_ids"], enc["attention_mask"], mask)
    return enc["input_ids"][0], maps, embedding[0]


def _gap(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max())


def test_mean_pool_ignores_padding_by_hand() -> None:
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, -100.0]]])
    mask = torch.tensor([[1, 1, 0]])
    torch.testing.assert_close(bert.mean_pool(hidden, mask), torch.tensor([[2.0, 3.0]]))
    with pytest.raises(ValueError, match="attention_mask"):
        bert.mean_pool(hidden, torch.ones(1, 2))


def test_the_package_pools_by_mean() -> None:
    """The package's 1_Pooling config says mean pooling, which the lab's embedding is."""
    config = json.loads((bert.default_model_path() / "1_Pooling" / "config.json").read_text())
    assert config["pooling_mode_mean_tokens"] and not config["pooling_mode_cls_token"]


@pytest.mark.parametrize("text", SENTENCES)
def test_the_forward_by_hand_is_transformers_bert(loaded, text: str) -> None:
    """The reference below is trusted because, unmasked, it is BertModel's own pass."""
    model, tokenizer = loaded
    enc = tokenizer(text, return_tensors="pt")
    maps, hidden = bert_by_hand(model, enc["input_ids"][0], torch.ones(6, 12))
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    assert _gap(maps, torch.stack(out.attentions, 1)[0]) <= MAP_TOLERANCE
    assert _gap(hidden, out.last_hidden_state[0]) <= EMBEDDING_TOLERANCE


@pytest.mark.parametrize("text", SENTENCES)
def test_unmasked_lab_is_attention_maps_and_the_mean_of_bertmodel(loaded, text: str) -> None:
    model, tokenizer = loaded
    tokens, maps = bert.attention_maps(model, tokenizer, text)
    got_tokens, got_maps, got_emb = bert.lab_outputs(model, tokenizer, text)
    assert got_tokens == tokens
    assert _gap(got_maps, maps) <= MAP_TOLERANCE
    with torch.no_grad():
        hidden = model(**tokenizer(text, return_tensors="pt")).last_hidden_state[0]
    by_hand = sum(hidden[t] for t in range(hidden.shape[0])) / hidden.shape[0]
    assert _gap(got_emb, by_hand) <= EMBEDDING_TOLERANCE


@pytest.mark.parametrize("name", list(MASKS))
@pytest.mark.parametrize("text", SENTENCES)
def test_masked_lab_is_the_forward_that_zeroes_heads_by_hand(loaded, text: str, name: str) -> None:
    model, tokenizer = loaded
    mask = MASKS[name]
    ids, maps, embedding = _lab(model, tokenizer, text, mask)
    ref_maps, ref_hidden = bert_by_hand(model, ids, mask)
    ref_embedding = ref_hidden.mean(0)
    assert _gap(maps, ref_maps) <= MAP_TOLERANCE, name
    assert _gap(embedding, ref_embedding) <= EMBEDDING_TOLERANCE, name
    # The same comparison fails a model that ignores its mask: the mask moves the reference's
    # embedding, and the maps after the first masked layer, by far more than the tolerance.
    free_maps, free_hidden = bert_by_hand(model, ids, torch.ones(6, 12))
    first = int((mask != 1).any(1).nonzero()[0])
    assert _gap(ref_embedding, free_hidden.mean(0)) > MOVED * EMBEDDING_TOLERANCE, name
    assert _gap(ref_maps[first + 1 :], free_maps[first + 1 :]) > MOVED * MAP_TOLERANCE, name


def test_a_masked_heads_map_is_its_softmax_and_earlier_layers_are_untouched(loaded) -> None:
    """The library's convention, as the lab draws it (faded): not zeros."""
    model, tokenizer = loaded
    _, free, _ = _lab(model, tokenizer, SENTENCES[1], torch.ones(6, 12))
    _, masked, _ = _lab(model, tokenizer, SENTENCES[1], MASKS["head 2-4 off"])
    assert _gap(masked[:3], free[:3]) == 0.0  # layers 0-2 run before any masked output
    torch.testing.assert_close(masked[2, 4].sum(-1), torch.ones(masked.shape[-1]))
    assert all(_gap(masked[layer], free[layer]) > MOVED * MAP_TOLERANCE for layer in range(3, 6))


def test_all_heads_off_makes_tokens_context_free(loaded) -> None:
    """With every head off a token's final state ignores the other tokens."""
    model, tokenizer = loaded
    off = torch.zeros(6, 12)
    a = tokenizer("the cat sat", return_tensors="pt")["input_ids"][0]
    b = tokenizer("the dog sat", return_tensors="pt")["input_ids"][0]
    _, ha = bert_by_hand(model, a, off)
    _, hb = bert_by_hand(model, b, off)
    same = [0, 1, 3, 4]  # [CLS] the · sat [SEP]
    assert _gap(ha[same], hb[same]) <= EMBEDDING_TOLERANCE
    assert _gap(ha[2], hb[2]) > MOVED * EMBEDDING_TOLERANCE  # cat and dog still differ
    _, _, embedding = _lab(model, tokenizer, "the cat sat", off)
    assert _gap(embedding, ha.mean(0)) <= EMBEDDING_TOLERANCE


def test_byte_planes_keep_each_weight_within_half_a_step_and_compress(tmp_path) -> None:
    """scripts/export_lab_model.py's to_planes on a one-MatMul graph: the weight is rebuilt
    from its two byte planes within half a step (1/512 of its row's root mean square) of the
    original, onnxruntime computes with it, and the file compresses below its float16 size."""
    import gzip
    import importlib.util

    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    spec = importlib.util.spec_from_file_location(
        "export_lab_model", Path(__file__).resolve().parents[2] / "scripts" / "export_lab_model.py"
    )
    export = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(export)
    rng = np.random.default_rng(0)
    weight = (rng.standard_normal((64, 96)) * rng.uniform(0.01, 3, (64, 1))).astype(np.float32)
    weight[3, 5] = 40.0  # one large value: its row's step follows the row's size, not this value
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 96])],
        [numpy_helper.from_array(weight, name="w")],
    )
    src, dst = tmp_path / "fp32.onnx", tmp_path / "planes.onnx"
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
    onnx.save(model, str(src))
    export.to_planes(src, dst)
    stored = {i.name: numpy_helper.to_array(i) for i in onnx.load(str(dst)).graph.initializer}
    assert stored["w__high"].dtype == np.int8 and stored["w__low"].dtype == np.uint8
    rebuilt = (stored["w__high"].astype(np.float64) * 256 + stored["w__low"]) * stored["w__scale"]
    step = np.sqrt((weight.astype(np.float64) ** 2).mean(axis=1, keepdims=True)) / 512
    assert np.all(np.abs(rebuilt - weight) <= step / 2 * (1 + 1e-6))
    x = rng.standard_normal((1, 64)).astype(np.float32)
    got = ort.InferenceSession(str(dst), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, x @ rebuilt.astype(np.float32), rtol=1e-5, atol=1e-5)
    assert len(gzip.compress(dst.read_bytes())) < weight.size * 2  # under float16's bytes


def test_the_stages_run_one_after_another_are_the_whole_model(tmp_path, tiny_bert) -> None:
    """scripts/export_lab_model.py on a small random BERT: the exported graph cut into one
    stage per layer, packed and read back as lab/session.js reads it, then run stage after
    stage in onnxruntime, gives LabModel's maps and embedding under a head mask; each stage
    holds only its own layer's weights."""
    import importlib.util
    import struct
    import warnings

    import numpy as np
    import onnx

    spec = importlib.util.spec_from_file_location(
        "export_lab_model", Path(__file__).resolve().parents[2] / "scripts" / "export_lab_model.py"
    )
    export = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(export)
    # MiniLM's vocabulary size: the export traces with real word-piece ids.
    model = tiny_bert(seed=3, num_hidden_layers=3, max_position_embeddings=64, vocab_size=30522)
    model.set_attn_implementation("eager")
    path = tmp_path / "fp32.onnx"
    with warnings.catch_warnings():  # the exporter's own deprecation warnings
        warnings.simplefilter("ignore")
        export.export_fp32(model, path)
    stages = bert.LabStages(model).stages()
    parts = export.split_stages(path, stages)
    packed = export.pack_stages(parts, stages)
    (length,) = struct.unpack("<I", packed[:4])
    header = json.loads(packed[4 : 4 + length])
    assert header["format"] == export.STAGES_FORMAT
    assert [(s["inputs"], s["outputs"]) for s in header["stages"]] == stages
    at = 4 + length
    for stage, part in zip(header["stages"], parts, strict=True):
        assert packed[at : at + stage["bytes"]] == part
        at += stage["bytes"]
    assert at == len(packed)
    # Each stage holds its own layer's weights (the first, the embeddings' too), no other's.
    stored = [
        sum(int(np.prod(i.dims)) for i in onnx.load_from_string(p).graph.initializer)
        for p in parts
    ]
    own = [sum(w.numel() for w in layer.parameters()) for layer in model.encoder.layer]
    own[0] += sum(w.numel() for w in model.embeddings.parameters())
    print(f"\nstage weights {stored}, the layers' own {own}")
    for got, expected in zip(stored, own, strict=True):  # the exporter folds a few constants
        assert abs(got - expected) <= 0.1 * expected
    run = export.StagedRun(parts, stages)
    ids = torch.tensor([[2, 17, 5, 9, 30, 11, 3]])
    mask = torch.ones(3, model.config.num_attention_heads)
    mask[1] = 0.0  # the middle layer's heads off
    with torch.inference_mode():
        maps, embedding = bert.LabModel(model)(ids, torch.ones_like(ids), mask)
    got_maps, got_embedding = run(ids.numpy(), np.ones((1, 7), np.int64), mask.numpy())
    assert float(np.abs(got_maps[:, 0] - maps.numpy()).max()) <= MAP_TOLERANCE
    assert float(np.abs(got_embedding - embedding.numpy()).max()) <= EMBEDDING_TOLERANCE
    # The mask reaches the stages: switching the head off moved the later layers.
    unmasked, plain = run(ids.numpy(), np.ones((1, 7), np.int64), np.ones_like(mask.numpy()))
    assert np.array_equal(unmasked[:2], got_maps[:2])
    assert float(np.abs(plain - got_embedding).max()) > MOVED * EMBEDDING_TOLERANCE
    # A batch, padded as the page pads its candidate sentences: each row is its text run
    # alone, maps over its own tokens and embedding (the padding changes nothing).
    rows = [[2, 40, 41, 3], ids[0].tolist(), [2, 50, 3]]
    batch_maps, batch_embedding = run(*export.pad_batch(rows), mask.numpy())
    assert batch_maps.shape[:2] == (3, 3) and batch_embedding.shape[0] == 3
    for b, row in enumerate(rows):
        one = torch.tensor([row])
        with torch.inference_mode():
            maps, embedding = bert.LabModel(model)(one, torch.ones_like(one), mask)
        t = len(row)
        assert float(np.abs(batch_maps[:, b, :, :t, :t] - maps.numpy()).max()) <= MAP_TOLERANCE
        assert float(np.abs(batch_embedding[b] - embedding[0].numpy()).max()) <= EMBEDDING_TOLERANCE
        assert np.all(batch_maps[:, b, :, :, t:] == 0)  # no token looks at the padding
