// The live lab (book/lab.md): loads the model, builds the page, and offers window.mhaLab.
//
// window.mhaLab: {ready, run(text, headMask), preset(name), meta, stats, drawn, draws}.
// ready resolves when the model is loaded and the first sentence drawn; run resolves to
// {tokens, attentions[layer][head][query][key], embedding, truncated}; headMask: layers ×
// heads numbers (nested or flat), 1 keeps a head, 0 removes it. drawn resolves (with the
// count) when the page next finishes an update after a reader's action; draws counts them
// (also the root's data-drawn), so a test waits for "draws > n" instead of sleeping. Within an
// update, the root's "mha-lab-maps" event says that the maps are drawn (the ranking follows).
//
// Modules, one concern each: strings.js (words), heads.js (which heads are on), maps.js (the
// maps' numbers), draw.js (canvases), engine.js (model and tokenizer), page.js (the page),
// facts.js (how this works). The pure ones are tested under node (tests/book/lab_js/).

import { $ } from "./dom.js";
import { benchNumbers, LabEngine } from "./engine.js";
import { facts } from "./facts.js";
import { parseHash } from "./heads.js";
import { nested } from "./maps.js";
import { LabPage } from "./page.js";
import { applyPageStrings, fmt, LabStringsError, mb, readMessages, Words } from "./strings.js";

// A link such as lab.html#preset=ch5-syntactic or #preset=ch6-importance-24&text=...
function followHash(page, root, { initial }) {
  const { text, preset } = parseHash(location.hash);
  if (text) $("#mha-lab-text", root).value = text;
  if (preset) page.applyPreset(preset, { run: !initial }); // on load, main's first run draws it
  else if (text && !initial) page.refresh(true);
}

async function main() {
  const root = document.getElementById("mha-lab");
  if (!root) return;
  const engine = new LabEngine();
  let page = null;
  let resolveReady;
  let rejectReady;
  const ready = new Promise((res, rej) => {
    resolveReady = res;
    rejectReady = rej;
  });
  ready.catch(() => {});
  window.mhaLab = {
    ready,
    stats: engine.stats,
    get meta() {
      return engine.meta;
    },
    get drawn() {
      return page ? page.drawn : ready.then(() => page.drawn);
    },
    get draws() {
      return page ? page.draws : 0;
    },
    async run(text, headMask) {
      await ready;
      const r = await engine.run(text, headMask);
      return { tokens: r.tokens, attentions: nested(r.maps, engine.L, engine.H, r.T), embedding: r.embedding, truncated: r.truncated };
    },
    preset: (name) => page.applyPreset(name),
  };
  if (location.protocol === "file:") return; // the page's own script says what to do
  let t = null;
  try {
    const words = new Words(readMessages(document));
    t = words.t;
    page = new LabPage(root, engine, words);
    page.status(t("status_loading"));
    page.announce(t("status_loading"));
    applyPageStrings(document, words);
    await engine.load((got, total) => page.status(total
      ? t("status_progress_total", { got: mb(got), total: mb(total) })
      : t("status_progress", { got: mb(got) })));
    page.build();
    root.classList.add("mha-lab-loaded");
    followHash(page, root, { initial: true });
    await page.refresh(true, { quiet: true }); // the status below says the lab is ready
    facts(document.getElementById("mha-lab-facts"), engine, await benchNumbers(), words);
    window.addEventListener("hashchange", () => followHash(page, root, { initial: false }));
    const loaded = t("status_ready", { seconds: fmt(engine.stats.loadMs / 1000, 1) });
    page.status(loaded, "ok");
    page.announce(loaded);
    resolveReady(true);
  } catch (err) {
    rejectReady(err);
    if (err instanceof LabStringsError || !page) throw err; // a broken catalogue: fail loudly
    const failed = t("status_error", { error: err.message });
    page.status(failed, "error");
    page.announce(failed);
  }
}

main();
