// Painting the maps on canvases: a small square per head (at most one pixel per pixel of its
// square on screen: maps.js's poolMax) and the selected head large, one image pixel per
// weight, with its tokens. The numbers come from maps.js; every weight goes through one
// colour table, so that a text of 512 tokens paints in milliseconds, not seconds.

import { COLOUR_TABLE, colourIndex, largeLayout } from "./maps.js";

// `count` weights from `values[start]` on as opaque pixels of `image` (an ImageData).
function fill(image, values, start, count) {
  const px = image.data;
  for (let i = 0; i < count; i++) {
    const c = 3 * colourIndex(values[start + i]);
    px[4 * i] = COLOUR_TABLE[c];
    px[4 * i + 1] = COLOUR_TABLE[c + 1];
    px[4 * i + 2] = COLOUR_TABLE[c + 2];
    px[4 * i + 3] = 255;
  }
  return image;
}

// One head's map as n × n pixels (n × n values, row-major: see maps.js's poolMax).
export function paintTile(canvas, values, n) {
  if (canvas.width !== n) canvas.width = n;
  if (canvas.height !== n) canvas.height = n;
  const ctx = canvas.getContext("2d");
  ctx.putImageData(fill(ctx.createImageData(n, n), values, 0, n * n), 0, 0);
}

// The window of a map: n × n weights from query (and key) `from` on, row by row.
function windowValues(maps, start, T, from, n) {
  if (from === 0 && n === T) return [maps, start];
  const out = new Float32Array(n * n);
  for (let q = 0; q < n; q++) {
    const row = start + (from + q) * T + from;
    out.set(maps.subarray(row, row + n), q * n);
  }
  return [out, 0];
}

// The selected head's map with its tokens on both axes, faded when the head is off; returns
// the layout, which the hover readout needs to find the cell under the pointer. A long text
// shows the window of `n` tokens from token `from` on (maps.js's windowRange).
export function paintLarge(canvas, { maps, start, T, tokens, on, textColour, avail, from = 0, n = T }) {
  const dpr = window.devicePixelRatio || 1;
  const ctx = canvas.getContext("2d");
  ctx.font = "12px sans-serif";
  let widest = 0;
  for (let i = from; i < from + n; i++) widest = Math.max(widest, ctx.measureText(tokens[i]).width);
  const layout = largeLayout(n, widest, avail);
  const { label, cell, size, step } = layout;
  canvas.width = Math.round(size * dpr);
  canvas.height = Math.round(size * dpr);
  canvas.style.width = `${size}px`;
  canvas.style.height = `${size}px`;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, size, size);
  // The map as a T × T image, scaled up to cells of `cell` px without smoothing: every
  // weight is drawn, each as its own square.
  const image = document.createElement("canvas");
  image.width = n;
  image.height = n;
  const ictx = image.getContext("2d");
  const [values, at] = windowValues(maps, start, T, from, n);
  ictx.putImageData(fill(ictx.createImageData(n, n), values, at, n * n), 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(image, label, label, cell * n, cell * n);
  if (!on) {
    ctx.fillStyle = "rgba(255,255,255,0.55)";
    ctx.fillRect(label, label, cell * n, cell * n);
  }
  ctx.fillStyle = textColour;
  ctx.font = `${Math.min(12, Math.max(9, cell))}px sans-serif`;
  ctx.textBaseline = "middle";
  const clip = (tok) => (ctx.measureText(tok).width > label - 8 ? `${tok.slice(0, 9)}…` : tok);
  for (let i = 0; i < n; i += step) {
    ctx.textAlign = "right";
    ctx.fillText(clip(tokens[from + i]), label - 4, label + (i + 0.5) * cell);
    ctx.save();
    ctx.translate(label + (i + 0.5) * cell, label - 4);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "left";
    ctx.fillText(clip(tokens[from + i]), 0, 0);
    ctx.restore();
  }
  return layout;
}
