// The maps' numbers: colour scale, where a head's map sits in the model's output, how far it
// moved, the large map's layout and its text alternative. Pure: no DOM, tested under node.
// `maps` is the model's flat (layers, heads, T, T) output, layer-major.

// viridis (matplotlib), 17 stops: perceptually uniform and readable with colour-blindness.
export const VIRIDIS = ["440154", "48186a", "472d7b", "424086", "3b528b", "33638d", "2c728e", "26828e", "21918c",
  "1fa088", "28ae80", "3fbc73", "5ec962", "84d44b", "addc30", "d8e219", "fde725"].map((h) => [
  parseInt(h.slice(0, 2), 16), parseInt(h.slice(2, 4), 16), parseInt(h.slice(4, 6), 16)]);

// An attention weight (0 to 1, clamped) → [r, g, b], linear between the stops.
export function colour(v) {
  const x = Math.min(Math.max(v, 0), 1) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(x), VIRIDIS.length - 2);
  const f = x - i;
  const a = VIRIDIS[i];
  const b = VIRIDIS[i + 1];
  return [a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1]), a[2] + f * (b[2] - a[2])];
}

// The same scale as a table of COLOUR_STEPS colours (r, g, b, r, g, b, …, rounded), for
// painting many weights at once: a weight w takes entry colourIndex(w), the nearest of
// 0, 1/(COLOUR_STEPS − 1), …, 1 (a weight moves its colour by less than one unit of 255
// within a step).
export const COLOUR_STEPS = 1024;
export const COLOUR_TABLE = (() => {
  const table = new Uint8ClampedArray(3 * COLOUR_STEPS);
  for (let i = 0; i < COLOUR_STEPS; i++) table.set(colour(i / (COLOUR_STEPS - 1)).map(Math.round), 3 * i);
  return table;
})();
export const colourIndex = (v) => Math.round(Math.min(Math.max(v, 0), 1) * (COLOUR_STEPS - 1)) || 0;

// Offset of head (layer, head)'s T × T map in the flat output.
export const mapStart = (layer, head, heads, T) => (layer * heads + head) * T * T;

// Whether a layer's maps are the same numbers in `a` and `b` (both (layers, heads, T, T)): a
// layer below the first one whose heads changed is, and need not be painted again.
export function sameLayer(a, b, layer, heads, T) {
  const size = heads * T * T;
  if (!a || !b || a.length !== b.length) return false;
  for (let i = layer * size; i < (layer + 1) * size; i++) if (a[i] !== b[i]) return false;
  return true;
}

// Largest |Δ weight| of one map against the same map in `base` (all heads on).
export function mapChange(maps, base, start, T) {
  let worst = 0;
  for (let i = start; i < start + T * T; i++) worst = Math.max(worst, Math.abs(maps[i] - base[i]));
  return worst;
}

// How many pixels a small map of T tokens gets: as many as its square has on screen (`css`
// px at `dpr` device pixels each), never more than T (then each weight is one pixel).
export const tilePixels = (T, css, dpr = 1) => Math.max(1, Math.min(T, Math.ceil((css || 0) * (dpr || 1))));

// A T × T map seen at n × n pixels (n ≤ T): each pixel holds the largest weight of the block
// of queries and keys it covers, the blocks' edges at floor(i · T / n), so that one strong
// weight stays visible however long the text. n = T gives the map itself.
export function poolMax(maps, start, T, n, out = new Float32Array(n * n)) {
  const at = new Int32Array(T); // the pixel row (or column) of each token
  for (let i = 0; i < n; i++) at.fill(i, Math.floor((i * T) / n), Math.floor(((i + 1) * T) / n));
  out.fill(-Infinity);
  for (let q = 0; q < T; q++) {
    const row = start + q * T;
    const to = at[q] * n;
    for (let k = 0; k < T; k++) {
      const v = maps[row + k];
      const j = to + at[k];
      if (v > out[j]) out[j] = v;
    }
  }
  return out;
}

// The large map: tokens' labels `labelWidth` px wide (rounded up: cells start on whole pixels)
// at most 110, cells of 1 to 26 px that fill `avail` px (200 to 720), every `step`-th token
// labelled so that long texts stay legible.
export function largeLayout(T, labelWidth, avail) {
  avail = Math.max(200, Math.min(avail || 640, 720));
  const label = Math.min(110, Math.ceil(labelWidth) + 8);
  const cell = Math.max(1, Math.min(26, Math.floor((avail - label - 4) / T)));
  return { label, cell, size: label + cell * T + 4, step: Math.max(1, Math.ceil(T / 64)) };
}

// The cell under a point (px from the canvas's corner) as [query, key], or null outside.
export function cellAt(x, y, layout, T) {
  const k = Math.floor((x - layout.label) / layout.cell);
  const q = Math.floor((y - layout.label) / layout.cell);
  return q < 0 || k < 0 || q >= T || k >= T ? null : [q, k];
}

// Where each query looks most (the first key on a tie), the picture's text alternative:
// "query → key (weight)" for the first `limit` queries, "…" when there are more.
export function strongestKeys(maps, start, T, tokens, limit = 40) {
  const tops = [];
  for (let q = 0; q < Math.min(T, limit); q++) {
    const row = start + q * T;
    let best = 0;
    for (let k = 1; k < T; k++) if (maps[row + k] > maps[row + best]) best = k;
    tops.push(`${tokens[q]} → ${tokens[best]} (${Number(maps[row + best]).toFixed(2)})`);
  }
  return `${tops.join("; ")}${T > limit ? "; …" : ""}`;
}

// Nested arrays for window.mhaLab: attentions[layer][head][query][key].
export function nested(maps, layers, heads, T) {
  const out = [];
  for (let l = 0; l < layers; l++) {
    const layer = [];
    for (let h = 0; h < heads; h++) {
      const head = [];
      for (let q = 0; q < T; q++) {
        const start = mapStart(l, h, heads, T) + q * T;
        head.push(Array.from(maps.subarray(start, start + T)));
      }
      layer.push(head);
    }
    out.push(layer);
  }
  return out;
}

// Cosine similarity of two embeddings; NaN when either is zero.
export function cosine(a, b) {
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

// The large map of a long text: a window of `size` tokens (queries and keys alike) around
// token `centre`, kept inside the text. A text of `size` tokens or fewer is shown whole.
export function windowRange(T, centre, size) {
  if (T <= size) return { from: 0, n: T };
  const from = Math.min(Math.max(0, Math.round(centre) - Math.floor(size / 2)), T - size);
  return { from, n: size };
}

// The share of the window's queries' weight that falls on the window's keys (0 to 1): how much
// of where these tokens look the window shows.
export function insideShare(maps, start, T, from, n) {
  let inside = 0;
  for (let q = from; q < from + n; q++) {
    const row = start + q * T;
    for (let k = from; k < from + n; k++) inside += maps[row + k];
  }
  return inside / n;
}

// Indices of `values` from the largest to the smallest (a stable order on ties).
export function ranking(values) {
  return values.map((v, i) => [v, i]).sort((a, b) => b[0] - a[0] || a[1] - b[1]).map(([, i]) => i);
}

export function median(values) {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// The mean of |a_i - b_i|: how far a list of similarities moved.
export function meanAbsChange(a, b) {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs(a[i] - b[i]);
  return a.length ? sum / a.length : NaN;
}
