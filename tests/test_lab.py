"""The live lab (book/lab.md) in headless Chromium, checked against mha_lib.bert in Python.

The page runs the exported MiniLM with ONNX Runtime Web; ``window.mhaLab.run`` must give the
Python tokenizer's tokens exactly, and maps and embeddings within the tolerance that the
chosen precision holds (fp16 weights, float32 arithmetic: the export measured about 1e-3 on
the maps), for the book's sentences under several head masks. Then the page as a reader
uses it: clicking and the keyboard switch heads, the maps downstream change and those
upstream do not, bad input gets a message, a model that fails to load says so, a page
opened from disk says how to serve it, axe-core finds nothing serious, no request leaves the
site, the whole download stays within budget, and no other page loads the model. Each action
is announced once, from the page's one live region. No fixed sleeps: after an action the tests
wait for the page's own count of finished updates (``mhaLab.draws``) to grow.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import torch
from test_site import (
    _AXE_JS,
    AXE_EXEMPT,
    CHROMIUM,
    CHROMIUM_ARGS,
    NODE_MODULES,
    PAGE_TIMEOUT_MS,
    PAGES,
    SCREENSHOTS,
    _missing_browser,
    _QuietHandler,
)

pytestmark = pytest.mark.book

LAB = "book/lab.html"
REPO = Path(__file__).resolve().parents[1]
MAP_TOLERANCE = 5e-3  # largest |Δ attention weight|, any head, any query, any key
EMBEDDING_TOLERANCE = 5e-3  # largest |Δ| of a mean-pooled embedding coordinate
COSINE_FLOOR = 0.9999  # embedding direction, page vs PyTorch
DOWNLOAD_BUDGET = 65e6  # bytes, the whole lab page
LOAD_TIMEOUT_MS = 120_000  # a busy CI machine; bench/lab.py measures the real load time


@pytest.fixture(scope="module")
def browser_page(built_book: Path) -> Iterator[tuple[object, str, list[str], list[int]]]:
    """One Chromium context on the served site; the lab page loaded once; off-host requests cut."""
    if not CHROMIUM.is_file():
        _missing_browser(f"{CHROMIUM} not found")
    if not (NODE_MODULES / "axe-core" / "axe.min.js").is_file():
        _missing_browser(f"axe-core missing under {NODE_MODULES}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing_browser("the Python package playwright is not installed")
    if not (built_book / LAB).is_file():
        pytest.fail(f"the built site has no {LAB}", pytrace=False)
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(built_book))
    )
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    blocked: list[str] = []
    sizes: list[int] = []

    def route(r: object) -> None:
        if urlsplit(r.request.url).hostname in ("127.0.0.1", "localhost"):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.set_default_timeout(PAGE_TIMEOUT_MS)
            context.route("**/*", route)
            tab = context.new_page()
            errors: list[str] = []
            tab.on("pageerror", lambda exc: errors.append(str(exc)))
            tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            tab.on("requestfinished", lambda req: sizes.append(req.sizes()["responseBodySize"]))
            tab.goto(base + LAB, wait_until="load")
            tab.wait_for_function("() => window.mhaLab", timeout=LOAD_TIMEOUT_MS)
            tab.evaluate("() => mhaLab.ready")  # after the first sentence is drawn
            assert tab.evaluate("() => mhaLab.draws") >= 1
            assert tab.locator("#mha-lab-cos").count() == 1
            assert not errors, f"JavaScript errors while the lab loaded: {errors}"
            yield tab, base, blocked, sizes
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            tab.screenshot(path=str(SCREENSHOTS / "lab__after_tests.png"), full_page=True)
            context.close()
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="module")
def reference() -> tuple[object, object]:
    from mha_lib import bert

    return bert.load()


def book_sentences() -> list[str]:
    from mha_lib.data.sentences import NATURAL_SENTENCES

    return ["The cat sat on the mat because it was tired.", *NATURAL_SENTENCES[:9]]


def head_masks(layers: int = 6, heads: int = 12) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(17)
    layer_2_off = torch.ones(layers, heads)
    layer_2_off[2] = 0
    return {
        "all on": torch.ones(layers, heads),
        "one head off (0-3)": torch.ones(layers, heads).index_put_(
            (torch.tensor(0), torch.tensor(3)), torch.tensor(0.0)
        ),
        "layer 2 off": layer_2_off,
        "random half off": (torch.rand(layers, heads, generator=g) > 0.5).float(),
        "all off": torch.zeros(layers, heads),
    }


def test_lab_matches_python_on_the_books_sentences(browser_page, reference) -> None:
    """Tokens exactly, maps and embeddings within tolerance: 10 sentences × 5 head masks."""
    from mha_lib.bert.lab import lab_outputs

    tab, *_ = browser_page
    model, tokenizer = reference
    worst_map = worst_emb = 0.0
    worst_cos = 1.0
    failures = []
    sentences = book_sentences()
    masks = head_masks()
    assert len(sentences) >= 10 and len(masks) >= 5
    for name, mask in masks.items():
        for text in sentences:
            got = tab.evaluate("([t, m]) => mhaLab.run(t, m)", [text, mask.tolist()])
            tokens, maps, emb = lab_outputs(model, tokenizer, text, mask)
            if got["tokens"] != tokens:
                failures.append(f"{name} / {text!r}: tokens {got['tokens']} != {tokens}")
                continue
            page_maps = torch.tensor(got["attentions"])
            assert page_maps.shape == maps.shape, f"{name} / {text!r}: {page_maps.shape}"
            page_emb = torch.tensor(got["embedding"])
            d_map = float((page_maps - maps).abs().max())
            d_emb = float((page_emb - emb).abs().max())
            cos = float(torch.nn.functional.cosine_similarity(page_emb, emb, dim=0))
            worst_map, worst_emb, worst_cos = (
                max(worst_map, d_map),
                max(worst_emb, d_emb),
                min(worst_cos, cos),
            )
    print(
        f"\nlab vs PyTorch over {len(sentences)} sentences × {len(masks)} masks: max |Δ map| "
        f"{worst_map:.2e}, max |Δ embedding| {worst_emb:.2e}, min cosine {worst_cos:.6f}"
    )
    assert not failures, "\n".join(failures)
    assert worst_map <= MAP_TOLERANCE, f"maps differ by up to {worst_map:.2e}"
    assert worst_emb <= EMBEDDING_TOLERANCE, f"embeddings differ by up to {worst_emb:.2e}"
    assert worst_cos >= COSINE_FLOOR, f"embedding cosine down to {worst_cos:.6f}"


def test_tricky_text_and_truncation_match_python(browser_page, reference) -> None:
    """The page's tokenizer on accents, punctuation, numbers, unknown words, Chinese, 600+ chars."""
    from mha_lib.bert.lab import lab_outputs

    tab, *_ = browser_page
    model, tokenizer = reference
    long_text = " ".join(["attention"] * 600) + " and more words"  # > 512 positions, > 600 chars
    for text in [
        "Café déjà vu — naïve résumé!",
        "3.14159, 1,000,000 and 42 %",
        "zqxjvtk florbnax",
        "注意力机制是什么？",
        long_text,
    ]:
        tokens, maps, _ = lab_outputs(model, tokenizer, text)
        if text is long_text:  # the maps of 512 tokens are too large to ship to Python
            got = tab.evaluate(
                "t => mhaLab.run(t, null).then(r => ({tokens: r.tokens, "
                "truncated: r.truncated, T: r.attentions[0][0].length}))",
                text,
            )
            assert got["tokens"] == tokens and got["T"] == len(tokens)
            assert len(tokens) == model.config.max_position_embeddings and got["truncated"] > 0
            continue
        got = tab.evaluate("t => mhaLab.run(t, null)", text)
        assert got["tokens"] == tokens, text[:40]
        assert float((torch.tensor(got["attentions"]) - maps).abs().max()) <= MAP_TOLERANCE


