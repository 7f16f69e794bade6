// The lab's words. Every word of the interface comes from the page's own Markdown
// (book/lab.md), a hidden list `.mha-lab-strings` whose items read "`key`: text with
// {placeholders}"; gettext translates the list with the rest of the page. A missing key or
// placeholder value throws, naming it: a broken catalogue must fail loudly, not show "{n}".
// No DOM at import time, so that node can test it (tests/book/lab_js/).

export class LabStringsError extends Error {
  constructor(message) {
    super(`mha-lab strings (book/lab.md): ${message}`);
    this.name = "LabStringsError";
  }
}

const PLACEHOLDER = /\{([a-z0-9_]+)\}/g;

// One list item → [key, template]. `whole` is the item's text, `key` the text of its <code>.
export function parseItem(whole, key) {
  whole = whole.replace(/[ \t\r\n]+/g, " ").trim();
  key = key.trim();
  if (!key || !whole.startsWith(key)) throw new LabStringsError(`an item does not start with its \`key\`: "${whole}"`);
  const rest = whole.slice(key.length);
  const colon = /^\s*[:\uff1a]\s*/.exec(rest); // ": ", or a full-width colon in translation
  if (!colon) throw new LabStringsError(`message "${key}" lacks the ": " after its key`);
  return [key, rest.slice(colon[0].length)];
}

// The messages of a page (anything with querySelectorAll: a document, or a test's stand-in).
export function readMessages(doc) {
  const items = doc.querySelectorAll(".mha-lab-strings li");
  if (items.length === 0) throw new LabStringsError("the page has no .mha-lab-strings list");
  const found = new Map();
  for (const item of items) {
    const code = item.querySelector("code");
    const [key, template] = parseItem(item.textContent, code ? code.textContent : "");
    if (found.has(key)) throw new LabStringsError(`message "${key}" appears twice`);
    found.set(key, template);
  }
  return found;
}

// Templates filled in. `parts` keeps non-text values (DOM nodes) whole, for replaceChildren().
export class Words {
  constructor(messages) {
    this.messages = messages;
    this.t = this.t.bind(this);
    this.parts = this.parts.bind(this);
  }

  parts(key, values = {}) {
    const template = this.messages.get(key);
    if (template === undefined) throw new LabStringsError(`no message "${key}"`);
    const out = [];
    let at = 0;
    for (const m of template.matchAll(PLACEHOLDER)) {
      const name = m[1];
      const value = Object.prototype.hasOwnProperty.call(values, name) ? values[name] : null;
      if (value == null) throw new LabStringsError(`message "${key}": no value for its placeholder {${name}}`);
      out.push(template.slice(at, m.index), typeof value === "object" ? value : String(value));
      at = m.index + m[0].length;
    }
    out.push(template.slice(at));
    return out.filter((p) => p !== "");
  }

  // The message `key` as text, its {placeholders} filled in from `values`.
  t(key, values = {}) {
    return this.parts(key, values).join("");
  }
}

// The page's own elements that name a message: data-lab-text (their text), data-lab-label
// (their aria-label; not spelt aria-label, so that no extension takes the key for words).
export function applyPageStrings(doc, words) {
  for (const node of doc.querySelectorAll("[data-lab-text]")) node.textContent = words.t(node.dataset.labText);
  for (const node of doc.querySelectorAll("[data-lab-label]")) node.setAttribute("aria-label", words.t(node.dataset.labLabel));
}

// Numbers as the page shows them.
export const fmt = (x, digits = 2) => Number(x).toFixed(digits);
export const mb = (bytes) => `${fmt(bytes / 1e6, 1)} MB`;
