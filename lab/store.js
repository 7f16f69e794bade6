// The lab's two large files (the model, 33 MB, and ONNX Runtime's WebAssembly, 14 MB) kept in
// the browser's Cache Storage, by version: a reader who comes back, or switches to the other
// edition (both load the very same files), downloads neither again. The browser's HTTP cache
// is not enough: Chromium keeps no entry larger than an eighth of its cache (a few MB in a
// fresh profile). Where Cache Storage is missing or refuses (a page that is not a secure
// context, a full disk), the file is simply downloaded. Used on the page and in the worker.

const STORE = "mha-lab";

// The bytes at `url` (a URL) for `version`: from the store, else from `download()` (a promise
// of a Uint8Array), which are then stored in place of any other version's. Returns
// {bytes, cached}.
export async function cachedBytes(url, version, download) {
  const key = new URL(url);
  key.searchParams.set("v", version);
  let store = null;
  try {
    store = globalThis.caches ? await globalThis.caches.open(STORE) : null;
    const hit = store ? await store.match(key.href) : null;
    if (hit) return { bytes: new Uint8Array(await hit.arrayBuffer()), cached: true };
  } catch {
    store = null;
  }
  const bytes = await download();
  if (store) {
    try {
      for (const old of await store.keys()) {
        const seen = new URL(old.url);
        seen.search = "";
        if (seen.href === new URL(url).href) await store.delete(old);
      }
      await store.put(key.href, new Response(bytes));
    } catch {
      // not stored: the next visit downloads it again
    }
  }
  return { bytes, cached: false };
}