def _tile(tab: object, layer: int, head: int) -> object:
    return tab.locator(f".mha-lab-tile[data-layer='{layer}'][data-head='{head}']")


def _changes(tab: object) -> list[list[float]]:
    """Per tile, how far its map moved from all heads on (the page's own data-change)."""
    return tab.evaluate("""() => { const rows = [];
      for (const t of document.querySelectorAll('.mha-lab-tile')) {
        const l = +t.dataset.layer; (rows[l] = rows[l] || []).push(+t.dataset.change); }
      return rows; }""")


def _act(tab: object, action: Callable[[], object]) -> None:
    """Do what a reader does, then wait until the page has finished updating for it."""
    before = tab.evaluate("() => mhaLab.draws")
    action()
    tab.wait_for_function("n => mhaLab.draws > n", arg=before)


def _all_on(tab: object) -> None:
    _act(tab, lambda: tab.click("#mha-lab-all-on"))


def test_clicking_a_head_changes_the_maps_downstream_only(browser_page) -> None:
    tab, *_ = browser_page
    _all_on(tab)
    cos_before = tab.inner_text("#mha-lab-cos")
    _act(tab, lambda: _tile(tab, 2, 5).click())
    assert _tile(tab, 2, 5).get_attribute("aria-pressed") == "false"
    changes = _changes(tab)
    assert all(c == 0 for row in changes[:3] for c in row), "layers 0–2 must not change"
    assert all(c > 0 for row in changes[3:] for c in row), "every later head's map must change"
    assert "switched off" in tab.inner_text("#mha-lab-large-title")
    assert tab.inner_text("#mha-lab-count").startswith("1 of")
    _act(tab, lambda: tab.click("#mha-lab-all-off"))
    assert tab.inner_text("#mha-lab-cos") != cos_before
    assert "no token sees any other" in tab.inner_text("#mha-lab-count")
    _all_on(tab)


