// lab/pointer.js: what a click and a pointer move mean on the grid, on hand-checked cases.
import assert from "node:assert/strict";
import { test } from "node:test";

import { clickIntent, PointerPlace } from "../../../lab/pointer.js";

test("a tap shows the head, a mouse click or a key switches it", () => {
  assert.equal(clickIntent("touch", 1, "touch"), "show");
  assert.equal(clickIntent("pen", 1, "pen"), "show");
  assert.equal(clickIntent("mouse", 1, "mouse"), "switch");
  assert.equal(clickIntent("", 0, "touch"), "switch"); // Enter or Space after an earlier tap
  assert.equal(clickIntent("", 0, null), "switch");
});

test("a browser that does not say the click's pointer: the last one pressed decides", () => {
  assert.equal(clickIntent(undefined, 1, "touch"), "show");
  assert.equal(clickIntent(undefined, 1, "mouse"), "switch");
  assert.equal(clickIntent(undefined, 1, null), "switch");
  assert.equal(clickIntent(undefined, 0, "touch"), "switch"); // a key, whatever came before
});

test("the pointer moved, or the page scrolled under it", () => {
  const place = new PointerPlace();
  assert.equal(place.moved(10, 20), true); // the first report
  assert.equal(place.moved(10, 20), false); // same place: the page scrolled, or nothing moved
  assert.equal(place.moved(11, 20), true);
  assert.equal(place.moved(11, 19.5), true);
  assert.equal(place.moved(11, 19.5), false);
});
