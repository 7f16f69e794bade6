// The live lab (book/lab.md): the packaged MiniLM, exported to ONNX at build time, run by
// ONNX Runtime Web (WebAssembly, one thread) in the reader's browser. Nothing leaves the page.
//
// window.mhaLab: {ready, run(text, headMask), meta, stats}. ready resolves when the model is
// loaded; run resolves to {tokens, attentions[layer][head][query][key], embedding, truncated}.
// headMask: layers × heads numbers (nested or flat), 1 keeps a head, 0 removes it.

import { WordPiece } from "./wordpiece.js";

const HERE = new URL(".", import.meta.url);
const VENDOR = new URL("../vendor/onnxruntime-web/", HERE);
// viridis (matplotlib), 17 stops: perceptually uniform and readable with colour-blindness.
const VIRIDIS = ["440154", "48186a", "472d7b", "424086", "3b528b", "33638d", "2c728e", "26828e", "21918c",
  "1fa088", "28ae80", "3fbc73", "5ec962", "84d44b", "addc30", "d8e219", "fde725"].map((h) => [
  parseInt(h.slice(0, 2), 16), parseInt(h.slice(2, 4), 16), parseInt(h.slice(4, 6), 16)]);

function colour(v) {
  const x = Math.min(Math.max(v, 0), 1) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(x), VIRIDIS.length - 2);
  const f = x - i;
  const a = VIRIDIS[i];
  const b = VIRIDIS[i + 1];
  return [a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1]), a[2] + f * (b[2] - a[2])];
}

const $ = (sel, root = document) => root.querySelector(sel);
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
};
const fmt = (x, digits = 2) => Number(x).toFixed(digits);
const mb = (bytes) => `${fmt(bytes / 1e6, 1)} MB`;

// ------------------------------------------------------------------ words
// Every word of the interface comes from the page's own Markdown (book/lab.md), a hidden list
// `.mha-lab-strings` whose items read "`key`: text with {placeholders}"; gettext translates
// the list with the rest of the page. A missing key or placeholder value throws, naming it.

class LabStringsError extends Error {
  constructor(message) {
    super(`mha-lab strings (book/lab.md): ${message}`);
    this.name = "LabStringsError";
  }
}

const PLACEHOLDER = /\{([a-z0-9_]+)\}/g;
let MESSAGES = null;

function messages(doc = document) {
  if (MESSAGES) return MESSAGES;
  const items = doc.querySelectorAll(".mha-lab-strings li");
  if (items.length === 0) throw new LabStringsError("the page has no .mha-lab-strings list");
  const found = new Map();
  for (const item of items) {
    const whole = item.textContent.replace(/[ \t\r\n]+/g, " ").trim();
    const code = item.querySelector("code");
    const key = code ? code.textContent.trim() : "";
    if (!key || !whole.startsWith(key)) throw new LabStringsError(`an item does not start with its \`key\`: "${whole}"`);
    const rest = whole.slice(key.length);
    const colon = /^\s*[:\uff1a]\s*/.exec(rest); // ": ", or a full-width colon in translation
    if (!colon) throw new LabStringsError(`message "${key}" lacks the ": " after its key`);
    if (found.has(key)) throw new LabStringsError(`message "${key}" appears twice`);
    found.set(key, rest.slice(colon[0].length));
  }
  MESSAGES = found;
  return found;
}

// The message `key` in pieces: text, and the values (strings, numbers or DOM nodes) of its
// placeholders, ready for replaceChildren().
function tParts(key, values = {}) {
  const template = messages().get(key);
  if (template === undefined) throw new LabStringsError(`no message "${key}"`);
  const parts = [];
  let at = 0;
  for (const m of template.matchAll(PLACEHOLDER)) {
    const name = m[1];
    if (!Object.prototype.hasOwnProperty.call(values, name) || values[name] == null) {
      throw new LabStringsError(`message "${key}": no value for its placeholder {${name}}`);
    }
    parts.push(template.slice(at, m.index), values[name] instanceof Node ? values[name] : String(values[name]));
    at = m.index + m[0].length;
  }
  parts.push(template.slice(at));
  return parts.filter((p) => p !== "");
}

// The message `key` as text, its {placeholders} filled in from `values`.
const t = (key, values = {}) => tParts(key, values).join("");

