// The model and its tokenizer: the packaged MiniLM, exported to ONNX at build time, run by
// ONNX Runtime Web (WebAssembly, one thread) in the reader's browser. Nothing leaves the page.

import { flatMask } from "./heads.js";
import { WordPiece } from "./wordpiece.js";

const HERE = new URL(".", import.meta.url);
const VENDOR = new URL("../vendor/onnxruntime-web/", HERE);

// A file next to this module, or an error that names it (the model by its whole path).
async function fetchOk(name, { wholePath = false } = {}) {
  const url = new URL(name, HERE);
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${wholePath ? url.pathname : name}: HTTP ${res.status}`);
  return res;
}

// The body of `res`, reporting (bytes so far, bytes in all or 0) as it arrives.
async function readBytes(res, onProgress) {
  const total = Number(res.headers.get("content-length")) || 0;
  if (!res.body || !onProgress) return new Uint8Array(await res.arrayBuffer());
  const reader = res.body.getReader();
  const chunks = [];
  let got = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    got += value.length;
    onProgress(got, total);
  }
  const out = new Uint8Array(got);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

export class LabEngine {
  constructor() {
    this.stats = { loadMs: null, fetchMs: null, createMs: null, bytes: {}, runs: [] };
    this.queue = Promise.resolve();
  }

  async load(onProgress) {
    const t0 = performance.now();
    this.meta = await (await fetchOk("lab-model.json")).json();
    const [vocab, ort] = await Promise.all([
      fetchOk("vocab.txt").then((r) => r.text()),
      import(new URL("ort.wasm.min.js", VENDOR).href),
    ]);
    this.tokenizer = new WordPiece(vocab);
    this.ort = ort;
    ort.env.wasm.numThreads = 1; // no cross-origin isolation on a static site: one thread
    ort.env.wasm.proxy = false;
    ort.env.wasm.wasmPaths = {
      mjs: new URL("ort-wasm-simd-threaded.js", VENDOR).href,
      wasm: new URL("ort-wasm-simd-threaded.wasm", VENDOR).href,
    };
    ort.env.logLevel = "error";
    const model = await readBytes(await fetchOk("minilm-lab.onnx", { wholePath: true }), onProgress);
    const t1 = performance.now();
    this.session = await ort.InferenceSession.create(model, {
      executionProviders: ["wasm"],
      graphOptimizationLevel: "all",
    });
    const t2 = performance.now();
    Object.assign(this.stats, { loadMs: t2 - t0, fetchMs: t1 - t0, createMs: t2 - t1 });
    this.L = this.meta.layers;
    this.H = this.meta.heads;
  }

  encode(text) {
    if (typeof text !== "string" || text.trim() === "") throw new TypeError("text is empty");
    return this.tokenizer.encode(text, this.meta.max_positions);
  }

  // Serialised: one session runs one call at a time.
  run(text, headMask) {
    const job = this.queue.then(() => this.runNow(text, headMask));
    this.queue = job.catch(() => {});
    return job;
  }

  async runNow(text, headMask) {
    const { tokens, ids, truncated } = this.encode(text);
    const mask = flatMask(headMask, this.L, this.H);
    const T = ids.length;
    const ort = this.ort;
    const t0 = performance.now();
    const out = await this.session.run({
      input_ids: new ort.Tensor("int64", BigInt64Array.from(ids, BigInt), [1, T]),
      attention_mask: new ort.Tensor("int64", new BigInt64Array(T).fill(1n), [1, T]),
      head_mask: new ort.Tensor("float32", mask, [this.L, this.H]),
    });
    const ms = performance.now() - t0;
    this.stats.runs.push({ tokens: T, ms });
    return { tokens, truncated, T, maps: out.attentions.data, embedding: Array.from(out.sentence_embedding.data), ms };
  }
}

// The benchmark's committed numbers (bench/lab.py), or null when the site has none.
export const benchNumbers = () => fetch(new URL("lab-bench.json", HERE)).then((r) => (r.ok ? r.json() : null)).catch(() => null);
