// The model and its tokenizer: the packaged MiniLM, exported to ONNX at build time, run by
// ONNX Runtime Web (WebAssembly, one thread) in the reader's browser, in a module worker
// (worker.js) so that the page's main thread stays free while it runs; on the page itself
// where a browser has no module workers. Nothing leaves the page.

import { flatMask } from "./heads.js";
import { createSession, loadRuntime, runSession } from "./session.js";
import { cachedBytes } from "./store.js";
import { WordPiece } from "./wordpiece.js";

const HERE = new URL(".", import.meta.url);
const VENDOR = new URL("../vendor/onnxruntime-web/", HERE);

// A file next to this module, or an error that the page shows the reader: the server's
// status, without the file's name (the browser's network panel has it).
async function fetchOk(name) {
  const res = await fetch(new URL(name, HERE));
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return res;
}

// The model as the site serves it: its stages, gzip-compressed (scripts/export_lab_model.py), inflated here
// by the browser's own DecompressionStream, so that any static server can serve it as it is.
const MODEL_FILE = "minilm-lab.stages.gz";

async function inflate(bytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
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

// The model in worker.js, asked by messages; each answer settles the question of its id, and
// a run's layers ({id, layer, maps}) go to that question's `onLayer` as they arrive.
class WorkerRunner {
  where = "worker";

  // A worker whose modules loaded (it answered), or an error: module workers fail here.
  static async start() {
    const runner = new WorkerRunner(new Worker(new URL("worker.js", HERE), { type: "module", name: "mha-lab-model" }));
    await runner.ask({ kind: "hello" });
    return runner;
  }

  constructor(worker) {
    this.worker = worker;
    this.asked = 0;
    this.waiting = new Map();
    this.broken = null;
    worker.addEventListener("message", ({ data }) => {
      const waiting = this.waiting.get(data.id);
      if (!waiting) return;
      if (data.layer !== undefined) {
        waiting.onLayer(data.layer, data.maps);
        return;
      }
      this.waiting.delete(data.id);
      if (data.error !== undefined) waiting.reject(new Error(data.error));
      else waiting.resolve(data);
    });
    worker.addEventListener("error", (event) => {
      event.preventDefault();
      this.broken = new Error(event.message || "the model's worker stopped");
      for (const waiting of this.waiting.values()) waiting.reject(this.broken);
      this.waiting.clear();
    });
  }

  ask(message, transfer = [], onLayer = () => {}) {
    if (this.broken) return Promise.reject(this.broken);
    const id = ++this.asked;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject, onLayer });
      this.worker.postMessage({ id, ...message }, transfer);
    });
  }

  runtime(vendor) {
    return this.ask({ kind: "runtime", vendor: vendor.href });
  }

  create(model) {
    return this.ask({ kind: "create", model }, [model.buffer]);
  }

  run(batch, mask, layers, heads, onLayer, keep) {
    return this.ask({ kind: "run", batch, mask, layers, heads, maps: onLayer !== null, keep }, [], onLayer || undefined);
  }
}

// The same on the page's own thread.
class PageRunner {
  where = "page";

  async runtime(vendor) {
    this.ort = await loadRuntime(vendor);
  }

  async create(model) {
    this.session = await createSession(this.ort, model);
  }

  run(batch, mask, layers, heads, onLayer, keep) {
    return runSession(this.ort, this.session, batch, mask, layers, heads, onLayer || undefined, keep);
  }
}

const startRunner = () => WorkerRunner.start().catch(() => new PageRunner());

export class LabEngine {
  constructor() {
    // thread: where the model runs ("worker", or "page" where a browser has no module workers)
    // cached: the model came from the lab's store (store.js), not the network
    this.stats = { loadMs: null, fetchMs: null, createMs: null, bytes: {}, runs: [], thread: null, cached: false };
    this.queue = Promise.resolve();
  }

  async load(onProgress) {
    const t0 = performance.now();
    const runner = startRunner();
    this.meta = await (await fetchOk("lab-model.json")).json();
    const [vocab] = await Promise.all([
      fetchOk("vocab.txt").then((r) => r.text()),
      runner.then((r) => r.runtime(VENDOR)),
    ]);
    this.tokenizer = new WordPiece(vocab);
    this.runner = await runner;
    const stored = await cachedBytes(new URL(MODEL_FILE, HERE), this.meta.cache_key,
      async () => readBytes(await fetchOk(MODEL_FILE), onProgress));
    this.stats.cached = stored.cached;
    const model = await inflate(stored.bytes);
    const t1 = performance.now();
    await this.runner.create(model);
    const t2 = performance.now();
    Object.assign(this.stats, { loadMs: t2 - t0, fetchMs: t1 - t0, createMs: t2 - t1, thread: this.runner.where });
    this.L = this.meta.layers;
    this.H = this.meta.heads;
  }

  encode(text) {
    if (typeof text !== "string" || text.trim() === "") throw new TypeError("text is empty");
    return this.tokenizer.encode(text, this.meta.max_tokens);
  }

  // Serialised: one session runs one call at a time. `onLayer(layer, maps, T)`, if given, is
  // called as each layer's maps land in `maps` (the run's own (layers, heads, T, T) array, the
  // layers above still empty), so that the page can draw while the model runs on. `keep`
  // false: a one-off mask, not kept as the text's latest run (session.js).
  run(text, headMask, onLayer = null, { keep = true } = {}) {
    return this.queued(() => this.runNow(text, headMask, onLayer, keep));
  }

  // Several texts in one run (padded to the longest): their embeddings, no maps. The page's
  // candidate sentences, a few short ones, take one run of each layer this way.
  runBatch(texts, headMask, { keep = true } = {}) {
    return this.queued(() => this.runBatchNow(texts, headMask, keep));
  }

  queued(work) {
    const job = this.queue.then(work);
    this.queue = job.catch(() => {});
    return job;
  }

  async runNow(text, headMask, onLayer, keep) {
    const { tokens, ids, truncated } = this.encode(text);
    const mask = flatMask(headMask, this.L, this.H);
    const T = ids.length;
    const size = this.H * T * T;
    const maps = new Float32Array(this.L * size);
    const r = await this.runner.run([ids], mask, this.L, this.H, (layer, layerMaps) => {
      maps.set(layerMaps, layer * size);
      if (onLayer) onLayer(layer, maps, T);
    }, keep);
    this.stats.runs.push({ tokens: T, texts: 1, ms: r.ms, from: r.from });
    return { tokens, truncated, T, maps, embedding: Array.from(r.embeddings[0]), ms: r.ms };
  }

  async runBatchNow(texts, headMask, keep) {
    if (texts.length === 0) return [];
    const encoded = texts.map((text) => this.encode(text));
    const mask = flatMask(headMask, this.L, this.H);
    const r = await this.runner.run(encoded.map((e) => e.ids), mask, this.L, this.H, null, keep);
    const T = Math.max(...encoded.map((e) => e.ids.length));
    this.stats.runs.push({ tokens: T, texts: texts.length, ms: r.ms, from: r.from });
    return encoded.map((e, i) => ({ tokens: e.tokens, truncated: e.truncated, T: e.ids.length,
      embedding: Array.from(r.embeddings[i]), ms: r.ms }));
  }
}

// The benchmark's committed numbers (bench/lab.py), or null when the site has none.
export const benchNumbers = () => fetch(new URL("lab-bench.json", HERE)).then((r) => (r.ok ? r.json() : null)).catch(() => null);