def test_keyboard_alone_switches_heads_and_layers(browser_page) -> None:
    tab, *_ = browser_page
    _all_on(tab)
    tab.locator(".mha-lab-tile[tabindex='0']").focus()
    for key in ["Home", "ArrowRight", "ArrowDown", "ArrowRight", "ArrowRight"]:
        tab.keyboard.press(key)
    focused = tab.evaluate(
        "() => [document.activeElement.dataset.layer, document.activeElement.dataset.head]"
    )
    assert focused[0] is not None and focused[1] is not None, focused
    layer, head = int(focused[0]), int(focused[1])
    _act(tab, lambda: tab.keyboard.press("Enter"))
    assert _tile(tab, layer, head).get_attribute("aria-pressed") == "false"
    _act(tab, lambda: tab.keyboard.press("Space"))
    assert _tile(tab, layer, head).get_attribute("aria-pressed") == "true"
    tab.keyboard.press("Home")  # the layer's own button
    _act(tab, lambda: tab.keyboard.press("Enter"))
    states = {_tile(tab, layer, h).get_attribute("aria-pressed") for h in range(12)}
    assert states == {"false"}, "Enter on the layer button switches the whole layer off"
    _all_on(tab)


def test_presets_from_the_chapters(browser_page) -> None:
    tab, *_ = browser_page
    meta = tab.evaluate("() => mhaLab.meta.presets")
    _act(tab, lambda: tab.click("#mha-lab-ch5"))
    off = {
        (int(t.get_attribute("data-layer")), int(t.get_attribute("data-head")))
        for t in tab.locator(".mha-lab-tile[aria-pressed='false']").all()
    }
    assert off == {(s["layer"], s["head"]) for s in meta["ch5_syntactic"].values()}
    n = meta["ch6_pruned_steps"][2]
    _act(tab, lambda: tab.select_option("#mha-lab-ch6", str(n)))
    off = {
        (int(t.get_attribute("data-layer")), int(t.get_attribute("data-head")))
        for t in tab.locator(".mha-lab-tile[aria-pressed='false']").all()
    }
    assert off == {tuple(lh) for lh in meta["ch6_importance_order"][:n]}
    _all_on(tab)


def test_bad_input_gets_a_message(browser_page) -> None:
    tab, *_ = browser_page
    for text, expected in [
        ("", "Type a sentence"),
        ("   \n\t ", "Only whitespace"),
        (" ".join(["word"] * 700), "cut off"),
    ]:
        tab.fill("#mha-lab-text", text)
        tab.wait_for_function(
            "e => document.querySelector('#mha-lab-note').textContent.includes(e)",
            arg=expected,
            timeout=30_000,
        )
    message = tab.evaluate("() => mhaLab.run('  ', null).then(() => 'ran', e => e.message)")
    assert "empty" in message
    _act(tab, lambda: tab.fill("#mha-lab-text", "The cat sat on the mat because it was tired."))


