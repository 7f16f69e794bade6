// lab/heads.js: which heads are on, and every way a reader changes it, on hand-checked cases
// (2 layers × 3 heads, layer-major: index = layer * 3 + head).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  ch6Step, countMessage, flatMask, gridMove, HeadSwitches, parseHash, parsePreset, presetMask, randomMask,
} from "../../../lab/heads.js";

const state = (s) => Array.from(s.on);
// lab-model.json's presets, cut down: chapter 5 names a head twice (two relations, one head).
const PRESETS = {
  ch5_syntactic: { nsubj: { layer: 1, head: 2 }, dobj: { layer: 0, head: 1 }, amod: { layer: 1, head: 2 } },
  ch6_importance_order: [[1, 0], [0, 2], [1, 2], [0, 0]],
};

test("a new grid has every head on", () => {
  const s = new HeadSwitches(2, 3);
  assert.deepEqual(state(s), [1, 1, 1, 1, 1, 1]);
  assert.equal(s.off(), 0);
  assert.equal(s.kept(0), 3);
});

test("a click switches one head, a second click brings it back", () => {
  const s = new HeadSwitches(2, 3);
  s.toggleHead(1, 0);
  assert.deepEqual(state(s), [1, 1, 1, 0, 1, 1]);
  assert.equal(s.isOn(1, 0), false);
  assert.equal(s.isOn(0, 0), true);
  assert.deepEqual([s.kept(0), s.kept(1), s.off()], [3, 2, 1]);
  s.toggleHead(1, 0);
  assert.deepEqual(state(s), [1, 1, 1, 1, 1, 1]);
});

test("a layer's button: any head on → the whole layer off; all off → the whole layer on", () => {
  const s = new HeadSwitches(2, 3);
  s.toggleHead(0, 1); // layer 0 mixed: 1 0 1
  s.toggleLayer(0);
  assert.deepEqual(state(s), [0, 0, 0, 1, 1, 1]);
  s.toggleLayer(0);
  assert.deepEqual(state(s), [1, 1, 1, 1, 1, 1]);
  s.toggleLayer(1);
  assert.deepEqual([s.kept(0), s.kept(1), s.off()], [3, 0, 3]);
});

test("all on, all off", () => {
  const s = new HeadSwitches(2, 3);
  s.setAll(0);
  assert.deepEqual(state(s), [0, 0, 0, 0, 0, 0]);
  assert.equal(s.off(), 6);
  s.setAll(1);
  assert.equal(s.off(), 0);
});

test("preset names, as #preset= links spell them", () => {
  assert.deepEqual(parsePreset("ch5-syntactic"), { kind: "ch5-syntactic" });
  assert.deepEqual(parsePreset("ch6-importance-24"), { kind: "ch6-importance", count: 24 });
  assert.deepEqual(parsePreset("ch6-importance-0"), { kind: "ch6-importance", count: 0 });
  assert.deepEqual(parsePreset("all-off"), { kind: "all-off" });
  assert.deepEqual(parsePreset("all-on"), { kind: "all-on" });
  for (const bad of ["", "ch6-importance-", "ch6-importance-2x", "ch6-importance--1", "ch5", "CH5-SYNTACTIC", null, undefined]) {
    assert.equal(parsePreset(bad), null, String(bad));
  }
});

test("the presets' heads", () => {
  const mask = (name) => Array.from(presetMask(parsePreset(name), PRESETS, 2, 3));
  assert.deepEqual(mask("ch5-syntactic"), [1, 0, 1, 1, 1, 0]); // heads 0-1 and 1-2
  assert.deepEqual(mask("ch6-importance-2"), [1, 1, 0, 0, 1, 1]); // 1-0, then 0-2
  assert.deepEqual(mask("ch6-importance-0"), [1, 1, 1, 1, 1, 1]);
  assert.deepEqual(mask("ch6-importance-99"), [0, 1, 0, 0, 1, 0]); // the whole order
  assert.deepEqual(mask("all-off"), [0, 0, 0, 0, 0, 0]);
  assert.equal(presetMask(null, PRESETS, 2, 3), null);
});

test("a preset replaces the state; an unknown one leaves it alone", () => {
  const s = new HeadSwitches(2, 3);
  s.toggleHead(0, 0);
  assert.equal(s.applyPreset("ch6-importance-1", PRESETS), true);
  assert.deepEqual(state(s), [1, 1, 1, 0, 1, 1]); // head 0-0 came back
  assert.equal(s.applyPreset("ch7-everything", PRESETS), false);
  assert.deepEqual(state(s), [1, 1, 1, 0, 1, 1]);
});

test("a link's #text= and #preset=", () => {
  assert.deepEqual(parseHash("#preset=ch5-syntactic&text=The+cat%20sat%3F"), { text: "The cat sat?", preset: "ch5-syntactic" });
  assert.deepEqual(parseHash("#text=%E6%B3%A8%E6%84%8F"), { text: "注意", preset: null });
  assert.deepEqual(parseHash("preset=all-off"), { text: null, preset: "all-off" });
  assert.deepEqual(parseHash("#text=&preset="), { text: null, preset: null });
  assert.deepEqual(parseHash(""), { text: null, preset: null });
});

