// Painting the maps on canvases: a tile per head (one pixel per weight, scaled by CSS) and the
// selected head large, with its tokens. The numbers come from maps.js.

import { colour, largeLayout } from "./maps.js";

// One head's map, one pixel per (query, key).
export function paintTile(canvas, maps, start, T) {
  canvas.width = T;
  canvas.height = T;
  const ctx = canvas.getContext("2d");
  const img = ctx.createImageData(T, T);
  for (let i = 0; i < T * T; i++) {
    const [r, g, b] = colour(maps[start + i]);
    img.data[4 * i] = r;
    img.data[4 * i + 1] = g;
    img.data[4 * i + 2] = b;
    img.data[4 * i + 3] = 255;
  }
  ctx.putImageData(img, 0, 0);
}

// The selected head's map with its tokens on both axes, faded when the head is off; returns
// the layout, which the hover readout needs to find the cell under the pointer.
export function paintLarge(canvas, { maps, start, T, tokens, on, textColour, avail }) {
  const dpr = window.devicePixelRatio || 1;
  const ctx = canvas.getContext("2d");
  ctx.font = "12px sans-serif";
  const layout = largeLayout(T, Math.max(...tokens.map((tok) => ctx.measureText(tok).width)), avail);
  const { label, cell, size, step } = layout;
  canvas.width = Math.round(size * dpr);
  canvas.height = Math.round(size * dpr);
  canvas.style.width = `${size}px`;
  canvas.style.height = `${size}px`;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, size, size);
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
  return layout;
}