def test_axe_finds_nothing_serious_on_the_working_lab(browser_page) -> None:
    tab, *_ = browser_page
    tab.add_script_tag(path=str(NODE_MODULES / "axe-core" / "axe.min.js"))
    violations = tab.evaluate(_AXE_JS, [[rule, sel] for rule, sel, _ in AXE_EXEMPT])
    assert not violations, violations


def test_nothing_leaves_the_site_and_the_download_fits(browser_page) -> None:
    _, _, blocked, sizes = browser_page
    assert not blocked, f"requests that left the site: {blocked}"
    assert 0 < sum(sizes) <= DOWNLOAD_BUDGET, f"the lab downloaded {sum(sizes) / 1e6:.1f} MB"


def test_a_model_that_fails_to_load_is_reported(browser_page) -> None:
    tab, base, *_ = browser_page
    page = tab.context.new_page()
    page.route("**/minilm-lab.onnx", lambda r: r.fulfill(status=404, body="gone"))
    try:
        page.goto(base + LAB)
        page.wait_for_function(
            "() => document.querySelector('#mha-lab-status').dataset.kind === 'error'"
        )
        assert "could not load its model" in page.inner_text("#mha-lab-status")
    finally:
        page.close()


def test_the_page_opened_from_disk_says_how_to_serve_it(browser_page, built_book) -> None:
    tab, *_ = browser_page
    context = tab.context.browser.new_context()  # no routing: file:// goes straight to disk
    page = context.new_page()
    try:
        page.goto((built_book / LAB).as_uri())
        status = page.inner_text("#mha-lab-status")
        assert "opened from disk" in status and "python3 -m http.server" in status
    finally:
        context.close()


def test_other_pages_do_not_load_the_model(browser_page) -> None:
    tab, base, *_ = browser_page
    page = tab.context.new_page()
    urls: list[str] = []
    page.on("request", lambda r: urls.append(r.url))
    try:
        other = next(p for p in PAGES if p != LAB.removesuffix(".html"))
        page.goto(base + f"{other}.html", wait_until="load")
        # Only lab.js fetches the model; a page that names no lab file never loads it.
        named = page.evaluate(
            "() => [...document.querySelectorAll('script[src], link[href]')]"
            ".map(e => e.src || e.href).filter(u => u.includes('/_static/lab/'))"
        )
    finally:
        page.close()
    assert not named, named
    assert not [u for u in urls if "/_static/lab/" in u or "onnxruntime" in u], urls


def test_a_link_with_a_preset_opens_the_lab_with_those_heads_off(browser_page) -> None:
    """The chapters link to lab.html#preset=…; the page applies the preset on load."""
    tab, base, *_ = browser_page
    page = tab.context.new_page()
    try:
        page.goto(base + LAB + "#preset=ch6-importance-12")
        page.wait_for_function("() => window.mhaLab", timeout=LOAD_TIMEOUT_MS)
        page.evaluate("() => mhaLab.ready")
        order = page.evaluate("() => mhaLab.meta.presets.ch6_importance_order")
        off = {
            (int(t.get_attribute("data-layer")), int(t.get_attribute("data-head")))
            for t in page.locator(".mha-lab-tile[aria-pressed='false']").all()
        }
        assert off == {tuple(lh) for lh in order[:12]}
        page.evaluate("() => { location.hash = 'preset=ch5-syntactic'; }")
        page.wait_for_function(
            "() => document.querySelectorAll('.mha-lab-tile[aria-pressed=\"false\"]').length"
            " === new Set(Object.values(mhaLab.meta.presets.ch5_syntactic)"
            ".map(s => s.layer + '-' + s.head)).size"
        )
    finally:
        page.close()


# Every text the live region takes, recorded in the page (one entry per change).
_RECORD_ANNOUNCEMENTS_JS = """() => {
  window.mhaLabSaid = [];
  const box = document.querySelector('#mha-lab-announce');
  new MutationObserver(() => window.mhaLabSaid.push(box.textContent.trim()))
    .observe(box, {childList: true, characterData: true, subtree: true});
}"""


