// lab/strings.js: the page's messages and t(), on hand-checked cases.
import assert from "node:assert/strict";
import { test } from "node:test";

import { fmt, LabStringsError, mb, parseItem, readMessages, Words } from "../../../lab/strings.js";

// A stand-in for the page: <li><code>key</code>: text</li> items, as MyST renders the list.
const page = (items) => ({
  querySelectorAll: (sel) => {
    assert.equal(sel, ".mha-lab-strings li");
    return items.map(([key, text]) => ({ textContent: text, querySelector: () => (key === null ? null : { textContent: key }) }));
  },
});

const words = new Words(new Map([
  ["greet", "Hello {name}, you have {n} new messages."],
  ["title", "Head {layer}-{head} (layer {layer}, head {head})"],
  ["plain", "All heads are on."],
  ["similarity", "Cosine: {cosine} (before {before})."],
]));

test("t fills every placeholder, repeated ones too, and ignores extra values", () => {
  assert.equal(words.t("greet", { name: "Ann", n: 3 }), "Hello Ann, you have 3 new messages.");
  assert.equal(words.t("title", { layer: 2, head: 0 }), "Head 2-0 (layer 2, head 0)");
  assert.equal(words.t("plain", { off: 5 }), "All heads are on.");
  assert.equal(words.t("greet", { name: "", n: 0 }), "Hello , you have 0 new messages.");
});

test("t throws naming a missing key", () => {
  assert.throws(() => words.t("nope"), (err) => err instanceof LabStringsError && err.message.includes('no message "nope"'));
});

test("t throws naming the key and the placeholder that has no value", () => {
  const named = (key, name) => (err) => err instanceof LabStringsError && err.message.includes(`message "${key}"`) && err.message.includes(`{${name}}`);
  assert.throws(() => words.t("greet", { name: "Ann" }), named("greet", "n"));
  assert.throws(() => words.t("greet", { name: null, n: 1 }), named("greet", "name"));
  assert.throws(() => words.t("title", { layer: 1, head: undefined }), named("title", "head"));
  assert.throws(() => words.t("greet", Object.create({ name: "inherited", n: 1 })), named("greet", "name"));
});

test("parts keeps a node whole between the text around it", () => {
  const node = { tag: "strong" };
  const parts = words.parts("similarity", { cosine: node, before: 0.25 });
  assert.deepEqual(parts, ["Cosine: ", node, " (before ", "0.25", ")."]);
  assert.equal(parts[1], node);
  assert.deepEqual(new Words(new Map([["x", "{a}{b}"]])).parts("x", { a: 1, b: "z" }), ["1", "z"]);
});

test("an item is its key, a colon (or a full-width one) and the message, spaces folded", () => {
  assert.deepEqual(parseItem("  all_on:   All heads\n  on  ", "all_on"), ["all_on", "All heads on"]);
  assert.deepEqual(parseItem("all_on：所有头都开", " all_on "), ["all_on", "所有头都开"]);
  assert.deepEqual(parseItem("k: a {x} b", "k"), ["k", "a {x} b"]);
});

test("a malformed item throws, naming what is wrong", () => {
  const says = (text) => (err) => err instanceof LabStringsError && err.message.includes(text);
  assert.throws(() => parseItem("all_on All heads", "all_on"), says('"all_on" lacks the ": "'));
  assert.throws(() => parseItem("Text first: all_on", "all_on"), says("does not start with its `key`"));
  assert.throws(() => parseItem("no code here", ""), says("does not start with its `key`"));
});

test("readMessages reads every item and refuses an empty list, a duplicate or an item without code", () => {
  const got = readMessages(page([["a", "a: first {x}"], ["b", "b : second"]]));
  assert.deepEqual([...got], [["a", "first {x}"], ["b", "second"]]);
  assert.throws(() => readMessages(page([])), /no \.mha-lab-strings list/);
  assert.throws(() => readMessages(page([["a", "a: one"], ["a", "a: two"]])), /message "a" appears twice/);
  assert.throws(() => readMessages(page([[null, "a: one"]])), /does not start with its `key`/);
});

test("numbers as the page shows them", () => {
  assert.equal(fmt(0.123456), "0.12");
  assert.equal(fmt(2, 0), "2");
  assert.equal(fmt(99.95, 1), "100.0"); // toFixed rounds: 99.95 is stored as 99.9500000000000028...
  assert.equal(mb(28_765_432), "28.8 MB");
});
