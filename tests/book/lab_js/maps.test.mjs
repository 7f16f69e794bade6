// lab/maps.js: the maps' colour scale, offsets, change, layout and text alternative, on
// hand-checked cases (the colour scale against matplotlib too: tests/book/test_lab_modules.py).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  cellAt, colour, COLOUR_STEPS, COLOUR_TABLE, colourIndex, cosine, insideShare, largeLayout, mapChange, mapStart, meanAbsChange,
  median, nested, poolMax, ranking, strongestKeys, tilePixels, VIRIDIS, windowRange,
} from "../../../lab/maps.js";

const close = (got, want, tol = 1e-9) =>
  assert.ok(got.every((g, i) => Math.abs(g - want[i]) <= tol), `${got} != ${want}`);

test("viridis: its ends, a stop, half-way between two stops, clamped outside 0..1", () => {
  assert.equal(VIRIDIS.length, 17);
  close(colour(0), [0x44, 0x01, 0x54]);
  close(colour(1), [0xfd, 0xe7, 0x25]);
  close(colour(0.5), [0x21, 0x91, 0x8c]); // stop 8 of 0..16
  close(colour(1 / 32), [(0x44 + 0x48) / 2, (0x01 + 0x18) / 2, (0x54 + 0x6a) / 2]);
  close(colour(-0.3), colour(0));
  close(colour(7), colour(1));
});

test("viridis grows lighter from 0 to 1 (a weight's colour orders like the weight)", () => {
  const luma = ([r, g, b]) => 0.2126 * r + 0.7152 * g + 0.0722 * b;
  for (let i = 1; i <= 100; i++) assert.ok(luma(colour(i / 100)) > luma(colour((i - 1) / 100)), String(i));
});

test("a head's map in the flat (layers, heads, T, T) output", () => {
  assert.equal(mapStart(0, 0, 12, 5), 0);
  assert.equal(mapStart(0, 1, 12, 5), 25);
  assert.equal(mapStart(1, 2, 12, 5), (12 + 2) * 25);
});

test("a map's change is its largest |difference| from the same map with all heads on", () => {
  const base = [9, 9, 0.5, 0.5, 0.25, 0.75, 9, 9];
  const now = [0, 0, 0.5, 0.25, 0.75, 0.25, 0, 0];
  assert.equal(mapChange(now, base, 2, 2), 0.5); // only indices 2..5
  assert.equal(mapChange(base, base, 2, 2), 0);
});

test("the large map's layout", () => {
  // 10 tokens, labels 50 px wide, 640 px: label 58, cells capped at 26 px.
  assert.deepEqual(largeLayout(10, 50, 640), { label: 58, cell: 26, size: 58 + 260 + 4, step: 1 });
  // 100 tokens, long labels capped at 110 px, the column capped at 720 px: 6 px cells, every
  // second token labelled.
  assert.deepEqual(largeLayout(100, 400, 1000), { label: 110, cell: 6, size: 110 + 600 + 4, step: 2 });
  assert.deepEqual(largeLayout(512, 30, 0), { label: 38, cell: 1, size: 38 + 512 + 4, step: 8 }); // width unknown: 640
  assert.equal(largeLayout(10, 20, 100).cell, 16); // at least 200 px: (200 - 28 - 4) / 10
});

test("the cell under the pointer", () => {
  const layout = { label: 58, cell: 26 };
  assert.deepEqual(cellAt(58, 58, layout, 10), [0, 0]);
  assert.deepEqual(cellAt(58 + 26 * 9 + 25, 58 + 26, layout, 10), [1, 9]);
  assert.equal(cellAt(57, 70, layout, 10), null);
  assert.equal(cellAt(70, 57, layout, 10), null);
  assert.equal(cellAt(58 + 260, 60, layout, 10), null);
});

test("each query's strongest key, the first on a tie, and … past the limit", () => {
  const maps = [0.2, 0.8, 0.5, 0.5];
  assert.equal(strongestKeys(maps, 0, 2, ["a", "b"]), "a → b (0.80); b → a (0.50)");
  const three = [0, 0, 1, 0.125, 0.75, 0.125, 1, 0, 0];
  assert.equal(strongestKeys([7, ...three], 1, 3, ["x", "y", "z"], 2), "x → z (1.00); y → y (0.75); …");
});

test("nested maps: attentions[layer][head][query][key]", () => {
  const flat = Float32Array.from({ length: 2 * 2 * 2 * 2 }, (_, i) => i);
  const got = nested(flat, 2, 2, 2);
  assert.deepEqual(got[0], [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]);
  assert.deepEqual(got[1][1], [[12, 13], [14, 15]]);
  assert.deepEqual(got[1][0][1], [10, 11]);
});

