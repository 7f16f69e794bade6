// What the reader's pointer means on the grid of heads. Pure: no DOM, tested under node.

// A click on a head's square: a tap (a finger, or a pen on a touch screen) shows the head
// large, and the switch beside the large map turns it off or on; a mouse click, or Enter or
// Space (a click without a pointer: `detail` 0), switches the head itself. `pointerType` is
// the click's own (empty where a browser does not say), `lastPointerType` that of the last
// pointer pressed on the square.
export function clickIntent(pointerType, detail, lastPointerType) {
  const type = pointerType || (detail > 0 ? lastPointerType : "");
  return type === "touch" || type === "pen" ? "show" : "switch";
}

// Where the pointer last was, to tell its own moves from the page scrolling under it: a
// browser reports the square under a still pointer when the page scrolls, and that must not
// change the large map.
export class PointerPlace {
  constructor() {
    this.at = null;
  }

  // Records (x, y) (px in the window); true when the pointer is somewhere new.
  moved(x, y) {
    const moved = this.at === null || this.at[0] !== x || this.at[1] !== y;
    this.at = [x, y];
    return moved;
  }
}
