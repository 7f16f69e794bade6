// The lab's page: its controls, the grid of heads, the large map and the ranking of sentences
// by meaning (what the model does), wired to the model. Screen readers hear one message per action, from one polite live region
// (#mha-lab-announce); the visible boxes are not live. Every finished update counts in
// `draws` (and the root's data-drawn) and resolves `drawn`, which tests and scripts await.
// A long text stays quick: the model runs off the main thread (engine.js), a click reruns only
// the layers it changes (session.js), each layer of the grid is drawn as soon as the model has
// it while the next one runs, at the squares' on-screen pixels, the large one as an image, and
// the candidate sentences run after the maps are on screen; the root's "mha-lab-maps" event
// says when they are. The note says how long the update took, measured.

import { $, el, nextTask } from "./dom.js";
import { paintLarge, paintTile } from "./draw.js";
import { ch6Step, countMessage, gridMove, HeadSwitches, randomMask } from "./heads.js";
import { cellAt, cosine, insideShare, mapChange, mapStart, meanAbsChange, median, poolMax, ranking, sameLayer, strongestKeys, tilePixels,
  windowRange } from "./maps.js";
import { clickIntent, PointerPlace } from "./pointer.js";
import { fmt, LabStringsError } from "./strings.js";

const BOOK_SENTENCES = [
  "The cat sat on the mat because it was tired.",
  "The dog chased the ball.",
];
// The sentences the reader's is ranked against (one per line in the page's box): a paraphrase,
// the same words with another meaning, a related sentence and an unrelated one.
const CANDIDATES = [
  "A tired cat was lying on the rug.",
  "The mat was tired because the cat sat on it.",
  "The dog chased the ball in the garden.",
  "Interest rates rose again this spring.",
];
const MAX_CANDIDATES = 6;
const WINDOW = 40; // tokens of a long text's large map
const SCALE_DRAWS = 8; // random head sets the scale is measured on
const SCALE_MAX_TOKENS = 64; // beyond this the scale's runs would hold the model too long
const TYPING_PAUSE_MS = 250; // run the model once the reader pauses, not on every key
const STALE = Symbol("a newer update took over");
const signed = (x, digits) => `${x >= 0 ? "+" : "−"}${fmt(Math.abs(x), digits)}`;

export class LabPage {
  constructor(root, engine, words) {
    this.root = root;
    this.engine = engine;
    this.t = words.t;
    this.parts = words.parts;
    this.heads = null; // HeadSwitches, once the model says how many
    this.selected = [0, 0];
    this.result = null; // the model's output on screen: {maps, T, tokens, …}
    this.base = null; // and the same text's with every head on, for the change bars
    this.baseline = null; // the latest all-heads-on runs: {text, cands, res, candRes}
    this.centre = 0; // a long text's window of the large map: the token at its centre
    this.pending = null;
    this.place = new PointerPlace();
    this.lastPointerType = null;
    this.tilePx = 0;
    this.draws = 0;
    this.nextDraw();
  }

  get L() {
    return this.engine.L;
  }

  get H() {
    return this.engine.H;
  }

  nextDraw() {
    this.drawn = new Promise((resolve) => {
      this.resolveDrawn = resolve;
    });
  }

  // An update is on screen: say it (unless quiet), count it, resolve `drawn`.
  finished(message) {
    if (message) this.announce(message);
    this.draws += 1;
    this.root.dataset.drawn = String(this.draws);
    const resolve = this.resolveDrawn;
    this.nextDraw();
    resolve(this.draws);
  }

  announce(message) {
    const box = $("#mha-lab-announce", this.root);
    // Screen readers skip a live region whose text did not change: a repeated message gets a
    // trailing no-break space, so that the reader still hears that the action was done.
    box.textContent = box.textContent === message ? `${message}\u00a0` : message;
  }

  status(text, kind = "info") {
    const box = $("#mha-lab-status", this.root);
    box.textContent = text;
    box.dataset.kind = kind;
  }