def _said(tab: object) -> list[str]:
    """What the live region said since the last call."""
    return tab.evaluate("() => window.mhaLabSaid.splice(0)")


def test_each_action_is_announced_once_from_one_live_region(browser_page) -> None:
    """Screen readers hear one concise message per action, not the four boxes that change."""
    tab, *_ = browser_page
    _all_on(tab)
    live = tab.evaluate(
        "() => [...document.querySelectorAll('#mha-lab [aria-live], #mha-lab [role=status], "
        "#mha-lab [role=alert], #mha-lab [role=log], #mha-lab-facts [aria-live]')].map(e => e.id)"
    )
    assert live == ["mha-lab-announce"], live
    assert tab.get_attribute("#mha-lab-announce", "aria-live") == "polite"
    tab.evaluate(_RECORD_ANNOUNCEMENTS_JS)

    _act(tab, lambda: _tile(tab, 1, 7).click())  # a head: the count, and the similarity
    said = _said(tab)
    assert len(said) == 1, said
    assert said[0].startswith(tab.inner_text("#mha-lab-count")), said
    assert tab.inner_text("#mha-lab-cos") in said[0] and "similarity" in said[0], said

    _act(tab, lambda: tab.click("#mha-lab-all-on"))  # a preset: the same, once
    said = _said(tab)
    assert len(said) == 1 and said[0].startswith("All heads are on."), said

    _act(tab, lambda: tab.fill("#mha-lab-other", "A dog was sleeping on the rug."))
    said = _said(tab)  # new text: the note (tokens, time), and the similarity
    assert len(said) == 1, said
    assert said[0].startswith(tab.inner_text("#mha-lab-note")) and "tokens" in said[0], said
    assert tab.inner_text("#mha-lab-cos") in said[0], said

    _tile(tab, 0, 0).focus()  # moving between heads: the focused button speaks for itself
    tab.keyboard.press("ArrowRight")
    assert _said(tab) == []

    _act(tab, lambda: tab.fill("#mha-lab-text", ""))
    assert _said(tab) == [tab.inner_text("#mha-lab-note")]
    _act(tab, lambda: tab.fill("#mha-lab-text", "The cat sat on the mat because it was tired."))
    _act(tab, lambda: tab.fill("#mha-lab-other", "A kitten was sleeping on the rug."))


def test_drawn_resolves_after_the_next_update(browser_page) -> None:
    """mhaLab.drawn: a promise for the page's next finished update, with its count."""
    tab, *_ = browser_page
    _all_on(tab)
    got = tab.evaluate("""async () => {
      const before = mhaLab.draws;
      const drawn = mhaLab.drawn;
      document.querySelector('#mha-lab-all-off').click();
      const count = await drawn;
      const tiles = [...document.querySelectorAll('.mha-lab-tile')];
      return {before, count, now: mhaLab.draws,
              attr: +document.querySelector('#mha-lab').dataset.drawn,
              off: tiles.filter(t => t.getAttribute('aria-pressed') === 'false').length,
              changed: tiles.filter(t => +t.dataset.change > 0).length};
    }""")
    assert got["count"] == got["now"] == got["attr"] == got["before"] + 1, got
    assert got["off"] == 72 and got["changed"] > 0, got  # drawn: the tiles show the new maps
    _all_on(tab)


def _imports(module: Path) -> set[str]:
    text = module.read_text(encoding="utf-8")
    return set(re.findall(r"""(?:from|import\()\s*["']\./([\w.-]+\.js)["']""", text))


def test_the_site_serves_every_module_of_the_lab(built_book: Path) -> None:
    """lab.js and every module it imports, at their current versions, in both editions."""
    lab = REPO / "lab"
    needed, todo = set(), ["lab.js"]
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo.extend(_imports(lab / name))
    assert {"strings.js", "heads.js", "maps.js", "wordpiece.js"} <= needed, needed
    editions = [built_book] + ([built_book / "zh"] if (built_book / "zh" / LAB).is_file() else [])
    for root in editions:
        served = root / "_static" / "lab"
        for name in sorted(needed | {"lab.css"}):
            assert (served / name).is_file(), f"{served / name} is missing"
            assert (served / name).read_bytes() == (lab / name).read_bytes(), f"{name} is stale"