test("the grid's keys (head -1 is the layer's button), stopping at the edges", () => {
  const move = (key, l, h) => gridMove(key, l, h, 2, 3);
  assert.deepEqual(move("ArrowRight", 0, 0), [0, 1]);
  assert.deepEqual(move("ArrowRight", 0, 2), [0, 2]);
  assert.deepEqual(move("ArrowLeft", 0, 0), [0, -1]);
  assert.deepEqual(move("ArrowLeft", 1, -1), [1, -1]);
  assert.deepEqual(move("ArrowRight", 1, -1), [1, 0]);
  assert.deepEqual(move("ArrowDown", 0, 2), [1, 2]);
  assert.deepEqual(move("ArrowDown", 1, 2), [1, 2]);
  assert.deepEqual(move("ArrowUp", 0, -1), [0, -1]);
  assert.deepEqual(move("ArrowDown", 0, -1), [1, -1]);
  assert.deepEqual(move("Home", 1, 2), [1, -1]);
  assert.deepEqual(move("End", 1, -1), [1, 2]);
  assert.equal(move("Enter", 0, 0), null);
  assert.equal(move("a", 0, 0), null);
});

test("on a phone the grid is transposed: down is the next head, right the next layer", () => {
  const move = (key, l, h) => gridMove(key, l, h, 2, 3, true);
  assert.deepEqual(move("ArrowDown", 0, 0), [0, 1]);
  assert.deepEqual(move("ArrowDown", 0, 2), [0, 2]);
  assert.deepEqual(move("ArrowUp", 0, 0), [0, -1]);
  assert.deepEqual(move("ArrowRight", 0, 1), [1, 1]);
  assert.deepEqual(move("ArrowRight", 1, 1), [1, 1]);
  assert.deepEqual(move("ArrowLeft", 1, -1), [0, -1]);
  assert.deepEqual(move("Home", 1, 2), [1, -1]);
});

test("the count's message", () => {
  assert.equal(countMessage(0, 72), "count_all_on");
  assert.equal(countMessage(1, 72), "count_off");
  assert.equal(countMessage(71, 72), "count_off");
  assert.equal(countMessage(72, 72), "count_all_off");
});

test("run()'s headMask: nested, flat, typed or null; anything else is refused, naming the shape", () => {
  assert.deepEqual(Array.from(flatMask([[1, 0, 1], [0, 1, 0.5]], 2, 3)), [1, 0, 1, 0, 1, 0.5]);
  assert.deepEqual(Array.from(flatMask([1, 1, 1, 0, 0, 0], 2, 3)), [1, 1, 1, 0, 0, 0]);
  assert.deepEqual(Array.from(flatMask(new Float32Array([0, 1, 0, 1, 0, 1]), 2, 3)), [0, 1, 0, 1, 0, 1]);
  assert.deepEqual(Array.from(flatMask(null, 2, 3)), [1, 1, 1, 1, 1, 1]);
  assert.ok(flatMask(null, 2, 3) instanceof Float32Array);
  assert.throws(() => flatMask([[1, 1], [1, 1]], 2, 3), { name: "TypeError", message: /2 × 3 finite numbers, got 4 values/ });
  assert.throws(() => flatMask([1, 1, 1, 1, 1, NaN], 2, 3), TypeError);
  assert.throws(() => flatMask([1, 1, 1, 1, 1, "1"], 2, 3), TypeError);
  assert.throws(() => flatMask("all", 2, 3), { name: "TypeError", message: /layers × heads/ });
});

test("chapter 6's menu shows the step whose heads are off, whichever control switched them", () => {
  const steps = [1, 2, 4]; // the menu's steps (none for 0: "all on" has its own button)
  const s = new HeadSwitches(2, 3);
  const step = () => ch6Step(s.on, PRESETS, steps, 2, 3);
  assert.equal(step(), null); // all on
  s.applyPreset("ch6-importance-2", PRESETS);
  assert.equal(step(), 2);
  s.toggleHead(0, 2); // back on: the order's first head alone is off
  assert.equal(step(), 1);
  s.toggleHead(0, 1); // a head outside the order
  assert.equal(step(), null);
  s.toggleHead(0, 1);
  s.setAll(1); // "All heads on"
  assert.equal(step(), null);
  s.applyPreset("ch5-syntactic", PRESETS); // 0-1 and 1-2: not a step of the order
  assert.equal(step(), null);
  s.applyPreset("ch6-importance-99", PRESETS); // the whole order, a step the menu has (4)
  assert.equal(step(), 4);
  s.setAll(0);
  assert.equal(step(), null); // all off: more than the order
  assert.equal(ch6Step(new HeadSwitches(2, 3).on, PRESETS, [0, 1], 2, 3), 0);
});

test("random heads: as many off as asked, the same set for the same draw, another for another", () => {
  const a = randomMask(6, 12, 7, 0);
  assert.equal(a.length, 72);
  assert.equal(a.filter((v) => v === 0).length, 7);
  assert.deepEqual(Array.from(randomMask(6, 12, 7, 0)), Array.from(a));
  assert.notDeepEqual(Array.from(randomMask(6, 12, 7, 1)), Array.from(a));
  assert.equal(randomMask(6, 12, 0, 3).filter((v) => v === 0).length, 0);
  assert.equal(randomMask(6, 12, 72, 3).filter((v) => v === 0).length, 72);
  // Over many draws every head is chosen now and then (no head is never drawn).
  const seen = new Set();
  for (let d = 0; d < 200; d++) randomMask(6, 12, 5, d).forEach((v, i) => v === 0 && seen.add(i));
  assert.equal(seen.size, 72);
});