// The page's own elements that name a message: data-lab-text (their text), data-lab-label
// (their aria-label; not spelt aria-label, so that no extension takes the key for words).
function applyPageStrings(doc = document) {
  for (const node of doc.querySelectorAll("[data-lab-text]")) node.textContent = t(node.dataset.labText);
  for (const node of doc.querySelectorAll("[data-lab-label]")) node.setAttribute("aria-label", t(node.dataset.labLabel));
}

// ------------------------------------------------------------------ model

class LabEngine {
  constructor() {
    this.stats = { loadMs: null, fetchMs: null, createMs: null, bytes: {}, runs: [] };
    this.queue = Promise.resolve();
  }

  async fetchBytes(url, onProgress) {
    const res = await fetch(url);
    if (!res.ok) throw new Error(`${url.pathname || url}: HTTP ${res.status}`);
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

  async load(onProgress) {
    const t0 = performance.now();
    const metaRes = await fetch(new URL("lab-model.json", HERE));
    if (!metaRes.ok) throw new Error(`lab-model.json: HTTP ${metaRes.status}`);
    this.meta = await metaRes.json();
    const [vocab, ort] = await Promise.all([
      fetch(new URL("vocab.txt", HERE)).then((r) => {
        if (!r.ok) throw new Error(`vocab.txt: HTTP ${r.status}`);
        return r.text();
      }),
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
    const model = await this.fetchBytes(new URL("minilm-lab.onnx", HERE), onProgress);
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

  maskArray(headMask) {
    let flat;
    if (headMask == null) flat = new Array(this.L * this.H).fill(1);
    else if (ArrayBuffer.isView(headMask)) flat = Array.from(headMask);
    else if (Array.isArray(headMask)) flat = headMask.flat(Infinity);
    else throw new TypeError("headMask must be an array of numbers, layers × heads");
    if (flat.length !== this.L * this.H || flat.some((v) => typeof v !== "number" || !Number.isFinite(v))) {
      throw new TypeError(`headMask must hold ${this.L} × ${this.H} finite numbers, got ${flat.length} values`);
    }
    return Float32Array.from(flat);
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
    const mask = this.maskArray(headMask);
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

// Nested arrays for the public surface: attentions[layer][head][query][key].
function nested(maps, L, H, T) {
  const out = [];
  for (let l = 0; l < L; l++) {
    const layer = [];
    for (let h = 0; h < H; h++) {
      const head = [];
      for (let q = 0; q < T; q++) {
        const start = ((l * H + h) * T + q) * T;
        head.push(Array.from(maps.subarray(start, start + T)));
      }
      layer.push(head);
    }
    out.push(layer);
  }
  return out;
}

function cosine(a, b) {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return aa > 0 && bb > 0 ? ab / Math.sqrt(aa * bb) : NaN;
}

// ------------------------------------------------------------------ page

const BOOK_SENTENCES = [
  "The cat sat on the mat because it was tired.",
  "The dog chased the ball.",
];

class LabPage {
  constructor(root, engine) {
    this.root = root;
    this.engine = engine;
    this.on = null; // Float32Array L*H, 1 = kept
    this.selected = [0, 0];
    this.result = null;
    this.baseline = null;
    this.pending = null;
  }

  get L() {
    return this.engine.L;
  }

  get H() {
    return this.engine.H;
  }

  status(text, kind = "info") {
    const box = $("#mha-lab-status", this.root);
    box.textContent = text;
    box.dataset.kind = kind;
  }

  build() {
    const meta = this.engine.meta;
    this.on = new Float32Array(this.L * this.H).fill(1);
    const sentences = [...BOOK_SENTENCES, ...meta.book_sentences];
    const controls = $("#mha-lab-controls", this.root);
    controls.replaceChildren();

    const text = el("textarea", { id: "mha-lab-text", rows: "2", spellcheck: "false" });
    text.value = sentences[0];
    const pick = el("select", { id: "mha-lab-pick", "aria-label": t("pick_label") }, el("option", { value: "", text: t("pick_prompt") }));
    for (const s of sentences) pick.append(el("option", { value: s, text: s }));
    const other = el("input", { id: "mha-lab-other", type: "text", spellcheck: "false" });
    other.value = "A kitten was sleeping on the rug.";
    controls.append(
      el("label", { for: "mha-lab-text", text: t("text_label") }), text, pick,
      el("label", { for: "mha-lab-other", text: t("other_label") }), other,
    );

    const presets = el("div", { class: "mha-lab-presets", role: "group", "aria-label": t("presets_label") });
    const button = (label, id, fn) => {
      const b = el("button", { type: "button", id, text: label });
      b.addEventListener("click", fn);
      presets.append(b);
      return b;
    };
    button(t("all_on"), "mha-lab-all-on", () => this.setAll(1));
    button(t("all_off"), "mha-lab-all-off", () => this.setAll(0));
    const syn = meta.presets.ch5_syntactic;
    const synHeads = [...new Set(Object.values(syn).map((s) => `${s.layer}-${s.head}`))];
    button(t("ch5_button", { heads: synHeads.length }), "mha-lab-ch5", () => this.applyPreset("ch5-syntactic"));
    const steps = meta.presets.ch6_pruned_steps.filter((n) => n > 0);
    const prune = el("select", { id: "mha-lab-ch6", "aria-label": t("ch6_label") },
      el("option", { value: "", text: t("ch6_prompt") }));
    steps.forEach((n, i) => {
      const acc = meta.presets.ch6_accuracy[meta.presets.ch6_pruned_steps.indexOf(n)];
      prune.append(el("option", { value: String(n), text: t("ch6_option", { heads: n, total: this.L * this.H, accuracy: fmt(100 * acc, 1) }) }));
    });
    prune.addEventListener("change", () => prune.value && this.applyPreset(`ch6-importance-${prune.value}`));
    presets.append(prune);
    controls.append(presets);

    let timer = null;
    const later = () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.refresh(true), 250);
    };
    text.addEventListener("input", later);
    other.addEventListener("input", later);
    pick.addEventListener("change", () => {
      if (pick.value) {
        text.value = pick.value;
        this.refresh(true);
      }
    });
    this.buildGrid();
  }

  buildGrid() {
    const grid = $("#mha-lab-grid", this.root);
    grid.replaceChildren();
    grid.style.setProperty("--heads", this.H);
    grid.append(el("span", { class: "mha-lab-corner", "aria-hidden": "true", text: t("grid_corner") }));
    for (let h = 0; h < this.H; h++) grid.append(el("span", { class: "mha-lab-colhead", "aria-hidden": "true", text: String(h) }));
    this.tiles = [];
    this.layerButtons = [];
    const offMark = t("tile_off_mark"); // drawn over a switched-off tile (lab.css)
    for (let l = 0; l < this.L; l++) {
      const lb = el("button", { type: "button", class: "mha-lab-layer", "data-layer": String(l), "aria-pressed": "true" });
      lb.addEventListener("click", () => this.toggleLayer(l));
      lb.addEventListener("keydown", (e) => this.gridKeys(e, l, -1));
      this.layerButtons.push(lb);
      grid.append(lb);
      for (let h = 0; h < this.H; h++) {
        const canvas = el("canvas", { width: "1", height: "1", "aria-hidden": "true" });
        const tile = el("button", { type: "button", class: "mha-lab-tile", "data-layer": String(l), "data-head": String(h),
          "aria-pressed": "true", "data-off": offMark, tabindex: l === 0 && h === 0 ? "0" : "-1" }, canvas, el("span", { class: "mha-lab-bar", "aria-hidden": "true" }));
        tile.addEventListener("click", () => this.toggleHead(l, h));
        tile.addEventListener("focus", () => this.select(l, h));
        tile.addEventListener("mouseenter", () => this.select(l, h));
        tile.addEventListener("keydown", (e) => this.gridKeys(e, l, h));
        this.tiles.push(tile);
        grid.append(tile);
      }
    }
    this.labelTiles();
  }

  // Arrow keys move between heads (one tab stop for the whole grid); Enter or Space switch.
  gridKeys(e, l, h) {
    const moves = { ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowDown: [1, 0], ArrowUp: [-1, 0] };
    let target = null;
    if (moves[e.key]) {
      const [dl, dh] = moves[e.key];
      const nl = Math.min(Math.max(l + dl, 0), this.L - 1);
      const nh = Math.min(Math.max(h + dh, -1), this.H - 1);
      target = nh < 0 ? this.layerButtons[nl] : this.tiles[nl * this.H + nh];
    } else if (e.key === "Home") target = this.layerButtons[l];
    else if (e.key === "End") target = this.tiles[l * this.H + this.H - 1];
    if (target) {
      e.preventDefault();
      for (const b of [...this.tiles, ...this.layerButtons]) b.tabIndex = -1;
      target.tabIndex = 0;
      target.focus();
    }
  }

  labelTiles() {
    for (let l = 0; l < this.L; l++) {
      let kept = 0;
      for (let h = 0; h < this.H; h++) {
        const on = this.on[l * this.H + h] > 0;
        kept += on;
        const tile = this.tiles[l * this.H + h];
        tile.setAttribute("aria-pressed", String(on));
        tile.setAttribute("aria-label", t(on ? "tile_label_on" : "tile_label_off", { layer: l, head: h }));
        tile.title = t(on ? "tile_title_on" : "tile_title_off", { layer: l, head: h });
      }
      const lb = this.layerButtons[l];
      lb.textContent = `${l}`;
      lb.setAttribute("aria-pressed", String(kept > 0));
      const counts = { layer: l, kept, heads: this.H };
      lb.setAttribute("aria-label", t(kept > 0 ? "layer_label_on" : "layer_label_off", counts));
      lb.title = t(kept > 0 ? "layer_title_on" : "layer_title_off", counts);
    }
    const off = this.on.reduce((n, v) => n + (v === 0), 0);
    const total = this.L * this.H;
    $("#mha-lab-count", this.root).textContent = off === 0 ? t("count_all_on")
      : t(off === total ? "count_all_off" : "count_off", { off, total });
  }

  setAll(v) {
    this.on.fill(v);
    this.changed();
  }

  toggleHead(l, h) {
    const i = l * this.H + h;
    this.on[i] = this.on[i] > 0 ? 0 : 1;
    this.select(l, h);
    this.changed();
  }

  toggleLayer(l) {
    const row = this.on.subarray(l * this.H, (l + 1) * this.H);
    row.fill(row.some((v) => v > 0) ? 0 : 1);
    this.changed();
  }

  applyPreset(name) {
    const meta = this.engine.meta.presets;
    this.on.fill(1);
    let m;
    if (name === "ch5-syntactic") {
      for (const s of Object.values(meta.ch5_syntactic)) this.on[s.layer * this.H + s.head] = 0;
    } else if ((m = /^ch6-importance-(\d+)$/.exec(name))) {
      for (const [l, h] of meta.ch6_importance_order.slice(0, Number(m[1]))) this.on[l * this.H + h] = 0;
    } else if (name === "all-off") {
      this.on.fill(0);
    } else if (name !== "all-on") {
      return false;
    }
    this.changed();
    return true;
  }

  changed() {
    this.labelTiles();
    this.refresh(false);
  }

  // Runs the model (and, when the text changed, the all-heads-on baseline), then redraws.
  async refresh(textChanged) {
    const text = $("#mha-lab-text", this.root).value;
    const other = $("#mha-lab-other", this.root).value;
    const note = $("#mha-lab-note", this.root);
    if (text.trim() === "") {
      note.textContent = t(text === "" ? "note_empty" : "note_whitespace");
      note.dataset.kind = "warn";
      return;
    }
    const ticket = {};
    this.pending = ticket;
    try {
      const ones = null;
      if (textChanged || !this.baseline || this.baseline.text !== text || this.baseline.other !== other) {
        const [base, baseOther] = [await this.engine.run(text, ones), other.trim() ? await this.engine.run(other, ones) : null];
        this.baseline = { text, other, res: base, otherRes: baseOther };
      }
      const res = await this.engine.run(text, this.on);
      const resOther = other.trim() ? await this.engine.run(other, this.on) : null;
      if (this.pending !== ticket) return; // a newer request took over
      this.result = res;
      const timing = t("note_timing", { tokens: res.T, ms: fmt(res.ms, 0) });
      note.textContent = res.truncated > 0
        ? t("note_truncated", { positions: this.engine.meta.max_positions, cut: res.truncated, shown: res.T - 2, timing })
        : timing;
      note.dataset.kind = res.truncated > 0 ? "warn" : "info";
      this.drawTiles();
      this.drawLarge();
      this.similarity(resOther);
    } catch (err) {
      if (err instanceof LabStringsError) throw err; // a broken catalogue: fail loudly
      note.textContent = t("note_error", { error: err.message });
      note.dataset.kind = "error";
    }
  }

  similarity(resOther) {
    const box = $("#mha-lab-similarity", this.root);
    if (!resOther || !this.baseline.otherRes) {
      box.textContent = t("similarity_none");
      return;
    }
    const now = cosine(this.result.embedding, resOther.embedding);
    const before = cosine(this.baseline.res.embedding, this.baseline.otherRes.embedding);
    box.replaceChildren(...tParts("similarity", {
      cosine: el("strong", { id: "mha-lab-cos", text: fmt(now, 4) }),
      before: fmt(before, 4),
      change: `${now - before >= 0 ? "+" : "−"}${fmt(Math.abs(now - before), 4)}`,
    }));
  }

  change(l, h) {
    const { maps, T } = this.result;
    const base = this.baseline.res.maps;
    const start = (l * this.H + h) * T * T;
    let worst = 0;
    for (let i = start; i < start + T * T; i++) worst = Math.max(worst, Math.abs(maps[i] - base[i]));
    return worst;
  }

  drawTiles() {
    const { maps, T } = this.result;
    for (let l = 0; l < this.L; l++) {
      for (let h = 0; h < this.H; h++) {
        const tile = this.tiles[l * this.H + h];
        const canvas = tile.querySelector("canvas");
        canvas.width = T;
        canvas.height = T;
        const ctx = canvas.getContext("2d");
        const img = ctx.createImageData(T, T);
        const start = (l * this.H + h) * T * T;
        for (let i = 0; i < T * T; i++) {
          const [r, g, b] = colour(maps[start + i]);
          img.data[4 * i] = r;
          img.data[4 * i + 1] = g;
          img.data[4 * i + 2] = b;
          img.data[4 * i + 3] = 255;
        }
        ctx.putImageData(img, 0, 0);
        const delta = this.change(l, h);
        tile.querySelector(".mha-lab-bar").style.width = `${Math.min(100, 100 * delta)}%`;
        tile.dataset.change = fmt(delta, 4);
      }
    }
  }

  select(l, h) {
    this.selected = [l, h];
    for (const tile of this.tiles) tile.classList.toggle("mha-lab-selected", tile.dataset.layer === String(l) && tile.dataset.head === String(h));
    if (this.result) this.drawLarge();
  }

  drawLarge() {
    const [l, h] = this.selected;
    const { maps, T, tokens } = this.result;
    const canvas = $("#mha-lab-large", this.root);
    const on = this.on[l * this.H + h] > 0;
    const dpr = window.devicePixelRatio || 1;
    const avail = Math.max(200, Math.min(canvas.parentElement.clientWidth || 640, 720));
    const ctx = canvas.getContext("2d");
    ctx.font = "12px sans-serif";
    const step = Math.max(1, Math.ceil(T / 64)); // label every step-th token when T is long
    const label = Math.min(110, Math.max(...tokens.map((tok) => ctx.measureText(tok).width)) + 8);
    const cell = Math.max(1, Math.min(26, Math.floor((avail - label - 4) / T)));
    const size = label + cell * T + 4;
    canvas.width = Math.round(size * dpr);
    canvas.height = Math.round(size * dpr);
    canvas.style.width = `${size}px`;
    canvas.style.height = `${size}px`;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, size, size);
    const start = (l * this.H + h) * T * T;
    for (let q = 0; q < T; q++) {
      for (let k = 0; k < T; k++) {
        const [r, g, b] = colour(maps[start + q * T + k]);
        ctx.fillStyle = `rgb(${r | 0},${g | 0},${b | 0})`;
        ctx.fillRect(label + k * cell, label + q * cell, cell, cell);
      }
    }
    if (!on) {
      ctx.fillStyle = "rgba(255,255,255,0.55)";
      ctx.fillRect(label, label, cell * T, cell * T);
    }
    const textColour = getComputedStyle(this.root).color || "#222";
    ctx.fillStyle = textColour;
    ctx.font = `${Math.min(12, Math.max(9, cell))}px sans-serif`;
    ctx.textBaseline = "middle";
    const clip = (tok) => (ctx.measureText(tok).width > label - 8 ? `${tok.slice(0, 9)}…` : tok);
    for (let i = 0; i < T; i += step) {
      ctx.textAlign = "right";
      ctx.fillText(clip(tokens[i]), label - 4, label + (i + 0.5) * cell);
      ctx.save();
      ctx.translate(label + (i + 0.5) * cell, label - 4);
      ctx.rotate(-Math.PI / 2);
      ctx.textAlign = "left";
      ctx.fillText(clip(tokens[i]), 0, 0);
      ctx.restore();
    }
    // Where each query looks most: the text alternative of the picture.
    const tops = [];
    for (let q = 0; q < T; q++) {
      let best = 0;
      for (let k = 1; k < T; k++) if (maps[start + q * T + k] > maps[start + q * T + best]) best = k;
      tops.push(`${tokens[q]} → ${tokens[best]} (${fmt(maps[start + q * T + best])})`);
    }
    const strongest = `${tops.slice(0, 40).join("; ")}${T > 40 ? "; …" : ""}`;
    canvas.setAttribute("aria-label", t("large_map_label", { layer: l, head: h, strongest }));
    const delta = this.change(l, h);
    $("#mha-lab-large-title", this.root).textContent = t(on ? "large_title_on" : "large_title_off", { layer: l, head: h });
    const change = delta > 0 ? t("large_changed", { change: fmt(delta, 3) }) : t("large_identical");
    $("#mha-lab-large-caption", this.root).textContent = on ? change : t("large_caption_off", { change });
    this.hover = { l, h, label, cell, T, tokens, start, maps };
  }

  hoverAt(event) {
    const box = $("#mha-lab-readout", this.root);
    const hv = this.hover;
    if (!hv) return;
    const rect = event.target.getBoundingClientRect();
    const k = Math.floor((event.clientX - rect.left - hv.label) / hv.cell);
    const q = Math.floor((event.clientY - rect.top - hv.label) / hv.cell);
    if (q < 0 || k < 0 || q >= hv.T || k >= hv.T) {
      box.textContent = "\u00a0";
      return;
    }
    box.textContent = t("readout", { query_token: hv.tokens[q], query: q, key_token: hv.tokens[k], key: k,
      weight: fmt(hv.maps[hv.start + q * hv.T + k], 3) });
  }
}

// How this works: the measurements behind the page, from the build and the benchmark.
function facts(root, engine, bench) {
  const meta = engine.meta;
  const box = document.getElementById("mha-lab-facts");
  if (!box) return;
  const c = meta.candidates;
  const rows = Object.entries(c).map(([name, m]) => el("tr", {},
    el("td", { text: name === meta.precision ? t("precision_used", { precision: name }) : name }), el("td", { text: mb(m.bytes) }),
    el("td", { text: m.max_abs_map.toExponential(1) }), el("td", { text: fmt(m.min_cosine, 5) })));
  const table = el("table", { class: "mha-lab-table" },
    el("caption", { text: t("precision_caption", { sentences: c.fp32.sentences, masks: c.fp32.masks,
      map_tolerance: meta.rule.map_tolerance, cosine_floor: meta.rule.cosine_floor }) }),
    el("thead", {}, el("tr", {}, ...["precision_weights", "precision_file", "precision_map", "precision_cosine"]
      .map((key) => el("th", { scope: "col", text: t(key) })))),
    el("tbody", {}, ...rows));
  const parts = [table];
  const own = engine.stats;
  const runs = own.runs.slice(1).map((r) => r.ms).sort((a, b) => a - b);
  const median = runs.length ? runs[Math.floor(runs.length / 2)] : null;
  const loaded = { load: fmt(own.loadMs / 1000, 2), download: fmt(own.fetchMs / 1000, 2), session: fmt(own.createMs / 1000, 2) };
  parts.push(el("p", { id: "mha-lab-own", text: median !== null
    ? t("own_timing_runs", { ...loaded, median: fmt(median, 0), runs: runs.length })
    : t("own_timing", loaded) }));
  if (bench && bench.lab) {
    const b = bench.lab;
    const prov = bench.provenance.lab;
    const goal = b.targets;
    const verdict = (ok, budget) => t(ok ? "bench_within" : "bench_over", { budget });
    parts.push(el("p", { id: "mha-lab-bench", text: t("bench", {
      cores: b.machine.cores,
      load_average: fmt(b.machine.load_average_before, 1),
      repeats: b.repeats,
      load_median: fmt(b.load_s.median, 2),
      load_min: fmt(b.load_s.min, 2),
      load_max: fmt(b.load_s.max, 2),
      load_verdict: verdict(b.load_s.median <= goal.load_s, `${fmt(goal.load_s, 0)} s`),
      tokens_min: b.run_tokens.min,
      tokens_max: b.run_tokens.max,
      run_median: fmt(b.run_ms.median, 0),
      run_min: fmt(b.run_ms.min, 0),
      run_max: fmt(b.run_ms.max, 0),
      runs: b.run_ms.n,
      cpu_median: fmt(b.run_cpu_ms.median, 0),
      run_verdict: verdict(b.run_ms.median <= goal.run_ms, `${fmt(goal.run_ms, 0)} ms`),
      download: mb(b.download_bytes),
      model: mb(b.model_bytes),
      download_verdict: verdict(b.download_bytes <= goal.download_bytes, mb(goal.download_bytes)),
      sentences: b.compared.sentences,
      masks: b.compared.masks,
      map_difference: b.browser_max_abs_map.toExponential(1),
      embedding_difference: b.browser_max_abs_embedding.toExponential(1),
      commit: prov.git_commit.slice(0, 7),
      date: prov.created.slice(0, 10),
    }) }));
  }
  box.replaceChildren(...parts);
}

async function main() {
  const root = document.getElementById("mha-lab");
  if (!root) return;
  const engine = new LabEngine();
  const page = new LabPage(root, engine);
  let resolveReady;
  let rejectReady;
  const ready = new Promise((res, rej) => {
    resolveReady = res;
    rejectReady = rej;
  });
  ready.catch(() => {});
  window.mhaLab = {
    ready,
    stats: engine.stats,
    get meta() {
      return engine.meta;
    },
    async run(text, headMask) {
      await ready;
      const r = await engine.run(text, headMask);
      return { tokens: r.tokens, attentions: nested(r.maps, engine.L, engine.H, r.T), embedding: r.embedding, truncated: r.truncated };
    },
    preset: (name) => page.applyPreset(name),
  };
  if (location.protocol === "file:") return; // the page's own script says what to do
  try {
    page.status(t("status_loading"));
    applyPageStrings();
    await engine.load((got, total) => page.status(total
      ? t("status_progress_total", { got: mb(got), total: mb(total) })
      : t("status_progress", { got: mb(got) })));
    page.build();
    root.classList.add("mha-lab-loaded");
    const hash = new URLSearchParams(location.hash.slice(1));
    if (hash.get("text")) $("#mha-lab-text", root).value = hash.get("text");
    if (hash.get("preset")) page.applyPreset(hash.get("preset"));
    await page.refresh(true);
    const bench = await fetch(new URL("lab-bench.json", HERE)).then((r) => (r.ok ? r.json() : null)).catch(() => null);
    facts(root, engine, bench);
    $("#mha-lab-large", root).addEventListener("mousemove", (e) => page.hoverAt(e));
    // Links such as lab.html#preset=ch5-syntactic or #preset=ch6-importance-24&text=...
    window.addEventListener("hashchange", () => {
      const h = new URLSearchParams(location.hash.slice(1));
      if (h.get("text")) $("#mha-lab-text", root).value = h.get("text");
      if (h.get("preset")) page.applyPreset(h.get("preset"));
      else if (h.get("text")) page.refresh(true);
    });
    page.status(t("status_ready", { seconds: fmt(engine.stats.loadMs / 1000, 1) }), "ok");
    resolveReady(true);
  } catch (err) {
    rejectReady(err);
    if (err instanceof LabStringsError) throw err; // a broken catalogue: fail loudly
    page.status(t("status_error", { error: err.message }), "error");
  }
}

main();
