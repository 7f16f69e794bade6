"""The live lab (book/lab.md) in headless Chromium, checked against mha_lib.bert in Python.

The page runs the exported MiniLM with ONNX Runtime Web; `window.mhaLab.run` must give the
Python tokenizer's tokens exactly, and maps and embeddings within the tolerance that the
chosen precision holds (fp16 weights, float32 arithmetic: the export measured about 1e-3 on
the maps), for the book's sentences under several head masks. Then the page as a reader
uses it: clicking and the keyboard switch heads, the maps downstream change and those
upstream do not, bad input gets a message, a model that fails to load says so, a page
opened from disk says how to serve it, axe-core finds nothing serious, no request leaves the
site, the whole download stays within budget, and no other page loads the model. Each action
is announced once, from the page's one live region. No fixed sleeps: after an action the tests
wait for the page's own count of finished updates (`mhaLab.draws`) to grow.

For real use: a paste of 1,000 words and a click after it never hold the page's main thread
for long (the model runs in a worker, the maps are drawn at their on-screen pixels, a layer
at a time), and the note states the update's measured time; what the canvases show is the
model's weights, pixel for pixel; chapter 6's menu follows the heads whichever control
changed them, and says that its steps move within the test's noise; on a touch screen a tap
shows a head and the large map's switch switches it; scrolling under a still pointer does not
change the large map; no interface text names the book's code; the site has its own icon.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Iterator
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
    served,
)

pytestmark = pytest.mark.book

LAB = "book/lab.html"
REPO = Path(__file__).resolve().parents[2]
MAP_TOLERANCE = 5e-3  # largest |Δ attention weight|, any head, any query, any key
EMBEDDING_TOLERANCE = 5e-3  # largest |Δ| of a mean-pooled embedding coordinate
COSINE_FLOOR = 0.9999  # embedding direction, page vs PyTorch
DOWNLOAD_BUDGET = 55e6  # bytes, the whole lab page (the model, the runtime, the page: 50.4 MB)
MODEL_BUDGET = 35e6  # bytes, the model as downloaded (issue 37: it was 46 MB)
LOAD_TIMEOUT_MS = 120_000  # a busy CI machine; bench/lab.py measures the real load time
# A long paste (bench/lab.py's 1,000 words, cut to the tokens the lab reads: 512 until
# 2026-12-05, 256 since): the longest task of the page's main thread after a click, and the
# click's wait beyond the model's own runs. Before this bound,
# the model ran on the main thread and the drawing took over a second: the longest task was
# 2.5 s or more on a 2-core machine, the wait beyond the runs 1.6 s or more. Now the model runs
# in a worker and the drawing yields between layers: about 50 to 350 ms on the same machine.
LONG_TASK_BOUND_MS = 1000
DRAWING_BOUND_MS = 1000
# Text that names the book's code, which the interface must say in words instead.
CODE_NAMES = re.compile(
    r"mha_lib|LabModel|InferenceSession|onnxruntime\b|\b[\w-]+\.(?:py|js|mjs|json|onnx|txt)\b|bench/"
)


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
    blocked: list[str] = []
    sizes: list[int] = []

    def route(r: object) -> None:
        if urlsplit(r.request.url).hostname in ("127.0.0.1", "localhost"):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    with served(built_book) as base, sync_playwright() as pw:
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
        assert tab.locator("#mha-lab-ranking li.mha-lab-rank-item").count() == 4
        assert not errors, f"JavaScript errors while the lab loaded: {errors}"
        yield tab, base, blocked, sizes
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(SCREENSHOTS / "lab__after_tests.png"), full_page=True)
        context.close()
        browser.close()


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



def test_a_text_runs_again_from_its_first_changed_layer_and_matches_python(
    browser_page, reference
) -> None:
    """The page keeps a text's layers and reruns from the first layer whose heads changed
    (lab/session.js): each run starts where its mask first differs from the nearer of the
    text's first and latest runs, and its maps and embedding are PyTorch's, as a run from the
    first layer would be."""
    from mha_lib.bert.lab import lab_outputs

    tab, *_ = browser_page
    model, tokenizer = reference
    layers, heads = model.config.num_hidden_layers, model.config.num_attention_heads
    text = "A quiet river ran past the mill where the old miller kept his tired donkey."
    # The text's first run (every head on) stays kept: back to one head off in the last layer,
    # the page reruns that layer alone, although the latest run differs from layer 1 on.
    steps = [((), 0), (((3, 4),), 3), (((3, 4), (1, 2)), 1), (((5, 0),), 5), (((5, 0),), layers)]
    for off, start in steps:
        mask = torch.ones(layers, heads)
        for layer, head in off:
            mask[layer, head] = 0.0
        got = tab.evaluate("([t, m]) => mhaLab.run(t, m)", [text, mask.tolist()])
        ran = tab.evaluate("() => mhaLab.stats.runs.at(-1)")
        assert ran["from"] == start, (off, ran)
        tokens, maps, emb = lab_outputs(model, tokenizer, text, mask)
        assert got["tokens"] == tokens
        assert float((torch.tensor(got["attentions"]) - maps).abs().max()) <= MAP_TOLERANCE, off
        assert float((torch.tensor(got["embedding"]) - emb).abs().max()) <= EMBEDDING_TOLERANCE
        # Switched off at layer 3 or 5, the maps of the layers below are the unmasked run's.
        if off and min(layer for layer, _ in off) > 0:
            base = lab_outputs(model, tokenizer, text)[1]
            below = min(layer for layer, _ in off)
            assert torch.equal(maps[:below], base[:below])

def test_the_scales_random_draws_leave_where_the_next_click_reruns_from(browser_page) -> None:
    """The scale's random masks are one-off runs: after them, a click reruns the text from the
    clicked head's layer, as it would have without them (not from the first layer a random
    draw switched off)."""
    tab, *_ = browser_page
    _all_on(tab)
    _act(tab, lambda: tab.fill("#mha-lab-text", "The dog chased the ball across the park."))
    scaled = int(tab.get_attribute("#mha-lab", "data-scaled") or 0)
    _act(tab, lambda: _tile(tab, 3, 1).click())
    tab.wait_for_function(
        "n => +document.querySelector('#mha-lab').dataset.scaled > n", arg=scaled, timeout=60_000
    )
    assert "random" in tab.inner_text("#mha-lab-scale")
    runs = tab.evaluate("() => mhaLab.stats.runs.length")
    _act(tab, lambda: _tile(tab, 4, 2).click())
    ran = tab.evaluate("n => mhaLab.stats.runs.slice(n)", runs)
    assert [r["from"] for r in ran if r["texts"] == 1][0] == 4, ran
    _all_on(tab)


def test_tricky_text_and_truncation_match_python(browser_page, reference) -> None:
    """The page's tokenizer on accents, punctuation, numbers, unknown words, Chinese, 600+ chars."""
    from mha_lib.bert.lab import lab_outputs, max_tokens

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
        if text is long_text:  # the maps of so many tokens are too large to ship to Python
            got = tab.evaluate(
                "t => mhaLab.run(t, null).then(r => ({tokens: r.tokens, "
                "truncated: r.truncated, T: r.attentions[0][0].length}))",
                text,
            )
            assert got["tokens"] == tokens and got["T"] == len(tokens)
            assert len(tokens) == max_tokens() and got["truncated"] > 0
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


