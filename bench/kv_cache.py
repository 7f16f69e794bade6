"""Incremental decoding with a key/value cache: multi-head, grouped-query, multi-query.

    .venv/bin/python bench/kv_cache.py [--quick] [--repeats 5] [--json bench/results/kv_cache.json]

One causal toy decoder (`mha_lib.experiments.toy_transformer.ToyTransformer`, random
weights: decoding cost does not depend on what was learned) per number of key/value heads,
all with the same 8 query heads, d_model 256, 4 layers, batch 4, float32, one thread.
For each context length the cache is filled with a prompt of that length (not timed), then
`--new` tokens are generated one at a time and timed; the variants run interleaved,
repeat after repeat (after one warm-up each: the library's timing harness,
`mha_lib.analysis.cost.interleaved_samples`), so that the machine's load falls on all of
them alike, and the table shows each one's median time per token and its ratio to
multi-head attention measured in the same run. Peak memory: each variant decodes to the
longest context in a process of its own, and the growth of that process's peak resident
memory (VmHWM, reset before the cache is made) over its resident memory then is reported
beside the cache's bytes as counted (`cache_bytes`) and as allocated (`KVCache.nbytes`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from mha_lib.analysis.cost import interleaved_samples  # noqa: E402
from mha_lib.core.kv_cache import cache_bytes  # noqa: E402
from mha_lib.experiments.decoding import forward_cached, new_cache  # noqa: E402
from mha_lib.experiments.reproduce import provenance  # noqa: E402
from mha_lib.experiments.toy_transformer import ToyTransformer  # noqa: E402

HEADS, D_MODEL, LAYERS, BATCH, VOCAB = 8, 256, 4, 4, 64
KV_HEADS = (8, 4, 2, 1)
PREFILL_CHUNK = 256


def build(kv: int, max_len: int) -> ToyTransformer:
    torch.manual_seed(0)
    model = ToyTransformer(VOCAB, VOCAB, max_len, d_model=D_MODEL, num_heads=HEADS,
                           num_layers=LAYERS, num_kv_heads=kv, causal=True)  # fmt: skip
    return model.eval()


def decoder(model: ToyTransformer, context: int, new: int) -> Callable[[], object]:
    """A call that generates `new` tokens after a prompt of `context` tokens, greedily.

    The prompt is cached once, here (not timed); each call rewinds the cache to it and
    generates the same `new` tokens again.
    """
    g = torch.Generator().manual_seed(context)
    prompt = torch.randint(0, VOCAB, (BATCH, context), generator=g)
    cache = new_cache(model, BATCH, context + new)
    for start in range(0, context, PREFILL_CHUNK):  # chunks keep the prompt's masks small
        first = forward_cached(model, prompt[:, start : start + PREFILL_CHUNK], cache)

    def generate() -> None:
        cache.length = context
        logits = first
        for _ in range(new):
            logits = forward_cached(model, logits[:, -1:].argmax(-1), cache)

    return generate


def memory_child(kv: int, context: int, new: int) -> dict[str, float]:
    """Run in a fresh process: peak resident growth while decoding to `context + new`."""
    torch.set_num_threads(1)
    model = build(kv, context + new)
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, VOCAB, (BATCH, context), generator=g)
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak (VmHWM) to the current RSS
    before = _status_kib("VmRSS")
    cache = new_cache(model, BATCH, context + new)
    logits = forward_cached(model, prompt[:, :1], cache)
    for t in range(1, context + new):  # token by token, as generation does
        nxt = prompt[:, t : t + 1] if t < context else logits[:, -1:].argmax(-1)
        logits = forward_cached(model, nxt, cache)
    after = _status_kib("VmHWM")
    return {"peak_growth_mb": (after - before) / 1024, "allocated_mb": cache.nbytes() / 2**20}


def _status_kib(field: str) -> int:
    """A memory field of /proc/self/status, in KiB (VmRSS now, VmHWM the peak)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--new", type=int, default=16)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--child", nargs=3, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(memory_child(*args.child)))
        return
    torch.set_num_threads(1)
    contexts = (64, 256) if args.quick else (256, 1024, 2048)
    repeats = 2 if args.quick else args.repeats
    longest = max(contexts)
    models = {kv: build(kv, longest + args.new) for kv in KV_HEADS}
    start = time.time()
    calls = {f"{kv}/{n}": decoder(models[kv], n, args.new) for n in contexts for kv in KV_HEADS}
    per_call = interleaved_samples(calls, repeats)["wall"]  # each repeat visits every variant
    samples = {name: [t / args.new for t in s] for name, s in per_call.items()}  # per token
    rows = []
    for n in contexts:
        mha = statistics.median(samples[f"{HEADS}/{n}"])
        for kv in KV_HEADS:
            s = samples[f"{kv}/{n}"]
            rows.append({
                "num_kv_heads": kv, "context": n, "ms_per_token": 1e3 * statistics.median(s),
                "ms_min": 1e3 * min(s), "ms_max": 1e3 * max(s),
                "ratio_to_mha": statistics.median(s) / mha,
                "cache_mb": cache_bytes(num_layers=LAYERS, num_kv_heads=kv,
                                        d_head=D_MODEL // HEADS, tokens=n, batch=BATCH) / 2**20,
            })  # fmt: skip
    memory = []
    for kv in KV_HEADS:
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(kv), str(longest), str(args.new)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        counted = cache_bytes(num_layers=LAYERS, num_kv_heads=kv, d_head=D_MODEL // HEADS,
                              tokens=longest + args.new, batch=BATCH) / 2**20  # fmt: skip
        memory.append({"num_kv_heads": kv, "tokens": longest + args.new,
                       "counted_mb": counted, **json.loads(out.stdout)})  # fmt: skip
    result = {
        "settings": {"heads": HEADS, "d_model": D_MODEL, "layers": LAYERS, "batch": BATCH,
                     "new_tokens": args.new, "repeats": repeats, "contexts": list(contexts),
                     "dtype": "float32"},  # fmt: skip
        "per_token": rows,
        "memory": memory,
        "seconds": time.time() - start,
        "load_average": list(__import__("os").getloadavg()),
        "provenance": provenance(threads=1),
    }
    print(f"{'kv':>3} {'context':>7} {'ms/token':>9} {'ratio':>6} {'cache MB':>9}")
    for r in rows:
        print(f"{r['num_kv_heads']:>3} {r['context']:>7} {r['ms_per_token']:>9.3f} "
              f"{r['ratio_to_mha']:>6.2f} {r['cache_mb']:>9.1f}")  # fmt: skip
    for m in memory:
        print(f"kv={m['num_kv_heads']}: counted {m['counted_mb']:.1f} MB, allocated "
              f"{m['allocated_mb']:.1f} MB, peak growth {m['peak_growth_mb']:.1f} MB")  # fmt: skip
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
