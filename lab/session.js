// The model's session: ONNX Runtime Web (WebAssembly, one thread) loaded, a session made from
// the model's bytes, and one run on a text's ids under a head mask. worker.js does this off
// the page's main thread, so that a long text's run never freezes the page; engine.js does it
// on the page itself where a browser has no module workers. Both give the same numbers.

import { cachedBytes } from "./store.js";

// ONNX Runtime Web from the site's own copy (`vendor`: the URL of its folder); its WebAssembly
// through the lab's store (store.js), so that it is downloaded once.
export async function loadRuntime(vendor) {
  const ort = await import(new URL("ort.wasm.min.js", vendor).href);
  ort.env.wasm.numThreads = 1; // no cross-origin isolation on a static site: one thread
  ort.env.wasm.proxy = false;
  const wasm = new URL("ort-wasm-simd-threaded.wasm", vendor);
  const { bytes } = await cachedBytes(wasm, JSON.stringify(ort.env.versions), async () => {
    const res = await fetch(wasm);
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    return new Uint8Array(await res.arrayBuffer());
  });
  ort.env.wasm.wasmBinary = bytes;
  ort.env.wasm.wasmPaths = { mjs: new URL("ort-wasm-simd-threaded.js", vendor).href };
  ort.env.logLevel = "error";
  return ort;
}

// The model file's stages (scripts/export_lab_model.py's pack_stages): the header's length
// (uint32, little-endian), the header (JSON), then each stage's ONNX model in turn.
export function unpackStages(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = view.getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + length)));
  if (header.format !== "mha-lab-stages/1") throw new Error(`unknown model format ${header.format}`);
  let at = 4 + length;
  return header.stages.map(({ inputs, outputs, bytes: size }) => {
    const part = bytes.subarray(at, at + size);
    at += size;
    return { inputs, outputs, part };
  });
}

// One session per stage (a layer each, the first with the embeddings), and a memory of recent
// texts' runs: each run's mask, and each layer's maps and output.
export async function createSession(ort, model) {
  const stages = unpackStages(model);
  const options = { executionProviders: ["wasm"], graphOptimizationLevel: "all" };
  const sessions = [];
  for (const s of stages) sessions.push(await ort.InferenceSession.create(s.part, options));
  return { stages, sessions, memory: new Map() };
}

const REMEMBERED = 8; // texts (or batches) whose layers are kept: the reader's, the candidates, a few more

// The first layer whose mask row differs between `a` and `b` (`layers` when none does).
function firstChanged(a, b, layers, heads) {
  for (let l = 0; l < layers; l++) {
    for (let h = 0; h < heads; h++) if (a[l * heads + h] !== b[l * heads + h]) return l;
  }
  return layers;
}

// One run of a batch of texts: `batch` (each text's ids, numbers), `mask` (Float32Array,
// layers × heads). The texts are padded to the longest (id 0, attention mask 0: no token looks
// at the padding, and the sentence embedding averages real tokens only), so that a few short
// sentences take one run of each layer instead of one each. Hands each layer's maps (a
// Float32Array, (batch, heads, T, T)) to `onLayer(layer, maps)` as soon as they are known, in
// order, so that the page can draw a layer while the next one runs; returns each text's
// sentence embedding, the run's ms and the first layer it ran (`from`). A layer's output
// depends only on the texts and the mask rows of the layers up to it, so a batch run before
// keeps its layers below the first changed row. Two runs of each batch are kept: its first (on
// the page, every head on) and its latest, so that switching a head back and then another one
// reruns from the new head's layer either way; a run made with `keep` false (the scale's random
// masks, one-off) is not kept as the latest. `onLayer` must not keep the array it is given: it
// stays in memory.
export async function runSession(ort, model, batch, mask, layers, heads, onLayer = () => {}, keep = true) {
  const B = batch.length;
  const T = Math.max(...batch.map((ids) => ids.length));
  const key = batch.map((ids) => ids.join(" ")).join("|");
  const t0 = performance.now();
  const runs = model.memory.get(key) || [];
  model.memory.delete(key); // re-inserted below: the most recent batch last
  let from = 0;
  let near = null; // the kept run that shares the most layers with this mask
  for (const r of runs) {
    const shared = firstChanged(r.mask, mask, layers, heads);
    if (near === null || shared > from) [near, from] = [r, shared];
  }
  let run = near;
  if (from < layers) {
    run = { mask: Float32Array.from(mask), maps: [], hidden: [], embeddings: null };
    for (let l = 0; l < from; l++) {
      [run.maps[l], run.hidden[l + 1]] = [near.maps[l], near.hidden[l + 1]];
      onLayer(l, run.maps[l]);
    }
    const ids = new BigInt64Array(B * T); // 0: [PAD]
    const attention = new BigInt64Array(B * T);
    batch.forEach((row, b) => {
      ids.set(BigInt64Array.from(row, BigInt), b * T);
      attention.fill(1n, b * T, b * T + row.length);
    });
    const feed = {
      input_ids: new ort.Tensor("int64", ids, [B, T]),
      attention_mask: new ort.Tensor("int64", attention, [B, T]),
      head_mask: new ort.Tensor("float32", mask, [layers, heads]),
    };
    for (let l = from; l < layers; l++) {
      const { inputs, outputs } = model.stages[l];
      const given = {};
      for (const name of inputs) given[name] = name.startsWith("hidden_") ? run.hidden[l] : feed[name];
      const out = await model.sessions[l].run(given);
      run.maps[l] = out[outputs[0]].data;
      if (l < layers - 1) run.hidden[l + 1] = out[outputs[1]];
      else {
        const all = out[outputs[1]].data;
        const D = all.length / B;
        run.embeddings = batch.map((_, b) => all.slice(b * D, (b + 1) * D));
      }
      onLayer(l, run.maps[l]);
    }
  } else {
    for (let l = 0; l < layers; l++) onLayer(l, run.maps[l]);
  }
  const kept = from < layers && keep ? (runs.length === 0 ? [run] : [runs[0], run]) : runs;
  if (kept.length > 0) model.memory.set(key, kept);
  while (model.memory.size > REMEMBERED) model.memory.delete(model.memory.keys().next().value);
  return { embeddings: run.embeddings.map((e) => e.slice()), ms: performance.now() - t0, from };
}