def _bench() -> object:
    """bench/lab.py as a module: its long text and its way of timing an action."""
    spec = importlib.util.spec_from_file_location("bench_lab", REPO / "bench" / "lab.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _open_lab(tab: object, base: str, **context: object) -> object:
    """The lab in a fresh context of the same browser (a phone, say), loaded and drawn."""
    new = tab.context.browser.new_context(**context)
    new.set_default_timeout(PAGE_TIMEOUT_MS)
    page = new.new_page()
    page.goto(base + LAB)
    page.wait_for_function("() => window.mhaLab", timeout=LOAD_TIMEOUT_MS)
    page.evaluate("() => mhaLab.ready")
    return page


def _title(tab: object) -> str:
    return tab.inner_text("#mha-lab-large-title")


def test_clicking_a_head_changes_the_maps_downstream_only(browser_page) -> None:
    tab, *_ = browser_page
    _all_on(tab)
    cos_before = tab.inner_text("#mha-lab-ranking")
    _act(tab, lambda: _tile(tab, 2, 5).click())
    assert _tile(tab, 2, 5).get_attribute("aria-pressed") == "false"
    changes = _changes(tab)
    assert all(c == 0 for row in changes[:3] for c in row), "layers 0–2 must not change"
    assert all(c > 0 for row in changes[3:] for c in row), "every later head's map must change"
    assert "switched off" in tab.inner_text("#mha-lab-large-title")
    assert tab.inner_text("#mha-lab-count").startswith("1 of")
    _act(tab, lambda: tab.click("#mha-lab-all-off"))
    assert tab.inner_text("#mha-lab-ranking") != cos_before
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
    model = browser_page[0].evaluate(
        "() => performance.getEntriesByType('resource')"
        ".filter(e => e.name.endsWith('.stages.gz')).map(e => e.encodedBodySize)"
    )
    assert len(model) == 1 and 0 < model[0] <= MODEL_BUDGET, f"the model's download: {model}"


def test_a_model_that_fails_to_load_is_reported(browser_page) -> None:
    tab, base, *_ = browser_page
    # A fresh context: this one's store (lab/store.js) has the model already.
    fresh = tab.context.browser.new_context()
    fresh.set_default_timeout(PAGE_TIMEOUT_MS)
    page = fresh.new_page()
    page.route("**/minilm-lab.stages.gz", lambda r: r.fulfill(status=404, body="gone"))
    try:
        page.goto(base + LAB)
        page.wait_for_function(
            "() => document.querySelector('#mha-lab-status').dataset.kind === 'error'"
        )
        assert "could not load its model" in page.inner_text("#mha-lab-status")
    finally:
        fresh.close()


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

    _act(tab, lambda: _tile(tab, 1, 7).click())  # a head: the count, and the closest sentence
    said = _said(tab)
    assert len(said) == 1, said
    assert said[0].startswith(tab.inner_text("#mha-lab-count")), said
    top = tab.inner_text("#mha-lab-ranking li:first-child .mha-lab-rank-value strong")
    assert "Closest in meaning" in said[0] and top in said[0], said

    _act(tab, lambda: tab.click("#mha-lab-all-on"))  # a preset: the same, once
    said = _said(tab)
    assert len(said) == 1 and said[0].startswith("All heads are on."), said

    candidates = tab.input_value("#mha-lab-candidates")
    _act(tab, lambda: tab.fill("#mha-lab-candidates", "A dog was sleeping on the rug."))
    said = _said(tab)  # new text: the note (tokens, time), and the closest sentence
    assert len(said) == 1, said
    assert said[0].startswith(tab.inner_text("#mha-lab-note")) and "tokens" in said[0], said
    assert "A dog was sleeping on the rug." in said[0], said

    _tile(tab, 0, 0).focus()  # moving between heads: the focused button speaks for itself
    tab.keyboard.press("ArrowRight")
    assert _said(tab) == []

    _act(tab, lambda: tab.fill("#mha-lab-text", ""))
    assert _said(tab) == [tab.inner_text("#mha-lab-note")]
    _act(tab, lambda: tab.fill("#mha-lab-text", "The cat sat on the mat because it was tired."))
    _act(tab, lambda: tab.fill("#mha-lab-candidates", candidates))


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
    """The lab's modules that `module` imports, or starts as a worker (`new URL(…, HERE)`)."""
    text = module.read_text(encoding="utf-8")
    imported = re.findall(r"""(?:from|import\()\s*["']\./([\w.-]+\.js)["']""", text)
    started = re.findall(
        r"""new URL\(\s*["'](?:\./)?([\w.-]+\.js)["']\s*,\s*(?:HERE|import\.meta\.url)\)""", text
    )
    return set(imported) | set(started)


def test_the_site_serves_every_module_of_the_lab(built_book: Path) -> None:
    """lab.js and every module it imports, at their current versions, once for both editions:
    the Chinese lab page loads the English site's copies (book/_ext/site_assets.py)."""
    lab = REPO / "lab"
    needed, todo = set(), ["lab.js"]
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo.extend(_imports(lab / name))
    modules = {"strings.js", "heads.js", "maps.js", "wordpiece.js", "worker.js", "session.js"}
    assert modules <= needed, needed
    served = built_book / "_static" / "lab"
    for name in sorted(needed | {"lab.css"}):
        assert (served / name).is_file(), f"{served / name} is missing"
        assert (served / name).read_bytes() == (lab / name).read_bytes(), f"{name} is stale"
    zh = built_book / "zh"
    if (zh / LAB).is_file():
        page = (zh / LAB).read_text(encoding="utf-8")
        assert (
            'src="../../_static/lab/lab.js"' in page and 'href="../../_static/lab/lab.css"' in page
        )
        assert not (zh / "_static" / "lab").exists(), "the Chinese edition ships a second copy"
        assert not (zh / "_static" / "vendor" / "onnxruntime-web").exists()


def test_a_long_text_never_holds_the_page_and_the_note_says_its_time(browser_page) -> None:
    """1,000 words: the model runs beside the page, the maps are drawn in short tasks."""
    from mha_lib.bert.lab import max_tokens

    tab, *_ = browser_page
    bench = _bench()
    _all_on(tab)
    tab.evaluate(bench.WATCH_JS)
    paste = bench.time_action(tab, lambda: tab.fill("#mha-lab-text", bench.long_text()))
    assert paste["tokens"] == max_tokens() and "cut off" in tab.inner_text("#mha-lab-note")
    clicks = [
        bench.time_action(tab, lambda: _tile(tab, 2, 5).click()),
        bench.time_action(tab, lambda: _tile(tab, 3, 1).click()),
    ]
    print(f"\n1,000 words: paste {paste}\nclicks {clicks}")
    for click in clicks:
        assert click["runs"] >= 1 and click["tokens"] == max_tokens(), click
        assert click["longest_task_ms"] <= LONG_TASK_BOUND_MS, click
        assert click["ms"] - click["model_ms"] <= DRAWING_BOUND_MS, click
        # The maps come first, the ranking after them (its sentences run after the maps).
        assert click["maps_ms"] < click["ms"], click
    assert [c["from"] for c in clicks] == [2, 3], clicks
    assert paste["longest_task_ms"] <= LONG_TASK_BOUND_MS, paste
    # The note: this update's own times, measured, with the model's runs and the drawing in them.
    note = tab.inner_text("#mha-lab-note")
    found = re.search(
        rf"{max_tokens()} tokens, maps updated in (\d+) ms in this browser, "
        r"the ranking in (\d+) ms: (\d+) ms running the model \(runs: (\d+)\), "
        r"(\d+) ms drawing the maps",
        note,
    )
    assert found, note
    maps, total, model, runs, drawing = map(int, found.groups())
    last = clicks[-1]
    assert runs == last["runs"] and abs(model - last["model_ms"]) <= 1, (note, last)
    assert maps <= last["maps_ms"] + 2 and maps <= total and drawing <= maps, (note, last)
    assert model <= total + 1 <= last["ms"] + 2, (note, last)
    assert tab.evaluate("() => mhaLab.stats.thread") == "worker"
    _act(tab, lambda: tab.fill("#mha-lab-text", "The cat sat on the mat because it was tired."))


# In the page: the large map's and one small map's pixels against the model's weights (with
# the page's colour scale, itself checked against matplotlib's viridis). The large map draws
# every weight of its window (a long text's 40 tokens around the slider's token) as its own
# square; a small map draws each of its pixels as the largest weight
# of the block of queries and keys it covers, the blocks' edges at floor(i * T / n).
_PIXELS_JS = """async ([layer, head]) => {
  const {colour, largeLayout, windowRange} =
    await import(new URL('../_static/lab/maps.js', location.href));
  const text = document.querySelector('#mha-lab-text').value;
  const run = await mhaLab.run(text, null);
  const map = run.attentions[layer][head], T = map.length;
  const worst = {large: 0, small: 0};
  const off = (px, i, w) => Math.max(...colour(w).map((c, j) => Math.abs(px[i + j] - c)));
  const large = document.querySelector('#mha-lab-large');
  const ctx = large.getContext('2d');
  ctx.font = '12px sans-serif';
  const centre = +document.querySelector('#mha-lab-window').value;
  const {from, n: shown} = windowRange(T, centre, 40);
  const widest = Math.max(...run.tokens.slice(from, from + shown)
    .map(t => ctx.measureText(t).width));
  const {label, cell} = largeLayout(shown, widest, large.parentElement.clientWidth);
  const dpr = window.devicePixelRatio || 1;
  const img = ctx.getImageData(0, 0, large.width, large.height);
  for (let q = 0; q < shown; q++) for (let k = 0; k < shown; k++) {
    const x = Math.floor((label + (k + 0.5) * cell) * dpr);
    const y = Math.floor((label + (q + 0.5) * cell) * dpr);
    const w = map[from + q][from + k];
    worst.large = Math.max(worst.large, off(img.data, 4 * (y * large.width + x), w));
  }
  const tile = document.querySelector(
    `.mha-lab-tile[data-layer='${layer}'][data-head='${head}'] canvas`);
  const n = tile.width, small = tile.getContext('2d').getImageData(0, 0, n, n).data;
  for (let r = 0; r < n; r++) for (let c = 0; c < n; c++) {
    let top = -Infinity;
    const edge = i => Math.floor(i * T / n);
    for (let q = edge(r); q < edge(r + 1); q++)
      for (let k = edge(c); k < edge(c + 1); k++) top = Math.max(top, map[q][k]);
    worst.small = Math.max(worst.small, off(small, 4 * (r * n + c), top));
  }
  const pooled = !document.querySelector('#mha-lab-pooled').hidden;
  return {T, n, css: tile.clientWidth, cell, shown, from, worst, pooled};
}"""


def test_the_maps_on_screen_are_the_models_weights(browser_page) -> None:
    """Every weight of the large map, and a small map's pixels, as the model computed them."""
    tab, *_ = browser_page
    bench = _bench()
    _all_on(tab)
    _act(tab, lambda: tab.fill("#mha-lab-text", bench.long_text(90)))
    _tile(tab, 1, 3).focus()  # the large map shows head 1-3
    assert _title(tab).startswith("Head 1-3")
    got = tab.evaluate(_PIXELS_JS, [1, 3])
    print(f"\n{got}")
    assert got["T"] > got["n"] >= got["css"] > 10 and got["pooled"], got  # a pooled small map
    assert got["shown"] == 40 and got["from"] == 0, got  # the large map: a window
    assert got["worst"]["large"] <= 1 and got["worst"]["small"] <= 1, got  # of 255, rounding
    tab.evaluate(  # the window moved along the text: its weights, still each its own
        "() => { const s = document.querySelector('#mha-lab-window'); s.value = '60';"
        " s.dispatchEvent(new Event('input')); }"
    )
    got = tab.evaluate(_PIXELS_JS, [1, 3])
    assert got["from"] == 40 and got["worst"]["large"] <= 1, got
    _act(tab, lambda: tab.fill("#mha-lab-text", "The cat sat on the mat because it was tired."))
    got = tab.evaluate(_PIXELS_JS, [1, 3])
    assert got["n"] == got["T"] and not got["pooled"], got  # a short text: a pixel per weight
    assert got["worst"]["large"] <= 1 and got["worst"]["small"] <= 1, got


def test_chapter_6s_menu_follows_the_heads_whichever_control_changed_them(browser_page) -> None:
    tab, *_ = browser_page
    meta = tab.evaluate("() => mhaLab.meta.presets")
    n = meta["ch6_pruned_steps"][2]
    _all_on(tab)
    assert tab.input_value("#mha-lab-ch6") == ""
    assert tab.locator("#mha-lab-ch6-note").is_hidden()
    _act(tab, lambda: tab.select_option("#mha-lab-ch6", str(n)))
    assert tab.input_value("#mha-lab-ch6") == str(n)
    _all_on(tab)  # today's bug: the menu kept showing the step
    assert tab.input_value("#mha-lab-ch6") == ""
    _act(tab, lambda: tab.click("#mha-lab-ch5"))
    assert tab.input_value("#mha-lab-ch6") == ""
    _all_on(tab)
    # The order's first heads switched off one by one: the menu finds its step.
    first = meta["ch6_importance_order"][: meta["ch6_pruned_steps"][1]]
    for layer, head in first:
        _act(tab, lambda layer=layer, head=head: _tile(tab, layer, head).click())
    assert tab.input_value("#mha-lab-ch6") == str(meta["ch6_pruned_steps"][1])
    layer, head = first[0]
    _act(tab, lambda: _tile(tab, layer, head).click())  # one back on: no step any more
    assert tab.input_value("#mha-lab-ch6") == ""
    _act(tab, lambda: tab.click("#mha-lab-all-off"))
    assert tab.input_value("#mha-lab-ch6") == ""
    _all_on(tab)


def test_chapter_6s_step_says_its_accuracy_moves_within_the_tests_noise(browser_page) -> None:
    tab, *_ = browser_page
    meta = tab.evaluate("() => mhaLab.meta.presets")
    steps = meta["ch6_pruned_steps"]
    n = steps[3]
    _act(tab, lambda: tab.select_option("#mha-lab-ch6", str(n)))
    note = tab.locator("#mha-lab-ch6-note")
    assert note.is_visible()
    text = note.inner_text()
    accuracy = f"{100 * meta['ch6_accuracy'][3]:.1f} %"
    full = f"{100 * meta['ch6_accuracy'][steps.index(0)]:.1f} %"
    assert f"first {n} of 72" in text and accuracy in text and full in text, text
    assert "noise" in text and "chapter 6" in text.lower(), text
    assert tab.get_attribute("#mha-lab-ch6", "aria-describedby") == "mha-lab-ch6-note"
    _all_on(tab)
    assert note.is_hidden()


def test_a_tap_shows_a_head_and_the_switch_switches_it(browser_page) -> None:
    """On a touch screen a tap shows a head large; the mouse and the keys still switch."""
    tab, base, *_ = browser_page
    phone = _open_lab(
        tab, base, viewport={"width": 390, "height": 844}, has_touch=True, device_scale_factor=2
    )
    try:
        tile = phone.locator(".mha-lab-tile[data-layer='3'][data-head='7']")
        tile.scroll_into_view_if_needed()
        tile.tap()
        phone.wait_for_function(
            "() => document.querySelector('#mha-lab-large-title').textContent"
            ".startsWith('Head 3-7')"
        )
        assert tile.get_attribute("aria-pressed") == "true", "a tap shows; it does not switch"
        assert phone.evaluate("() => mhaLab.draws") == 1, "nothing ran"
        switch = phone.locator("#mha-lab-switch")
        assert switch.inner_text() == "Switch head 3-7 off"
        box = switch.bounding_box()
        assert box["height"] >= 40, box  # a finger's target
        _act(phone, lambda: switch.tap())
        assert tile.get_attribute("aria-pressed") == "false"
        assert "switched off" in _title(phone) and switch.inner_text() == "Switch head 3-7 on"
        _act(phone, lambda: switch.tap())
        assert tile.get_attribute("aria-pressed") == "true"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        phone.screenshot(path=str(SCREENSHOTS / "lab__390_touch.png"), full_page=True)
    finally:
        phone.context.close()
    # The mouse: a click still switches the head it shows; so does the large map's switch.
    _all_on(tab)
    _act(tab, lambda: _tile(tab, 4, 2).click())
    assert _tile(tab, 4, 2).get_attribute("aria-pressed") == "false"
    assert tab.inner_text("#mha-lab-switch") == "Switch head 4-2 on"
    _act(tab, lambda: tab.click("#mha-lab-switch"))
    assert _tile(tab, 4, 2).get_attribute("aria-pressed") == "true"


# Every pointer-over event on a square, in the page: what the browser reports when the page
# scrolls under a still pointer.
_RECORD_OVER_JS = """() => {
  window.mhaLabOver = [];
  document.addEventListener('mouseover', e => {
    const tile = e.target.closest && e.target.closest('.mha-lab-tile');
    if (tile) mhaLabOver.push(tile.dataset.layer + '-' + tile.dataset.head);
  }, true);
}"""


def test_scrolling_under_a_still_pointer_keeps_the_large_map(browser_page) -> None:
    tab, *_ = browser_page
    _all_on(tab)
    tab.evaluate(_RECORD_OVER_JS)
    tab.locator("#mha-lab-grid").scroll_into_view_if_needed()
    box = _tile(tab, 2, 4).bounding_box()
    tab.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    tab.wait_for_function("() => mhaLabOver.includes('2-4')")
    assert _title(tab).startswith("Head 2-4")
    tab.evaluate("() => { mhaLabOver.length = 0; }")
    tab.mouse.wheel(0, round(box["height"] * 2.5))
    # The browser reports the square now under the pointer (a later layer's) ...
    tab.wait_for_function("() => mhaLabOver.some(t => t !== '2-4')")
    # ... and the large map stays: only the pointer's own moves, clicks, taps and keys change it.
    assert _title(tab).startswith("Head 2-4"), _title(tab)
    tab.mouse.move(box["x"] + box["width"] / 2 + 1, box["y"] + box["height"] / 2)
    tab.wait_for_function(
        "() => !document.querySelector('#mha-lab-large-title').textContent.startsWith('Head 2-4')"
    )


def test_no_interface_text_names_the_books_code(browser_page) -> None:
    """Every message of the interface, and the page as shown, say what code does in words."""
    tab, base, *_ = browser_page
    messages = tab.evaluate(
        "() => [...document.querySelectorAll('.mha-lab-strings li')].map(li => li.textContent)"
    )
    assert len(messages) > 50
    named = [m for m in messages if CODE_NAMES.search(m.split(":", 1)[1])]
    assert not named, named
    shown = tab.evaluate(
        "() => document.querySelector('#mha-lab').innerText + "
        "document.querySelector('#mha-lab-facts').innerText"
    )
    assert not CODE_NAMES.search(shown), CODE_NAMES.findall(shown)
    # The page's prose too, but for its commands and the page's scripting entry point.
    prose = tab.evaluate(
        "() => [...document.querySelectorAll('article p')].filter(p => !p.closest('.mha-lab, "
        ".mha-lab-strings, .mha-lab-facts')).map(p => { const c = p.cloneNode(true); "
        "c.querySelectorAll('code').forEach(x => x.remove()); return c.textContent; }).join(' ')"
    )
    assert not CODE_NAMES.search(prose), CODE_NAMES.findall(prose)
    code = tab.evaluate(
        "() => [...document.querySelectorAll('article p code')].filter(c => !c.closest("
        "'.mha-lab-strings')).map(c => c.textContent)"
    )
    assert not [c for c in code if re.search(r"mha_lib|LabModel|\.py\b", c)], code


def _fixed0(x: float) -> str:
    """JavaScript's x.toFixed(0): the double's exact decimal value, halves rounded up."""
    from decimal import ROUND_HALF_UP, Decimal

    return str(Decimal(x).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def test_how_this_works_quotes_the_benchmarks_long_text_clicks(browser_page) -> None:
    """The note under the lab quotes bench/results/lab.json as committed: a click's maps, those
    of a head of the first layer (the slowest: every layer runs again), and the ranking."""
    import json

    tab, *_ = browser_page
    long = json.loads((REPO / "bench" / "results" / "lab.json").read_text())["lab"]["long_text"]
    shown = tab.inner_text("#mha-lab-bench-long")
    first = long["click_by_layer"]["0"]
    for value in (
        long["click_maps_ms"]["median"],
        long["click_maps_ms"]["max"],
        first["maps_ms"]["median"],
        long["click_ms"]["median"],
        first["ms"]["median"],
    ):
        assert f"{_fixed0(value)} ms" in shown, (value, shown)
    assert f"over {long['click_maps_ms']['n']} clicks" in shown, shown


def test_how_this_works_quotes_this_browsers_first_runs(browser_page) -> None:
    """The reader's own numbers: the first sentence's run and the ranked sentences' batch,
    as the page's clocks (mhaLab.stats) have them."""
    tab, *_ = browser_page
    runs = tab.evaluate("() => mhaLab.stats.runs")
    text = next(r for r in runs if r["texts"] == 1)
    batch = next(r for r in runs if r["texts"] > 1)
    shown = tab.inner_text("#mha-lab-own")
    assert f"first sentence ({text['tokens']} tokens) ran in {_fixed0(text['ms'])} ms" in shown
    assert f"the {batch['texts']} sentences ranked against it, together, in " in shown, shown
    assert f"{_fixed0(batch['ms'])} ms" in shown, shown


def test_the_site_has_its_own_icon(browser_page) -> None:
    tab, base, *_ = browser_page
    for path in (LAB, "zh/" + LAB):
        page = tab.context.new_page()
        try:
            page.goto(base + path, wait_until="domcontentloaded")
            icon = page.evaluate("() => document.querySelector('link[rel~=icon]')?.href")
            assert icon and icon.startswith(base), (path, icon)
            answer = page.request.get(icon)
            assert answer.ok and b"<svg" in answer.body(), (path, icon, answer.status)
        finally:
            page.close()


def test_without_module_workers_the_model_runs_on_the_page(browser_page) -> None:
    """A browser without module workers: the same model on the page's own thread."""
    tab, base, *_ = browser_page
    context = tab.context.browser.new_context()
    context.add_init_script("delete window.Worker;")
    page = context.new_page()
    try:
        page.goto(base + LAB)
        page.wait_for_function("() => window.mhaLab", timeout=LOAD_TIMEOUT_MS)
        page.evaluate("() => mhaLab.ready")
        assert page.evaluate("() => mhaLab.stats.thread") == "page"
        _act(page, lambda: page.locator(".mha-lab-tile[data-layer='2'][data-head='5']").click())
        assert "1 of 72" in page.inner_text("#mha-lab-count")
    finally:
        context.close()


def test_small_maps_follow_the_size_of_their_squares(browser_page) -> None:
    """A long text's small maps get their pixels again when the window narrows or widens."""
    tab, *_ = browser_page
    bench = _bench()
    _all_on(tab)
    _act(tab, lambda: tab.fill("#mha-lab-text", bench.long_text(300)))
    size = "() => [document.querySelector('.mha-lab-tile canvas').width, "
    size += "Math.ceil(document.querySelector('.mha-lab-tile canvas').clientWidth)]"
    wide = tab.evaluate(size)
    assert wide[0] == wide[1] > 30, wide
    try:
        tab.set_viewport_size({"width": 390, "height": 900})
        tab.wait_for_function(f"n => ({size})()[0] < n", arg=wide[0])
        narrow = tab.evaluate(size)
        assert narrow[0] == narrow[1], narrow
    finally:
        tab.set_viewport_size({"width": 1280, "height": 900})
    tab.wait_for_function(f"n => ({size})()[0] === n", arg=wide[0])
    _act(tab, lambda: tab.fill("#mha-lab-text", "The cat sat on the mat because it was tired."))


# The scale's numbers are shown to 3 decimals; the browser's model is within MAP_TOLERANCE of
# PyTorch's maps and moves a cosine by far less than this (measured: under 1e-4).
COSINE_SHOWN = 2e-3
_SCALE = re.compile(
    r"your (\d+) heads off move these similarities by ([\d.]+) on average; \d+ heads chosen at "
    r"random move them by ([\d.]+) \(median of (\d+) draws, from ([\d.]+) to ([\d.]+)\)"
)


def test_the_ranking_and_its_scale_match_python(browser_page, reference) -> None:
    """What the model does (the sentences ranked by the cosine of their embeddings with the
    reader's) and the scale of a change (as many heads switched off at random, the page's own
    draws), each recomputed in Python from the book's BERT code."""
    import statistics

    from mha_lib.bert.lab import lab_outputs

    tab, *_ = browser_page
    model, tokenizer = reference
    _all_on(tab)
    assert "Every head is on" in tab.inner_text("#mha-lab-scale")
    text = tab.input_value("#mha-lab-text")
    cands = [c.strip() for c in tab.input_value("#mha-lab-candidates").split("\n") if c.strip()]
    assert len(cands) == 4

    def cosines(mask: torch.Tensor) -> list[float]:
        mine = lab_outputs(model, tokenizer, text, mask)[2]
        return [
            float(
                torch.nn.functional.cosine_similarity(
                    mine, lab_outputs(model, tokenizer, c, mask)[2], dim=0
                )
            )
            for c in cands
        ]

    def mean_move(now: list[float], base: list[float]) -> float:
        return sum(abs(a - b) for a, b in zip(now, base, strict=True)) / len(now)

    base = cosines(torch.ones(6, 12))
    shown = [
        float(v)
        for v in tab.locator("#mha-lab-ranking .mha-lab-rank-value strong").all_inner_texts()
    ]
    assert shown == sorted(shown, reverse=True)
    assert all(
        abs(a - b) <= COSINE_SHOWN for a, b in zip(shown, sorted(base, reverse=True), strict=True)
    )

    scaled = int(tab.get_attribute("#mha-lab", "data-scaled") or 0)
    _act(tab, lambda: tab.click("#mha-lab-ch5"))
    tab.wait_for_function(
        "n => +document.querySelector('#mha-lab').dataset.scaled > n", arg=scaled, timeout=180_000
    )
    scale = tab.inner_text("#mha-lab-scale")
    found = _SCALE.search(scale)
    assert found, scale
    off, draws = int(found[1]), int(found[4])
    on = tab.evaluate(
        "() => [...document.querySelectorAll('.mha-lab-tile')]"
        ".map(t => t.getAttribute('aria-pressed') === 'true' ? 1 : 0)"
    )
    mask = torch.tensor(on, dtype=torch.float32).view(6, 12)
    assert int((mask == 0).sum()) == off > 0
    now = cosines(mask)
    assert abs(mean_move(now, base) - float(found[2])) <= COSINE_SHOWN, (scale, now, base)
    moves = []
    for d in range(draws):
        random = tab.evaluate(
            "async ([off, d]) => Array.from((await import('/_static/lab/heads.js'))"
            ".randomMask(6, 12, off, d))",
            [off, d],
        )
        random = torch.tensor(random, dtype=torch.float32).view(6, 12)
        assert int((random == 0).sum()) == off
        moves.append(mean_move(cosines(random), base))
    typical, low, high = (float(found[k]) for k in (3, 5, 6))
    for got, want in ((typical, statistics.median(moves)), (low, min(moves)), (high, max(moves))):
        assert abs(got - want) <= COSINE_SHOWN, (scale, moves)
    # The ranking under the heads now off, as Python ranks it (ties closer than shown aside).
    shown = [
        float(v)
        for v in tab.locator("#mha-lab-ranking .mha-lab-rank-value strong").all_inner_texts()
    ]
    assert all(
        abs(a - b) <= COSINE_SHOWN for a, b in zip(shown, sorted(now, reverse=True), strict=True)
    )
    _all_on(tab)


def test_a_long_texts_large_map_is_a_window_around_a_token(browser_page) -> None:
    """The large map of a long text: 40 tokens around a chosen one, every weight in it legible
    (cells of several px), the window moved by a slider and by a step either way."""
    tab, *_ = browser_page
    bench = _bench()
    text = tab.input_value("#mha-lab-text")
    _all_on(tab)
    _act(tab, lambda: tab.fill("#mha-lab-text", bench.long_text(200)))
    tokens = tab.evaluate("() => +document.querySelector('#mha-lab-window').max + 1")
    assert tokens > 200
    assert tab.locator(".mha-lab-window").is_visible()
    caption = tab.inner_text("#mha-lab-large-caption")
    assert f"tokens 0 to 39 of {tokens}" in caption, caption
    inside = int(re.search(r"put (\d+) % of their weight", caption)[1])
    assert 0 <= inside <= 100
    size = tab.evaluate(
        "() => document.querySelector('#mha-lab-large').getBoundingClientRect().width"
    )
    assert size >= 40 * 5 + 50, size  # 40 cells of 5 px or more, and the tokens' labels
    tab.evaluate(
        "() => { const s = document.querySelector('#mha-lab-window'); s.value = '100';"
        " s.dispatchEvent(new Event('input')); }"
    )
    assert f"tokens 80 to 119 of {tokens}" in tab.inner_text("#mha-lab-large-caption")
    tab.locator(".mha-lab-step").nth(1).click()
    assert f"tokens 81 to 120 of {tokens}" in tab.inner_text("#mha-lab-large-caption")
    _act(tab, lambda: tab.fill("#mha-lab-text", text))
    assert not tab.locator(".mha-lab-window").is_visible()


def test_the_other_edition_downloads_neither_model_nor_runtime_again(browser_page) -> None:
    """Both editions load the same files, kept in the lab's store (lab/store.js) after the
    first visit: the Chinese lab page, opened after the English one, fetches neither."""
    tab, base, *_ = browser_page
    page = tab.context.new_page()
    fetched: list[str] = []
    page.on("requestfinished", lambda req: fetched.append(req.url))
    try:
        page.goto(base + "zh/" + LAB, wait_until="load")
        page.wait_for_function("() => window.mhaLab", timeout=LOAD_TIMEOUT_MS)
        page.evaluate("() => mhaLab.ready")
        assert page.evaluate("() => mhaLab.stats.cached") is True
        large = [u for u in fetched if u.endswith((".stages.gz", ".wasm"))]
        assert not large, f"downloaded again: {large}"
        assert any(u.endswith("/_static/lab/lab.js") and "/zh/" not in u for u in fetched)
    finally:
        page.close()