test("cosine similarity", () => {
  assert.equal(cosine([1, 0], [0, 1]), 0);
  assert.equal(cosine([1, 2], [2, 4]), 1);
  assert.equal(cosine([1, 2], [-1, -2]), -1);
  close([cosine([1, 1], [1, 0])], [Math.SQRT1_2], 1e-12);
  assert.ok(Number.isNaN(cosine([0, 0], [1, 1])));
});

test("the colour table: the scale at COLOUR_STEPS weights, and each weight's nearest entry", () => {
  assert.equal(COLOUR_TABLE.length, 3 * COLOUR_STEPS);
  assert.deepEqual(Array.from(COLOUR_TABLE.slice(0, 3)), [0x44, 0x01, 0x54]);
  assert.deepEqual(Array.from(COLOUR_TABLE.slice(-3)), [0xfd, 0xe7, 0x25]);
  const mid = (COLOUR_STEPS - 1) / 2; // 511.5: weight 0.5 rounds up to entry 512
  assert.equal(colourIndex(0.5), Math.ceil(mid));
  assert.deepEqual([colourIndex(0), colourIndex(1), colourIndex(-2), colourIndex(9), colourIndex(NaN)], [0, COLOUR_STEPS - 1, 0, COLOUR_STEPS - 1, 0]);
  // Within a unit of 255 of the exact scale, anywhere.
  for (let i = 0; i <= 1000; i++) {
    const w = i / 1000;
    const j = 3 * colourIndex(w);
    close(Array.from(COLOUR_TABLE.slice(j, j + 3)), colour(w), 1);
  }
});

test("a small map's pixels: as many as it has on screen, at most one per weight", () => {
  assert.equal(tilePixels(512, 48, 1), 48);
  assert.equal(tilePixels(512, 47.5, 2), 95);
  assert.equal(tilePixels(12, 48, 2), 12); // short text: one pixel per weight
  assert.equal(tilePixels(512, 0, 1), 1); // not laid out yet
  assert.equal(tilePixels(5, 3.2, undefined), 4);
});

test("a map pooled to n × n pixels keeps each block's largest weight", () => {
  // T = 5 at n = 2: blocks of tokens {0, 1} and {2, 3, 4} (edges floor(i · 5 / 2) = 0, 2, 5).
  const map = [
    0.1, 0.2, 0.3, 0.0, 0.0,
    0.0, 0.9, 0.0, 0.1, 0.0,
    0.5, 0.0, 0.0, 0.0, 0.4,
    0.0, 0.0, 0.2, 0.0, 0.0,
    0.0, 0.6, 0.0, 0.0, 0.7,
  ];
  close(Array.from(poolMax([7, ...map], 1, 5, 2)), [0.9, 0.3, 0.6, 0.7], 1e-7);
  // n = T: the map itself; n = 1: its largest weight.
  close(Array.from(poolMax(map, 0, 5, 5)), map, 1e-7);
  close(Array.from(poolMax(map, 0, 5, 1)), [0.9], 1e-7);
  // T = 4 at n = 3: edges 0, 1, 2, 4 (the last block two tokens wide).
  const four = Array.from({ length: 16 }, (_, i) => i / 16);
  close(Array.from(poolMax(four, 0, 4, 3)), [0, 1, 3, 4, 5, 7, 12, 13, 15].map((v) => v / 16), 1e-7);
});

test("the large map's cells start on whole pixels, whatever the labels' measured width", () => {
  assert.deepEqual(largeLayout(10, 43.2, 640), largeLayout(10, 44, 640));
  assert.equal(largeLayout(100, 43.5, 640).label, 52);
});

test("a long text's window: 40 tokens around the centre, kept inside the text", () => {
  assert.deepEqual(windowRange(13, 6, 40), { from: 0, n: 13 });
  assert.deepEqual(windowRange(512, 0, 40), { from: 0, n: 40 });
  assert.deepEqual(windowRange(512, 100, 40), { from: 80, n: 40 });
  assert.deepEqual(windowRange(512, 511, 40), { from: 472, n: 40 });
  assert.deepEqual(windowRange(41, 30, 40), { from: 1, n: 40 });
});

test("the share of a window's queries' weight on its keys", () => {
  // T = 3, one head: rows are queries. Window tokens 1..2.
  const maps = Float32Array.from([1, 0, 0, 0.5, 0.25, 0.25, 0, 0, 1]);
  assert.equal(insideShare(maps, 0, 3, 1, 2), (0.5 + 1) / 2);
  assert.equal(insideShare(maps, 0, 3, 0, 3), 1);
});

test("ranking, median and the mean move", () => {
  assert.deepEqual(ranking([0.2, 0.9, 0.5, 0.9]), [1, 3, 2, 0]);
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 2, 3]), 2.5);
  assert.ok(Number.isNaN(median([])));
  assert.ok(Math.abs(meanAbsChange([0.5, 0.2], [0.4, 0.5]) - 0.2) < 1e-12);
});