  build() {
    const { t } = this;
    const meta = this.engine.meta;
    this.heads = new HeadSwitches(this.L, this.H);
    const sentences = [...BOOK_SENTENCES, ...meta.book_sentences];
    const controls = $("#mha-lab-controls", this.root);
    controls.replaceChildren();

    const text = el("textarea", { id: "mha-lab-text", rows: "2", spellcheck: "false" });
    text.value = sentences[0];
    const pick = el("select", { id: "mha-lab-pick", "aria-label": t("pick_label") }, el("option", { value: "", text: t("pick_prompt") }));
    for (const s of sentences) pick.append(el("option", { value: s, text: s }));
    const other = el("textarea", { id: "mha-lab-candidates", rows: "4", spellcheck: "false" });
    other.value = CANDIDATES.join("\n");
    controls.append(
      el("p", { id: "mha-lab-english", class: "mha-lab-english", text: t("model_language") }),
      el("label", { for: "mha-lab-text", text: t("text_label") }), text, pick,
      el("label", { for: "mha-lab-candidates", text: t("candidates_label") }), other,
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
    this.steps = meta.presets.ch6_pruned_steps.filter((n) => n > 0);
    const prune = el("select", { id: "mha-lab-ch6", "aria-label": t("ch6_label"), "aria-describedby": "mha-lab-ch6-note" },
      el("option", { value: "", text: t("ch6_prompt") }));
    for (const n of this.steps) {
      prune.append(el("option", { value: String(n), text: t("ch6_option", { heads: n, total: this.L * this.H, accuracy: fmt(100 * this.accuracy(n), 1) }) }));
    }
    // The prompt itself changes nothing: the menu goes back to what the heads are.
    prune.addEventListener("change", () => (prune.value ? this.applyPreset(`ch6-importance-${prune.value}`) : this.showPreset()));
    presets.append(prune);
    controls.append(presets, el("p", { id: "mha-lab-ch6-note", class: "mha-lab-preset-note", hidden: "" }));

    let timer = null;
    const later = () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.refresh(true), TYPING_PAUSE_MS);
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
    $("#mha-lab-large", this.root).addEventListener("mousemove", (e) => this.hoverAt(e));
    // The large map's own switch: what a tap on a square does not do (pointer.js).
    const toggle = el("button", { type: "button", id: "mha-lab-switch", class: "mha-lab-switch" });
    toggle.addEventListener("click", () => this.toggleHead(...this.selected));
    $("#mha-lab-large-title", this.root).after(toggle);
    // A long text's window: the token at its centre, by slider or a step either way.
    const slider = el("input", { id: "mha-lab-window", type: "range", min: "0", max: "0", value: "0", "aria-label": t("window_label") });
    const step = (by, label) => {
      const b = el("button", { type: "button", class: "mha-lab-step", "aria-label": t(label), text: by < 0 ? "◀" : "▶" });
      b.addEventListener("click", () => this.moveWindow(this.centre + by));
      return b;
    };
    slider.addEventListener("input", () => this.moveWindow(Number(slider.value)));
    const windowBox = el("div", { class: "mha-lab-window", hidden: "" }, step(-1, "window_prev"), slider, step(1, "window_next"));
    toggle.after(windowBox);
    // Only the pointer's own moves show a head: not the page scrolling under a still pointer.
    document.addEventListener("pointermove", (e) => this.pointerMoved(e), { passive: true });
    const legend = $(".mha-lab-legend", this.root);
    if (legend) legend.append(el("span", { id: "mha-lab-pooled", hidden: "", text: this.t("legend_pooled") }));
    this.showPreset();
  }

  // Chapter 6's test accuracy with its first `n` heads removed (lab-model.json's presets).
  accuracy(n) {
    const { ch6_pruned_steps: steps, ch6_accuracy: accuracy } = this.engine.meta.presets;
    return accuracy[steps.indexOf(n)];
  }

  // Chapter 6's menu shows the step whose heads are off, whichever control changed them, and
  // its note says what that step does and how far its accuracy can be trusted.
  showPreset() {
    const step = ch6Step(this.heads.on, this.engine.meta.presets, this.steps, this.L, this.H);
    $("#mha-lab-ch6", this.root).value = step === null ? "" : String(step);
    const note = $("#mha-lab-ch6-note", this.root);
    note.hidden = step === null;
    note.textContent = step === null ? "" : this.t("ch6_note", {
      heads: step, total: this.L * this.H, accuracy: fmt(100 * this.accuracy(step), 1), full: fmt(100 * this.accuracy(0), 1),
    });
  }

