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

export function createSession(ort, model) {
  return ort.InferenceSession.create(model, { executionProviders: ["wasm"], graphOptimizationLevel: "all" });
}

// One run: `ids` (numbers), `mask` (Float32Array, layers × heads). Returns every map (a
// Float32Array of its own, (layers, heads, T, T)), the sentence embedding and the run's ms.
export async function runSession(ort, session, ids, mask, layers, heads) {
  const T = ids.length;
  const t0 = performance.now();
  const out = await session.run({
    input_ids: new ort.Tensor("int64", BigInt64Array.from(ids, BigInt), [1, T]),
    attention_mask: new ort.Tensor("int64", new BigInt64Array(T).fill(1n), [1, T]),
    head_mask: new ort.Tensor("float32", mask, [layers, heads]),
  });
  const ms = performance.now() - t0;
  const data = out.attentions.data;
  // A buffer of the maps' own, which a worker can hand over without copying.
  const whole = data.byteOffset === 0 && data.byteLength === data.buffer.byteLength;
  return { maps: whole ? data : data.slice(), embedding: Float32Array.from(out.sentence_embedding.data), ms };
}
