// DOM shorthands the page and its facts share.

export const $ = (sel, root = document) => root.querySelector(sel);

// el("p", {class: "x", text: "words", id: "y"}, ...children): attributes, text and children.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

// Resolves in a task of its own: a long piece of work awaits it between its parts, so that
// the page can answer the reader (scroll, point, type) in between.
export function nextTask() {
  if (globalThis.scheduler && typeof globalThis.scheduler.yield === "function") return globalThis.scheduler.yield();
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => resolve();
    channel.port2.postMessage(null);
  });
}
