// The model, off the page's main thread (engine.js starts it as a module worker): the page
// stays free to scroll, point and type while a long text runs. Messages, each answered with
// its `id`: {kind: "runtime", vendor} loads ONNX Runtime Web; {kind: "create", model} makes
// the session from the model's bytes; {kind: "run", batch, mask, layers, heads, maps, keep}
// runs it (`keep`: see session.js), sends each layer's maps as soon as they are known when
// `maps` is true ({id, layer, maps}, a copy handed over without a second one) and then answers
// with the embeddings. A failure answers {id, error}.

import { createSession, loadRuntime, runSession } from "./session.js";

let ort = null;
let session = null;

async function answer({ id, kind, vendor, model, batch, mask, layers, heads, maps: withMaps, keep }) {
  if (kind === "hello") return [{}, []];
  if (kind === "runtime") {
    ort = await loadRuntime(vendor);
    return [{}, []];
  }
  if (kind === "create") {
    session = await createSession(ort, model);
    return [{}, []];
  }
  if (kind === "run") {
    const r = await runSession(ort, session, batch, mask, layers, heads, (layer, maps) => {
      if (!withMaps) return;
      const copy = maps.slice(); // the session keeps its own
      self.postMessage({ id, layer, maps: copy }, [copy.buffer]);
    }, keep);
    return [r, r.embeddings.map((e) => e.buffer)];
  }
  throw new Error(`the model's worker has no task "${kind}"`);
}

self.addEventListener("message", async (event) => {
  const { id } = event.data;
  try {
    const [reply, transfer] = await answer(event.data);
    self.postMessage({ id, ...reply }, transfer);
  } catch (err) {
    self.postMessage({ id, error: err && err.message ? err.message : String(err) });
  }
});