  pointerMoved(e) {
    if (e.pointerType === "touch" || !this.place.moved(e.clientX, e.clientY)) return;
    const tile = e.target instanceof Element ? e.target.closest(".mha-lab-tile") : null;
    if (!tile || !this.root.contains(tile)) return;
    const [l, h] = [Number(tile.dataset.layer), Number(tile.dataset.head)];
    if (l !== this.selected[0] || h !== this.selected[1]) this.select(l, h);
  }

  buildGrid() {
    const grid = $("#mha-lab-grid", this.root);
    grid.replaceChildren();
    grid.style.setProperty("--heads", this.H);
    grid.style.setProperty("--layers", this.L);
    // The corner names the rows and columns: layers in rows on a wide screen, in columns on a
    // phone (lab.css transposes the grid there).
    grid.append(el("span", { class: "mha-lab-corner", "aria-hidden": "true" },
      el("span", { class: "mha-lab-wide", text: this.t("grid_corner") }),
      el("span", { class: "mha-lab-narrow", text: this.t("grid_corner_narrow") })));
    for (let h = 0; h < this.H; h++) grid.append(el("span", { class: "mha-lab-colhead", "aria-hidden": "true", text: String(h) }));
    this.tiles = [];
    this.layerButtons = [];
    const offMark = this.t("tile_off_mark"); // drawn over a switched-off tile (lab.css)
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
        tile.addEventListener("pointerdown", (e) => {
          this.lastPointerType = e.pointerType;
        });
        tile.addEventListener("click", (e) => {
          if (clickIntent(e.pointerType, e.detail, this.lastPointerType) === "show") this.select(l, h);
          else this.toggleHead(l, h);
        });
        tile.addEventListener("focus", () => this.select(l, h));
        tile.addEventListener("keydown", (e) => this.gridKeys(e, l, h));
        this.tiles.push(tile);
        grid.append(tile);
      }
    }
    this.labelTiles();
    // A square that grows (a wider window) gets its pixels again.
    new ResizeObserver(() => {
      if (this.result && this.tileSize(this.result.T) !== this.tilePx) this.paintTiles();
    }).observe(this.tiles[0]);
  }

  // Arrow keys move between heads (one tab stop for the whole grid); Enter or Space switch.
  gridKeys(e, l, h) {
    const transposed = getComputedStyle($("#mha-lab-grid", this.root)).gridAutoFlow.startsWith("column");
    const to = gridMove(e.key, l, h, this.L, this.H, transposed);
    if (!to) return;
    const target = to[1] < 0 ? this.layerButtons[to[0]] : this.tiles[to[0] * this.H + to[1]];
    e.preventDefault();
    for (const b of [...this.tiles, ...this.layerButtons]) b.tabIndex = -1;
    target.tabIndex = 0;
    target.focus();
  }

  labelTiles() {
    const { t } = this;
    for (let l = 0; l < this.L; l++) {
      for (let h = 0; h < this.H; h++) {
        const on = this.heads.isOn(l, h);
        const tile = this.tiles[l * this.H + h];
        tile.setAttribute("aria-pressed", String(on));
        tile.setAttribute("aria-label", t(on ? "tile_label_on" : "tile_label_off", { layer: l, head: h }));
        tile.title = t(on ? "tile_title_on" : "tile_title_off", { layer: l, head: h });
      }
      const kept = this.heads.kept(l);
      const lb = this.layerButtons[l];
      lb.textContent = `${l}`;
      lb.setAttribute("aria-pressed", String(kept > 0));
      const counts = { layer: l, kept, heads: this.H };
      lb.setAttribute("aria-label", t(kept > 0 ? "layer_label_on" : "layer_label_off", counts));
      lb.title = t(kept > 0 ? "layer_title_on" : "layer_title_off", counts);
    }
    const off = this.heads.off();
    const total = this.L * this.H;
    $("#mha-lab-count", this.root).textContent = t(countMessage(off, total), { off, total });
  }

  setAll(v) {
    this.heads.setAll(v);
    this.changed();
  }

  toggleHead(l, h) {
    this.heads.toggleHead(l, h);
    this.select(l, h);
    this.changed();
  }

  toggleLayer(l) {
    this.heads.toggleLayer(l);
    this.changed();
  }

  applyPreset(name, { run = true } = {}) {
    if (!this.heads.applyPreset(name, this.engine.meta.presets)) return false;
    this.changed({ run });
    return true;
  }

  changed({ run = true } = {}) {
    this.labelTiles();
    this.showPreset();
    if (this.result) this.labelSwitch();
    if (run) this.refresh(false);
  }

  note(text, kind) {
    const note = $("#mha-lab-note", this.root);
    note.textContent = text;
    note.dataset.kind = kind;
    return text;
  }

  // Runs the model (and, when the text changed, the all-heads-on baseline) and draws its maps,
  // a layer of the grid as soon as the model has it, while it runs the next; then the
  // candidate sentences, the ranking, and the announcement of what changed: the note for new
  // text, the count for heads, and the closest sentence; then measures the change's scale
  // (measureScale). The maps come first: they are what a click changes on screen.
  // The note's times are this update's, measured from its start (the click, or the end of the
  // typing pause): to the maps drawn, and to the ranking, with the model's runs and the drawing
  // in them. With every head on, the maps are the baseline's (the same run), drawn without
  // running again.
  async refresh(textChanged, { quiet = false } = {}) {
    const started = performance.now();
    const { t } = this;
    const text = $("#mha-lab-text", this.root).value;
    const cands = this.candidates();
    const ticket = {};
    this.pending = ticket; // a run still under way for older input is dropped when it ends
    if (text.trim() === "") {
      const said = this.note(t(text === "" ? "note_empty" : "note_whitespace"), "warn");
      this.finished(quiet ? null : said);
      return;
    }
    const mask = Float32Array.from(this.heads.on);
    const allOn = mask.every((v) => v > 0);
    const spent = { ms: 0, runs: 0, draw: 0 };
    const run = async (words, headMask, onLayer = null) => {
      if (this.pending !== ticket) throw STALE; // no model time for an update nobody will see
      const r = await this.engine.run(words, headMask, onLayer);
      spent.ms += r.ms;
      spent.runs += 1;
      return r;
    };
    // The candidate sentences, all in one run (the model keeps a run it has made: with every
    // head on, theirs is made once).
    const runCandidates = async (headMask) => {
      if (this.pending !== ticket) throw STALE;
      if (cands.length === 0) return [];
      const r = await this.engine.runBatch(cands, headMask);
      spent.ms += r[0].ms;
      spent.runs += 1;
      return r;
    };
    const shown = this.shown;
    this.shown = null; // until every layer of this update is painted
    // The grid follows the run it will show, layer by layer; `base` (all heads on) sets the
    // change bars, and is the run itself when that is the all-heads-on run.
    let followed = false;
    const follow = (base) => {
      followed = true;
      return (layer, maps, T) => {
        if (this.pending !== ticket) return;
        const begun = performance.now();
        this.paintLayer(layer, maps, T, base || maps, shown);
        spent.draw += performance.now() - begun;
      };
    };
    try {
      let baseline = this.baseline;
      if (textChanged || !baseline || baseline.text !== text) {
        const reuse = baseline && baseline.text === text && !textChanged;
        const base = reuse ? baseline.res : await run(text, null, allOn ? follow(null) : null);
        if (!reuse) this.centre = Math.min(base.T - 1, Math.floor(WINDOW / 2));
        baseline = this.baseline = { text, cands: null, res: base, candRes: null };
      }
      const res = allOn ? baseline.res : await run(text, mask, follow(baseline.res.maps));
      if (this.pending !== ticket) return; // a newer request took over
      this.result = res;
      this.base = baseline.res;
      const drawing = performance.now();
      if (!followed && !(await this.drawTiles(ticket, shown))) return; // maps already computed
      this.drawLarge();
      const n = this.tileSize(res.T);
      this.shown = { maps: res.maps, base: baseline.res.maps, n };
      this.pixelsShown(n);
      spent.draw += performance.now() - drawing;
      const mapsMs = performance.now() - started;
      this.root.dispatchEvent(new CustomEvent("mha-lab-maps"));
      if (baseline.cands === null || baseline.cands.join("\n") !== cands.join("\n")) {
        Object.assign(baseline, { cands, candRes: await runCandidates(null) });
      }
      const candRes = allOn ? baseline.candRes : await runCandidates(mask);
      if (this.pending !== ticket) return;
      const top = this.showRanking(candRes, baseline);
      const now = performance.now();
      const times = { tokens: res.T, total: fmt(now - started, 0), maps: fmt(mapsMs, 0), draw: fmt(spent.draw, 0) };
      const timing = spent.runs > 0
        ? t("note_timing", { ...times, model: fmt(spent.ms, 0), runs: spent.runs })
        : t("note_timing_cached", times);
      const noted = this.note(res.truncated > 0
        ? t("note_truncated", { tokens: this.engine.meta.max_tokens, cut: res.truncated, shown: res.T - 2, timing })
        : timing, res.truncated > 0 ? "warn" : "info");
      const what = textChanged ? noted : $("#mha-lab-count", this.root).textContent;
      this.finished(quiet ? null : [what, top].filter(Boolean).join(" "));
      this.measureScale(ticket, { text, cands, mask, res, baseline });
    } catch (err) {
      if (err === STALE) return;
      if (err instanceof LabStringsError) throw err; // a broken catalogue: fail loudly
      if (this.pending !== ticket) return;
      const said = this.note(t("note_error", { error: err.message }), "error");
      this.finished(quiet ? null : said);
    }
  }

  // The sentences to rank against the reader's: the box's non-empty lines, at most six.
  candidates() {
    return $("#mha-lab-candidates", this.root).value.split("\n").map((line) => line.trim()).filter(Boolean)
      .slice(0, MAX_CANDIDATES);
  }

  // The ranking by cosine similarity to the reader's sentence, now and with every head on;
  // returns what is said aloud (the closest sentence), or null without candidates.
  showRanking(candRes, baseline) {
    const { t } = this;
    const list = $("#mha-lab-ranking", this.root);
    const now = candRes.map((r) => cosine(this.result.embedding, r.embedding));
    const before = baseline.candRes.map((r) => cosine(baseline.res.embedding, r.embedding));
    this.cosines = { now, before };
    if (now.length === 0) {
      list.replaceChildren(el("li", { class: "mha-lab-rank-none", text: t("rank_none") }));
      return null;
    }
    const order = ranking(now);
    const was = ranking(before);
    const changed = now.some((v, i) => v !== before[i]);
    const items = order.map((i, place) => {
      const wasPlace = was.indexOf(i);
      const bar = el("span", { class: "mha-lab-rank-bar" });
      bar.style.width = `${Math.max(0, Math.min(100, 100 * now[i]))}%`;
      const moved = !changed ? "" : t("rank_moved", { before: fmt(before[i], 3), rank: wasPlace + 1, change: signed(now[i] - before[i], 3) });
      const arrow = !changed || wasPlace === place ? "" : wasPlace > place ? " ▲" : " ▼";
      return el("li", { class: "mha-lab-rank-item", "data-candidate": String(i) },
        el("span", { class: "mha-lab-rank-place", "aria-hidden": "true", text: `${place + 1}.` }),
        el("span", { class: "mha-lab-rank-text", lang: "en", text: baseline.cands[i] }),
        el("span", { class: "mha-lab-rank-value" }, el("strong", { text: fmt(now[i], 3) }), arrow),
        el("span", { class: "mha-lab-rank-track", "aria-hidden": "true" }, bar),
        ...(moved ? [el("span", { class: "mha-lab-rank-moved", text: moved })] : []));
    });
    list.replaceChildren(...items);
    return t("rank_top", { sentence: baseline.cands[order[0]], cosine: fmt(now[order[0]], 3) });
  }

  // The scale of a change: as many heads switched off at random, SCALE_DRAWS times, each moving
  // the similarities by some mean amount; the page says where the reader's change falls among
  // them. Runs after the update is on screen; the next update stops it.
  async measureScale(ticket, { text, cands, mask, res, baseline }) {
    const { t } = this;
    const box = $("#mha-lab-scale", this.root);
    const off = mask.reduce((n, v) => n + (v === 0), 0);
    const done = (message) => {
      box.textContent = message;
      this.scaled = (this.scaled || 0) + 1;
      this.root.dataset.scaled = String(this.scaled);
    };
    if (cands.length === 0) return done("");
    if (off === 0) return done(t("scale_all_on"));
    if (res.T > SCALE_MAX_TOKENS) return done(t("scale_long", { tokens: SCALE_MAX_TOKENS }));
    const { now, before } = this.cosines;
    const yours = meanAbsChange(now, before);
    const top = ranking(before)[0];
    const moves = [];
    let flips = 0;
    try {
      for (let d = 0; d < SCALE_DRAWS; d++) {
        if (this.pending !== ticket) return;
        box.textContent = t("scale_pending", { off, done: d, draws: SCALE_DRAWS });
        const random = randomMask(this.L, this.H, off, d);
        // One-off masks: not kept as the texts' latest runs, which the reader's next click
        // reruns from.
        const mine = (await this.engine.run(text, random, null, { keep: false })).embedding;
        if (this.pending !== ticket) return;
        const cos = (await this.engine.runBatch(cands, random, { keep: false })).map((r) => cosine(mine, r.embedding));
        moves.push(meanAbsChange(cos, before));
        if (ranking(cos)[0] !== top) flips += 1;
      }
    } catch (err) {
      if (err instanceof LabStringsError) throw err;
      if (this.pending === ticket) done("");
      return;
    }
    if (this.pending !== ticket) return;
    const typical = median(moves);
    done(t(ranking(now)[0] !== top ? "scale_result_top" : "scale_result", {
      off, yours: fmt(yours, 3), random: fmt(typical, 3), draws: SCALE_DRAWS,
      low: fmt(Math.min(...moves), 3), high: fmt(Math.max(...moves), 3),
      ratio: fmt(typical > 0 ? yours / typical : 0, 1), flips,
    }));
  }

  // A long text's window moves to `centre` (a token), and the large map with it.
  moveWindow(centre) {
    if (!this.result) return;
    this.centre = Math.min(Math.max(0, centre), this.result.T - 1);
    this.drawLarge();
  }

  change(l, h) {
    const { maps, T } = this.result;
    return mapChange(maps, this.base.maps, mapStart(l, h, this.H, T), T);
  }

  // One layer of the grid: each head's small map and its change bar against `base` (all heads
  // on). A layer whose maps are the ones `shown` has on screen, at the same size and against
  // the same base, stays as it is (below the first layer whose heads changed, it always does).
  paintLayer(l, maps, T, base, shown) {
    const n = this.tileSize(T);
    if (shown && shown.n === n && shown.base === base && sameLayer(shown.maps, maps, l, this.H, T)) return;
    const pooled = new Float32Array(n * n);
    for (let h = 0; h < this.H; h++) {
      const tile = this.tiles[l * this.H + h];
      const start = mapStart(l, h, this.H, T);
      const delta = mapChange(maps, base, start, T);
      tile.querySelector(".mha-lab-bar").style.width = `${Math.min(100, 100 * delta)}%`;
      tile.dataset.change = fmt(delta, 4);
      poolMax(maps, start, T, n, pooled);
      paintTile(tile.querySelector("canvas"), pooled, n);
    }
  }

  // The grid of maps already computed, a layer at a time, each layer its own task: a long
  // text's 72 maps of 256 × 256 weights never hold the page for long. False when a newer update
  // took over.
  async drawTiles(ticket, shown) {
    const { result, base } = this;
    for (let l = 0; l < this.L; l++) {
      if (l > 0) {
        await nextTask();
        if (this.pending !== ticket) return false;
      }
      this.paintLayer(l, result.maps, result.T, base.maps, shown);
    }
    return true;
  }

  paintOne(l, h, n, pooled) {
    const { maps, T } = this.result;
    poolMax(maps, mapStart(l, h, this.H, T), T, n, pooled);
    paintTile(this.tiles[l * this.H + h].querySelector("canvas"), pooled, n);
  }

  // n pixels a side on screen: the legend says when that is fewer than the map's weights.
  pixelsShown(n) {
    this.tilePx = n;
    const pooledNote = $("#mha-lab-pooled", this.root);
    if (pooledNote) pooledNote.hidden = n >= this.result.T;
  }

  // Pixels per side of a small map of `T` tokens: its square's on screen, at most one per weight.
  tileSize(T) {
    return tilePixels(T, this.tiles[0].querySelector("canvas").clientWidth, window.devicePixelRatio);
  }

  // Every small map again at its on-screen pixels (after the squares changed size): a long
  // text's 256 × 256 weights become each pixel's largest (maps.js's poolMax).
  paintTiles() {
    const n = this.tileSize(this.result.T);
    const pooled = new Float32Array(n * n);
    for (let l = 0; l < this.L; l++) for (let h = 0; h < this.H; h++) this.paintOne(l, h, n, pooled);
    if (this.shown) this.shown.n = n;
    this.pixelsShown(n);
  }

  select(l, h) {
    this.selected = [l, h];
    for (const tile of this.tiles) tile.classList.toggle("mha-lab-selected", tile.dataset.layer === String(l) && tile.dataset.head === String(h));
    if (this.result) this.drawLarge();
  }

  drawLarge() {
    const { t } = this;
    const [l, h] = this.selected;
    const { maps, T, tokens } = this.result;
    const canvas = $("#mha-lab-large", this.root);
    const on = this.heads.isOn(l, h);
    const start = mapStart(l, h, this.H, T);
    const { from, n } = windowRange(T, this.centre, WINDOW);
    const layout = paintLarge(canvas, { maps, start, T, tokens, on, from, n,
      textColour: getComputedStyle(this.root).color || "#222", avail: canvas.parentElement.clientWidth });
    canvas.setAttribute("aria-label", t("large_map_label", { layer: l, head: h, strongest: strongestKeys(maps, start, T, tokens) }));
    const delta = this.change(l, h);
    $("#mha-lab-large-title", this.root).textContent = t(on ? "large_title_on" : "large_title_off", { layer: l, head: h });
    const change = delta > 0 ? t("large_changed", { change: fmt(delta, 3) }) : t("large_identical");
    const windowed = n < T ? t("window_caption", { from, to: from + n - 1, tokens: T, token: tokens[this.centre],
      inside: fmt(100 * insideShare(maps, start, T, from, n), 0) }) : "";
    $("#mha-lab-large-caption", this.root).textContent = [windowed, on ? change : t("large_caption_off", { change })]
      .filter(Boolean).join(" ");
    const box = $(".mha-lab-window", this.root);
    box.hidden = n === T;
    const slider = $("#mha-lab-window", this.root);
    slider.max = String(T - 1);
    slider.value = String(this.centre);
    slider.setAttribute("aria-valuetext", `${this.centre}: ${tokens[this.centre]}`);
    this.labelSwitch();
    this.hover = { layout, T, tokens, start, maps, from, n };
  }

  // The large map's switch names its head and what it will do.
  labelSwitch() {
    const [l, h] = this.selected;
    $("#mha-lab-switch", this.root).textContent = this.t(this.heads.isOn(l, h) ? "switch_off" : "switch_on", { layer: l, head: h });
  }

  hoverAt(event) {
    const box = $("#mha-lab-readout", this.root);
    const hv = this.hover;
    if (!hv) return;
    const rect = event.target.getBoundingClientRect();
    const cell = cellAt(event.clientX - rect.left, event.clientY - rect.top, hv.layout, hv.n);
    if (!cell) {
      box.textContent = "\u00a0";
      return;
    }
    const [q, k] = [cell[0] + hv.from, cell[1] + hv.from];
    box.textContent = this.t("readout", { query_token: hv.tokens[q], query: q, key_token: hv.tokens[k], key: k,
      weight: fmt(hv.maps[hv.start + q * hv.T + k], 3) });
  }
}
