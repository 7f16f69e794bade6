// Which heads are on: the page's state, and the ways a reader changes it (a click on a head or
// a layer, a preset, a #preset= link, the arrow keys). Pure: no DOM, tested under node.

// One number per head, layer-major (layer * heads + head): 1 keeps the head, 0 removes it.
export class HeadSwitches {
  constructor(layers, heads) {
    this.layers = layers;
    this.heads = heads;
    this.on = new Float32Array(layers * heads).fill(1);
  }

  index(layer, head) {
    return layer * this.heads + head;
  }

  isOn(layer, head) {
    return this.on[this.index(layer, head)] > 0;
  }

  toggleHead(layer, head) {
    const i = this.index(layer, head);
    this.on[i] = this.on[i] > 0 ? 0 : 1;
  }

  // A layer with any head on goes all off; a layer all off comes back whole.
  toggleLayer(layer) {
    const row = this.on.subarray(layer * this.heads, (layer + 1) * this.heads);
    row.fill(row.some((v) => v > 0) ? 0 : 1);
  }

  setAll(value) {
    this.on.fill(value);
  }

  kept(layer) {
    let n = 0;
    for (let h = 0; h < this.heads; h++) n += this.isOn(layer, h);
    return n;
  }

  off() {
    return this.on.reduce((n, v) => n + (v === 0), 0);
  }

  // Applies a preset by name; false (and nothing changed) for a name it does not know.
  applyPreset(name, presets) {
    const mask = presetMask(parsePreset(name), presets, this.layers, this.heads);
    if (mask === null) return false;
    this.on.set(mask);
    return true;
  }
}

// "ch5-syntactic", "ch6-importance-<n>", "all-on", "all-off" (the names of #preset= links)
// → {kind, count}; null for anything else.
export function parsePreset(name) {
  if (name === "ch5-syntactic" || name === "all-on" || name === "all-off") return { kind: name };
  const m = /^ch6-importance-(\d+)$/.exec(String(name));
  return m ? { kind: "ch6-importance", count: Number(m[1]) } : null;
}

// The preset's heads, from the build's lists (lab-model.json's presets): chapter 5's
// syntactic heads off, or the first `count` heads of chapter 6's importance order off.
export function presetMask(preset, presets, layers, heads) {
  if (preset === null) return null;
  const mask = new Float32Array(layers * heads).fill(preset.kind === "all-off" ? 0 : 1);
  if (preset.kind === "ch5-syntactic") {
    for (const s of Object.values(presets.ch5_syntactic)) mask[s.layer * heads + s.head] = 0;
  } else if (preset.kind === "ch6-importance") {
    for (const [l, h] of presets.ch6_importance_order.slice(0, preset.count)) mask[l * heads + h] = 0;
  }
  return mask;
}

// A link's #text=…&preset=… (either may be missing; empty counts as missing).
export function parseHash(hash) {
  const params = new URLSearchParams(String(hash).replace(/^#/, ""));
  return { text: params.get("text") || null, preset: params.get("preset") || null };
}

// The grid's keyboard (one tab stop for all of it): where a key moves the focus from
// (layer, head), as [layer, head], head -1 being the layer's own button; null for other keys.
// `transposed`: the grid as a phone shows it, layers in columns and heads in rows, where the
// arrows move the other way round (down is the next head).
export function gridMove(key, layer, head, layers, heads, transposed = false) {
  const moves = transposed
    ? { ArrowDown: [0, 1], ArrowUp: [0, -1], ArrowRight: [1, 0], ArrowLeft: [-1, 0] }
    : { ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowDown: [1, 0], ArrowUp: [-1, 0] };
  const clamp = (x, lo, hi) => Math.min(Math.max(x, lo), hi);
  if (moves[key]) {
    const [dl, dh] = moves[key];
    return [clamp(layer + dl, 0, layers - 1), clamp(head + dh, -1, heads - 1)];
  }
  if (key === "Home") return [layer, -1];
  if (key === "End") return [layer, heads - 1];
  return null;
}

// The message that counts the heads off.
export function countMessage(off, total) {
  return off === 0 ? "count_all_on" : off === total ? "count_all_off" : "count_off";
}

// window.mhaLab.run's headMask (nested or flat numbers, or a typed array; null keeps every
// head) as the model's (layers × heads) float input, checked.
export function flatMask(headMask, layers, heads) {
  let flat;
  if (headMask == null) flat = new Array(layers * heads).fill(1);
  else if (ArrayBuffer.isView(headMask)) flat = Array.from(headMask);
  else if (Array.isArray(headMask)) flat = headMask.flat(Infinity);
  else throw new TypeError("headMask must be an array of numbers, layers × heads");
  if (flat.length !== layers * heads || flat.some((v) => typeof v !== "number" || !Number.isFinite(v))) {
    throw new TypeError(`headMask must hold ${layers} × ${heads} finite numbers, got ${flat.length} values`);
  }
  return Float32Array.from(flat);
}

// The step of chapter 6's menu (one of `steps`) whose heads are exactly the ones off in `on`,
// or null: what the menu shows, whichever control changed the heads.
export function ch6Step(on, presets, steps, layers, heads) {
  for (const count of steps) {
    const mask = presetMask({ kind: "ch6-importance", count }, presets, layers, heads);
    if (mask.every((v, i) => v > 0 === on[i] > 0)) return count;
  }
  return null;
}

// A reproducible stream of numbers in [0, 1) from a 32-bit seed (mulberry32).
export function randomStream(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// `off` heads of layers × heads switched off at random (draw `draw` of a seeded series): the
// lab's scale for a change, "as many heads as yours, chosen at random".
export function randomMask(layers, heads, off, draw) {
  const next = randomStream(0x9e3779b9 ^ (off * 7919 + draw * 104729));
  const order = Array.from({ length: layers * heads }, (_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  const mask = new Float32Array(layers * heads).fill(1);
  for (const i of order.slice(0, off)) mask[i] = 0;
  return mask;
}
