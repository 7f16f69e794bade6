"""The static site, checked in a real browser the way a reader meets it.

The built html is served on 127.0.0.1 and every page of the table of contents is opened
in headless Chromium (one browser, one context, pages in sequence). Each page must load
with HTTP 200 and no JavaScript error, show every image with alt text (and every figure's
smallest text at 9 px or more as shown; an SVG's text is measured in the page), draw its
bertviz views with the sentence's tokens (a model view with all its heads in the column),
render its maths, cut nothing off (what is wider than the column scrolls, with a scrollbar,
and a chapter's own code cells fit), carry Binder and Colab buttons that open this very
notebook, and pass axe-core with no serious or critical violation. Then the same page is
narrowed to a phone's width (390 px): the document must not scroll sideways, nothing may
spill past the column or be cut off (a code cell, a table or a figure scrolls inside its own
box), every figure's text stays at 9 px or more as shown or the figure opens at full size on
a tap (tests/book/test_phone.py checks the rest at a phone's own settings), the ledger's rows
stack as cards, and axe-core passes again. The Chinese edition (`zh/`) passes the same checks page
by page, and its own: `lang="zh-CN"`, a switcher to the same English page (and section),
the English page's glued numbers, Chinese alt texts and prose, and a search that finds
Chinese words.

The site serves every script it needs itself (MathJax, bertviz's require.js, d3 and jQuery,
the lab's ONNX Runtime Web: book/_ext/site_assets.py copies them from the pinned npm
packages), so the test aborts every request that leaves the machine and reports it: a page
that needs the network fails. Only axe-core, the test's own tool, comes from
`node_modules` (installed by `scripts/install_browser.sh`). A page that fails leaves
full-page screenshots in `_build/screenshots/`, at both widths (`<page>.png`,
`<page>.390px.png`); with `MHA_SCREENSHOTS=1` (GitHub's book job keeps them for reviewers)
every page does. Two full-page screenshots cost about as much as all of a page's checks.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from conftest import REPO, book_source, book_toc

pytestmark = pytest.mark.book

CHROMIUM = Path(os.environ.get("MHA_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
NODE_MODULES = Path(os.environ.get("MHA_NODE_MODULES", REPO / "node_modules"))
SCREENSHOTS = REPO / "_build" / "screenshots"
EVERY_SCREENSHOT = os.environ.get("MHA_SCREENSHOTS") == "1"  # else only a failed page's
PAGE_TIMEOUT_MS = 20_000
MIN_TEXT_PX = 9  # the smallest text of a figure, as rendered in the text column
# A phone: an iPhone's 390 CSS px. The page is checked by narrowing the desktop tab, not by a
# second load: narrowed, every page lays out as one loaded at 390 px (compared on every page of
# both editions: the document's size, every block's place and size, every canvas), but the
# lab, whose map keeps the size it was drawn at; the lab is reloaded at 390 px. The desktop
# scrollbar stays (375 px of layout): a little stricter than a phone's overlay scrollbar.
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}  # the text column is 688 px wide
LEDGER = "book/claims"  # its table stacks on a phone (_config.yml: mha_card_tables)
BERTVIZ_TIMEOUT_MS = 10_000  # a view that has not drawn by then is broken
INSTALL_HINT = (
    "run `bash scripts/install_browser.sh` (as root it apt-installs Debian's chromium; "
    "otherwise `sudo apt-get install chromium npm fonts-wqy-zenhei` first), which also "
    "runs `npm ci` in the repository root"
)

# JavaScript errors the theme's extensions raise on every page, with the reason; a
# message is tolerated only if it contains one of these strings exactly.
# Both entries are added below only while _config.yml lacks the setting that removes them.
KNOWN_JS_ERRORS: dict[str, str] = {}

# axe-core findings on elements that the theme and its extensions write, not our content:
# (rule, CSS selector of the exempt elements, why). Narrow on purpose: the rule still runs
# on every other element, and our own content (e.g. bertviz's pickers) is never exempt.
AXE_EXEMPT: list[tuple[str, str, str]] = [
    (
        "label-content-name-mismatch",
        "button.search-button__button",
        "pydata-sphinx-theme 0.17 names the search button 'Search' while it shows "
        "'Search Ctrl+K'; the name still starts with the visible word",
    ),
    (
        "label-content-name-mismatch",
        "button.theme-switch-button",
        "pydata-sphinx-theme 0.17 colour-mode button: icon only, named 'Color mode'",
    ),
    (
        "label-content-name-mismatch",
        "details.hide > summary",
        "myst-nb's hide-cell toggle is named 'Toggle hidden content' while it shows "
        "'Show code cell content'",
    ),
    (
        "aria-required-children",
        "div.citation-list[role=list]",
        "docutils gives the bibliography role=list with role=doc-biblioentry entries, a "
        "DPUB-ARIA role that axe-core no longer counts as a list item",
    ),
]


def toc_pages(toc_file: Path) -> list[str]:
    """Every document of the table of contents, as paths without suffix ("notebooks/01_x")."""
    toc = yaml.safe_load(toc_file.read_text())
    pages = [toc["root"]]

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "file" in node:
                pages.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({k: v for k, v in toc.items() if k != "root"})
    return [re.sub(r"\.(md|ipynb|rst)$", "", p) for p in pages]


def book_config(source: Path) -> dict:
    return yaml.safe_load((source / "_config.yml").read_text())


def expected_launch_urls(config: dict, notebook: str) -> dict[str, str]:
    """The Binder and Colab links that open `notebook` (a path from the book root)."""
    repo_url = config["repository"]["url"].rstrip("/")
    org_repo = urlsplit(repo_url).path.strip("/")
    branch = config["repository"].get("branch", "main")
    path = "/".join(p for p in [config["repository"].get("path_to_book", ""), notebook] if p)
    launch = config["launch_buttons"]
    binder = launch["binderhub_url"].rstrip("/")
    colab = launch["colab_url"].rstrip("/")
    return {
        "binder": f"{binder}/v2/gh/{org_repo}/{branch}?urlpath=lab/tree/{path}",
        "colab": f"{colab}/github/{org_repo}/blob/{branch}/{path}",
    }


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@dataclass
class Site:
    """A served html dir and one browser context, shared by every page of the session."""

    base: str
    context: object
    blocked: list[str] = field(default_factory=list)


def _missing_browser(reason: str) -> None:
    """A reader's laptop skips with a hint; CI (CI=true) must have the browser: fail."""
    message = f"browser test cannot run: {reason}; {INSTALL_HINT}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="module")
def site(request: pytest.FixtureRequest) -> Iterator[Site]:
    if not CHROMIUM.is_file():
        _missing_browser(f"{CHROMIUM} not found")
    missing = [f for f in ["axe-core/axe.min.js"] if not (NODE_MODULES / f).exists()]
    if missing:
        _missing_browser(f"npm test assets missing under {NODE_MODULES}: {missing}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing_browser("the Python package playwright is not installed")

    built_book = request.getfixturevalue("built_book")  # only once the browser is there
    shutil.rmtree(SCREENSHOTS, ignore_errors=True)
    SCREENSHOTS.mkdir(parents=True)
    with served(built_book) as base, sync_playwright() as pw:
        # Headless Chromium hides scrollbars unless told not to; a reader's browser
        # draws them, and the layout check below needs them measured.
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
            ignore_default_args=["--hide-scrollbars"],
        )
        context = browser.new_context(viewport=DESKTOP)
        context.set_default_timeout(PAGE_TIMEOUT_MS)
        result = Site(base=base, context=context)
        context.route("**/*", functools.partial(_route, result))
        yield result
        context.close()
        browser.close()


@contextlib.contextmanager
def served(directory: Path) -> Iterator[str]:
    """`directory` on a local static server (quiet, a thread per request) while the block
    runs; its base URL. The browser tests of the site, the phone and the lab share it."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _route(site: Site, route: object) -> None:
    """Local requests pass; anything that leaves the machine is cut and reported."""
    url = route.request.url
    if urlsplit(url).hostname in ("127.0.0.1", "localhost"):
        route.continue_()
        return
    site.blocked.append(url)
    route.abort()


# JavaScript run in the page. Images: load lazy ones, wait for all, report size and alt.
_IMAGES_JS = """async () => {
  const imgs = [...document.images];
  imgs.forEach(i => { i.loading = 'eager'; });
  await Promise.all(imgs.map(i => i.complete ? null : new Promise(r => {
    i.addEventListener('load', r); i.addEventListener('error', r);
  })));
  return imgs.map(i => ({src: i.currentSrc.slice(0, 80), width: i.naturalWidth,
                         shown: i.getBoundingClientRect().width,
                         minText: i.dataset.minTextPx ? parseFloat(i.dataset.minTextPx) : null,
                         // fits the column, and a shown button opens it at full size
                         zoom: !!i.closest('.mha-zoomable')?.querySelector(
                           'button.mha-zoom:not([hidden])')?.getBoundingClientRect().width,
                         alt: (i.getAttribute('alt') || '').trim()}));
}"""

# bertviz views: each view's parameters (the tokens) sit in the script that draws it.
_BERTVIZ_PARAMS_JS = """() => [...document.scripts]
  .map(s => s.textContent)
  .filter(t => t.includes('root_div_id') && t.includes('const params = '))
  .map(t => t.split('const params = ')[1].split('; // HACK')[0])"""

_SVG_TEXT_JS = """id => [...document.querySelectorAll(`#${id} svg text`)].map(t => t.textContent)"""

# model_view shows tokens only in the detail of a clicked head: click layer 0, head 0.
_MODEL_VIEW_CLICK_JS = """id => {
  const bg = document.querySelector(`#${id} #attn_background_0_0`);
  if (!bg) return false;
  const regions = bg.parentNode.querySelectorAll('rect');
  regions[regions.length - 1].dispatchEvent(new MouseEvent('click', {bubbles: true}));
  return true;
}"""

# Layout of the text column: what is wider than its box must scroll and show a scrollbar
# (never be cut off or spill past the column), and (on a desktop, codeFits) a chapter's own
# code cells fit the column; on a phone they scroll like any wide block.
_LAYOUT_JS = """codeFits => {
  const article = document.querySelector('main article');
  const column = article.getBoundingClientRect();
  const SR = 'mjx-assistive-mml, .visually-hidden, .sr-only';  // hidden on purpose
  // ... and so is a box of at most 1 px that clips (the ledger's header row on a phone).
  const tiny = [...article.querySelectorAll('*')].filter(el => {
    const r = el.getBoundingClientRect();
    return r.width <= 1 && r.height <= 1 && getComputedStyle(el).overflow !== 'visible'; });
  const shown = el => { const r = el.getBoundingClientRect();
                        return r.width > 0 && r.height > 0 && !el.closest(SR) &&
                               !tiny.some(t => t.contains(el)); };
  const ox = el => getComputedStyle(el).overflowX;
  const scrolls = el => ['auto', 'scroll'].includes(ox(el));
  const label = el => el.tagName.toLowerCase() +
      [...el.classList].map(c => '.' + c).join('') + ' "' +
      el.textContent.trim().replace(/\\s+/g, ' ').slice(0, 50) + '"';
  const problems = [];
  for (const el of article.querySelectorAll('*')) {
    if (!shown(el)) continue;
    const box = el.getBoundingClientRect();
    if (['hidden', 'clip'].includes(ox(el)) && el.scrollWidth > el.clientWidth + 1) {
      const far = Math.max(box.right, ...[...el.querySelectorAll('*')].filter(shown)
                             .map(d => d.getBoundingClientRect().right));
      const cut = Math.round(far - box.right);
      if (cut > 1) problems.push(`cut off by ${cut} px: ${label(el)}`);
    }
    if (box.right > column.right + 1) {
      let a = el.parentElement;
      while (a && a !== article && !scrolls(a)) a = a.parentElement;
      const past = Math.round(box.right - column.right);
      if (a === article || a === null) problems.push(`spills ${past} px past: ${label(el)}`);
    }
    if (scrolls(el) && el.scrollWidth > el.clientWidth + 1) {
      const s = getComputedStyle(el);
      const bar = el.offsetHeight - el.clientHeight - parseFloat(s.borderTopWidth) -
                  parseFloat(s.borderBottomWidth);
      if (bar <= 0) problems.push(`scrolls sideways without a scrollbar (${el.scrollWidth} px `
                                + `in ${el.clientWidth} px): ${label(el)}`);
      const wider = el.scrollWidth - el.clientWidth;
      if (codeFits && el.matches('div.cell_input pre'))
        problems.push(`code cell ${wider} px wider than the column: ${label(el)}`);
    }
  }
  return problems;
}"""

# SVG images (the book's diagram) carry no data-min-text-px: each one shown is drawn inline at
# its shown size, off screen, and its smallest text measured there (font size times the scale
# of the text's transform on screen). Sub- and superscripts (a baseline-shift) are not
# counted, as matplotlib's mathtext scripts are not counted in data-min-text-px.
_SVG_IMAGE_TEXT_JS = """async () => {
  const found = [];
  const shown = [...document.images].filter(i => /\\.svg$/i.test(new URL(i.currentSrc).pathname)
                                          && i.getBoundingClientRect().width > 0);
  for (const img of shown) {
    const box = img.getBoundingClientRect();
    const svg = new DOMParser().parseFromString(await (await fetch(img.currentSrc)).text(),
                                                'image/svg+xml').documentElement;
    svg.setAttribute('width', box.width);
    svg.setAttribute('height', box.height);
    const holder = document.createElement('div');
    holder.style.cssText = 'position:fixed;left:0;top:0;visibility:hidden;pointer-events:none';
    holder.append(document.importNode(svg, true));
    document.body.append(holder);
    let text = Infinity;
    for (const t of holder.querySelectorAll('text, tspan')) {
      const own = [...t.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
      if (!own || t.closest('[baseline-shift]')) continue;
      const m = t.getScreenCTM();
      text = Math.min(text, parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b));
    }
    holder.remove();
    found.push({src: img.currentSrc.split('/').pop(), shown: box.width, text,
                alt: (img.getAttribute('alt') || '').trim()});
  }
  return found;
}"""

# The document itself must not scroll sideways; if it does, the elements that reach past the
# window (outside any box that scrolls them) are named, innermost first.
_PAGE_WIDTH_JS = """() => {
  const doc = document.documentElement, limit = doc.clientWidth;
  if (doc.scrollWidth <= limit) return {width: doc.scrollWidth, limit, culprits: []};
  const scrolls = el => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  const culprits = [...document.body.querySelectorAll('*')].filter(el => {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= limit + 1 || getComputedStyle(el).visibility === 'hidden')
      return false;
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement)
      if (scrolls(a)) return false;
    return ![...el.children].some(c => c.getBoundingClientRect().right > limit + 1);
  }).map(el => el.tagName.toLowerCase() + [...el.classList].map(c => '.' + c).join('') + ' "' +
               el.textContent.trim().replace(/\\s+/g, ' ').slice(0, 50) + '" to ' +
               Math.round(el.getBoundingClientRect().right) + ' px');
  return {width: doc.scrollWidth, limit, culprits: culprits.slice(0, 5)};
}"""

# Tables that stack (class mha-cards, book/_ext/small_screens.py: the claims ledger). On a
# phone every row is a card: each of its cells as wide as the row, one under the other, and
# every cell but the card's heading (the row's header and the article's words) under its
# column's name. On a desktop it stays a table.
_CARDS_JS = """stacked => {
  const problems = [];
  document.querySelectorAll('table.mha-cards').forEach((table, n) => {
    const rows = [...table.querySelectorAll('tbody tr')];
    if (!rows.length) problems.push(`card table ${n} has no rows`);
    rows.forEach((tr, i) => {
      const cells = [...tr.children];
      const name = `card table ${n}, row ${i + 1} ("${cells[0]?.textContent.trim()}")`;
      if (!stacked) {
        if (getComputedStyle(tr).display !== 'table-row')
          problems.push(`${name} is not a table row on a wide screen`);
        return;
      }
      const row = tr.getBoundingClientRect();
      const inner = tr.clientWidth - parseFloat(getComputedStyle(tr).paddingLeft)
                    - parseFloat(getComputedStyle(tr).paddingRight);
      let bottom = -Infinity;
      cells.forEach((cell, j) => {
        const box = cell.getBoundingClientRect();
        if (box.width < inner - 1)
          problems.push(`${name}: cell ${j + 1} is ${Math.round(box.width)} px wide in a `
                        + `${Math.round(inner)} px card`);
        if (box.top < bottom - 1) problems.push(`${name}: cell ${j + 1} is beside another`);
        bottom = box.bottom;
        const label = getComputedStyle(cell, '::before').content;
        if (cell.tagName === 'TD' && j > 1 && !(cell.dataset.label && label.includes(
              cell.dataset.label)))
          problems.push(`${name}: cell ${j + 1} shows no column name`);
      });
      if (row.right > table.closest('article').getBoundingClientRect().right + 1)
        problems.push(`${name} reaches past the column`);
    });
  });
  return problems;
}"""

# bertviz's model view: every head of a layer inside the column, none behind a scrollbar.
_MODEL_VIEW_FITS_JS = """id => {
  const svg = document.querySelector(`#${id} svg`);
  const out = document.getElementById(id).closest('.output') || document.getElementById(id);
  return {svg: svg.getBoundingClientRect().width, column: out.clientWidth};
}"""

_LAB_DRAWN_JS = "() => window.mhaLab && mhaLab.draws >= 1"

# After a resize: two animation frames, by which the new layout has been drawn.
_NEXT_FRAMES_JS = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"

_SCROLLABLES_SETTLED_JS = """() => [...document.querySelectorAll('.cell_output > .output, pre')]
  .every(e => (e.scrollWidth > e.clientWidth || e.scrollHeight > e.clientHeight)
              === (e.tabIndex === 0))"""

_AXE_JS = """async exempt => {
  const isExempt = (rule, node) => {
    const el = node.target.length === 1 ? document.querySelector(node.target[0]) : null;
    return el !== null && exempt.some(([r, sel]) => r === rule && el.matches(sel));
  };
  const res = await axe.run(document, {resultTypes: ['violations']});
  return res.violations
    .filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => ({id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.filter(n => !isExempt(v.id, n))}))
    .filter(v => v.nodes.length > 0)
    .map(v => ({...v, nodes: v.nodes.slice(0, 5).map(n => ({target: n.target.join(' '),
                  html: n.html.slice(0, 200), why: n.failureSummary}))}));
}"""


SOURCE = book_source()
PAGES = toc_pages(book_toc())

# Theme-level console errors, tolerated only while _config.yml lacks the proposed fix, so
# neither can come back once the fix is in:
# * pydata-sphinx-theme logs "invalid theme mode" on a reader's first visit unless the book
#   sets sphinx.config.html_context.default_mode;
# * sphinx-thebe 0.3.1 and sphinx-togglebutton inline scripts reach each page twice under
#   Sphinx 7.4, and the second `const THEBE_JS_URL` is a SyntaxError, unless the local
#   extension dedupe_scripts (sphinx.local_extensions) writes each inline script once.
_sphinx = book_config(SOURCE).get("sphinx") or {}
if "default_mode" not in ((_sphinx.get("config") or {}).get("html_context") or {}):
    KNOWN_JS_ERRORS["Got invalid theme mode: . Resetting to auto."] = "no default_mode"
if "dedupe_scripts" not in (_sphinx.get("local_extensions") or {}):
    KNOWN_JS_ERRORS["Identifier 'THEBE_JS_URL' has already been declared"] = "no dedupe_scripts"


@pytest.mark.parametrize("page", PAGES)
def test_page_in_browser(site: Site, built_book: Path, page: str) -> None:
    _check_page(site, built_book, page)


@pytest.mark.parametrize("page", PAGES)
def test_chinese_page_in_browser(site: Site, built_book: Path, page: str) -> None:
    """The Chinese edition's page passes every check of the English one, and its own."""
    _check_page(site, built_book, page, edition=ZH)


def _check_page(site: Site, built_book: Path, page: str, edition: str = "") -> None:
    """Every check of one page of one edition ("" the English root, ZH the Chinese folder)."""
    if edition and not (built_book / edition).is_dir():
        _no_chinese_edition(built_book)
    html_file = built_book / edition / f"{page}.html"
    assert html_file.is_file(), f"{page} is in _toc.yml but the site has no {html_file}"
    url = edition + page  # the page as the site serves it
    shot = SCREENSHOTS / url.replace("/", "__")

    errors: list[str] = []  # JavaScript errors, as the reader's console would show them
    problems: list[str] = []  # every failed check of this page, reported together
    tab = site.context.new_page()
    tab.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    tab.on(
        "console",
        lambda msg: errors.append(f"console.error: {msg.text}") if msg.type == "error" else None,
    )
    site.blocked.clear()
    narrowed = passed = False
    try:
        response = tab.goto(site.base + f"{url}.html", wait_until="load")
        assert response is not None, f"{url}: no response"
        assert response.status == 200, f"{url}: HTTP {response.status}"
        # The live lab is checked as drawn: its model loaded and its first sentence shown.
        lab = tab.evaluate("!!document.getElementById('mha-lab')")
        if lab:
            tab.wait_for_function(_LAB_DRAWN_JS, timeout=120_000)

        # Images: every one loaded and described.
        images = tab.evaluate(_IMAGES_JS)
        broken = [i["src"] for i in images if i["width"] == 0]
        if broken:
            problems.append(f"images that did not load: {broken}")
        no_alt = [i["src"] for i in images if not i["alt"]]
        if no_alt:
            problems.append(f"images without alt text: {no_alt}")
        problems.extend(_figure_text_problems(tab, images))

        # bertviz: every view draws an SVG that shows the sentence's tokens.
        for raw in tab.evaluate(_BERTVIZ_PARAMS_JS):
            problems.extend(_check_bertviz_view(tab, json.loads(raw)))

        # Maths: MathJax typeset every formula (raw TeX would show otherwise).
        n_math = tab.evaluate("document.querySelectorAll('span.math, div.math').length")
        if n_math:
            tab.wait_for_function("() => window.MathJax?.startup?.promise")
            tab.evaluate("() => MathJax.startup.promise")
            n_typeset = tab.evaluate("document.querySelectorAll('mjx-container').length")
            if n_typeset < n_math:
                problems.append(f"MathJax typeset {n_typeset} of {n_math} formulas")

        # Layout, now that MathJax and bertviz have drawn.
        problems.extend(tab.evaluate(_LAYOUT_JS, True))
        problems.extend(tab.evaluate(_CARDS_JS, False))
        if page == LEDGER and not tab.evaluate("!!document.querySelector('.mha-cards tbody tr')"):
            problems.append("the claims ledger is not a table of class mha-cards")

        # Launch buttons on notebook pages open this very notebook.
        if (SOURCE / f"{page}.ipynb").is_file():
            want = expected_launch_urls(book_config(SOURCE), f"{page}.ipynb")
            hrefs = tab.eval_on_selector_all("a[href]", "as => as.map(a => a.href)")
            problems.extend(
                f"no {k} launch button to {u}" for k, u in want.items() if u not in hrefs
            )

        problems.extend(_axe_problems(tab))
        if edition:
            problems.extend(_check_chinese_page(tab, site, page))

        # The same page on a phone. (Before any full-page screenshot: Chromium draws a
        # narrowed page's scrollbars late after one.)
        tab.set_viewport_size(PHONE)
        narrowed = True
        if lab:  # drawn again for this width, as a phone loads it
            tab.reload(wait_until="load")
            tab.wait_for_function(_LAB_DRAWN_JS, timeout=120_000)
            if n_math:
                tab.wait_for_function("() => window.MathJax?.startup?.promise")
                tab.evaluate("() => MathJax.startup.promise")
        tab.evaluate(_NEXT_FRAMES_JS)
        problems.extend(f"at {PHONE['width']} px: {p}" for p in _phone_problems(tab))

        if site.blocked:
            problems.append(f"requests that leave the site: {site.blocked}")
        errors = [e for e in errors if not any(known in e for known in KNOWN_JS_ERRORS)]
        if errors:
            problems.append("JavaScript errors:\n" + "\n".join(errors))
        assert not problems, f"{url}:\n- " + "\n- ".join(problems)
        passed = True
    finally:
        # What a failed check looked like (every page's look with MHA_SCREENSHOTS=1); the
        # checks' verdict stands either way.
        if EVERY_SCREENSHOT or not passed:
            if narrowed:
                _screenshot(tab, shot.with_name(f"{shot.name}.{PHONE['width']}px"))
                tab.set_viewport_size(DESKTOP)
            _screenshot(tab, shot)
        tab.close()


def _phone_problems(tab: object) -> list[str]:
    """What a reader with a phone would meet: the page narrowed to PHONE, already loaded."""
    problems = []
    page = tab.evaluate(_PAGE_WIDTH_JS)
    if page["width"] > page["limit"]:
        problems.append(
            f"the page is {page['width']} px wide in a {page['limit']} px window, "
            f"because of: {page['culprits']}"
        )
    problems.extend(tab.evaluate(_LAYOUT_JS, False))
    problems.extend(_figure_text_problems(tab, tab.evaluate(_IMAGES_JS)))
    problems.extend(tab.evaluate(_CARDS_JS, True))
    problems.extend(_axe_problems(tab))
    return problems


def _figure_text_problems(tab: object, images: list[dict]) -> list[str]:
    """Every figure's smallest text, as shown at the tab's width, at MIN_TEXT_PX or more, or
    the figure opens at full size on a tap (its button shown; tests/book/test_phone.py opens it).

    Figures (mha_lib.book.show) record their smallest text in image pixels; SVG images are
    measured in the page. book/_ext/small_screens.py fits a figure to a narrow column and gives
    it the button, which _static/small_screens.js shows while its text is under 9 px."""
    problems = []
    for i in images:
        if i["minText"] is not None and i["width"] and i["shown"] and not i["zoom"]:
            px = i["minText"] * min(1.0, i["shown"] / i["width"])
            if round(px, 2) < MIN_TEXT_PX:
                problems.append(
                    f"figure text {px:.1f} px < {MIN_TEXT_PX} px as shown "
                    f"({i['width']} px image in {i['shown']:.0f} px): {i['alt'][:60]}"
                )
    for svg in tab.evaluate(_SVG_IMAGE_TEXT_JS):
        if round(svg["text"], 2) < MIN_TEXT_PX:
            problems.append(
                f"SVG text {svg['text']:.1f} px < {MIN_TEXT_PX} px as shown "
                f"({svg['src']} in {svg['shown']:.0f} px): {svg['alt'][:60]}"
            )
    return problems


def _axe_problems(tab: object) -> list[str]:
    """No serious or critical axe-core violation, but for AXE_EXEMPT's theme elements."""
    # The theme makes wide outputs keyboard-scrollable (tabindex 0) 300 ms after the page (or a
    # late-drawn bertviz view, or a resize) changes; let it settle first, axe reports the rest.
    try:
        tab.wait_for_function(_SCROLLABLES_SETTLED_JS, timeout=3_000)
    except Exception:  # noqa: BLE001, S110 - axe-core reports any unsettled region
        pass
    if not tab.evaluate("!!window.axe"):
        tab.add_script_tag(path=str(NODE_MODULES / "axe-core" / "axe.min.js"))
    exempt = [[rule, selector] for rule, selector, _ in AXE_EXEMPT]
    violations = tab.evaluate(_AXE_JS, exempt)
    if violations:
        return ["axe-core violations:\n" + json.dumps(violations, indent=1)]
    return []


def _screenshot(tab: object, path: Path) -> None:
    try:
        tab.screenshot(path=str(path.with_name(path.name + ".png")), full_page=True)
    except Exception as exc:  # noqa: BLE001 - a missing screenshot must not hide the failure
        print(f"no screenshot {path.name}: {exc}")


# The Chinese edition (scripts/build_book.py builds it into the html dir's zh folder).
ZH = "zh/"
_NUMBER = r"[-−]?\\d+(?:[.,]\\d+)*(?:e[-+]?\\d+)?"
# On a Chinese page: its language, its switcher's target, every glued number beside the English
# page's, its figures' alt texts, and the prose the reader sees (outputs, code, inline code and
# the bibliography, which cites English works, aside) that still has English words and no
# Chinese.
_CHINESE_JS = f"""async englishUrl => {{
  const cjk = /[\\u3400-\\u9fff]/;
  const numbers = root => [...root.querySelectorAll('.pasted-text')]
    .flatMap(e => e.textContent.match(/{_NUMBER}/g) || []).sort();
  const english = new DOMParser().parseFromString(await (await fetch(englishUrl)).text(),
                                                  'text/html');
  const switcher = document.querySelector('a.mha-language-switch');
  const prose = [...document.querySelectorAll(
      'article h1, article h2, article h3, article p, article li, article th, article td')]
    .filter(e => !e.closest('.cell_output, .output, pre, .mha-lab-strings, .citation-list, '
                            + '.bibliography, [class*="highlight"]'))
    .map(e => {{  // inline code is a name in either edition: the words around it count, and so
      const copy = e.cloneNode(true);  // do those around English marked as such (lang="en":
      copy.querySelectorAll('code, [lang="en"]').forEach(c => c.remove());  // the lab's sentences)
      return copy.textContent.trim();
    }})
    .filter(t => /[A-Za-z]{{3,}}.*[A-Za-z]{{3,}}/.test(t) && !cjk.test(t));
  return {{
    lang: document.documentElement.lang,
    switcher: switcher ? new URL(switcher.href).pathname : null,
    numbers: numbers(document), englishNumbers: numbers(english),
    englishAlts: [...document.querySelectorAll('img[data-min-text-px]')]
      .map(i => i.alt).filter(a => !cjk.test(a)).map(a => a.slice(0, 60)),
    englishProse: prose.map(t => t.slice(0, 80)),
    // Output tables' column headers (names such as d_head, torch, AdamW or MiniLM stay as they
    // are: as the build's rule has it, a header holding a whole lowercase word is English) and
    // figures drawn from their translatable copy (an SVG), not the English PNG.
    englishHeaders: [...document.querySelectorAll('.mha-table th')].map(e => e.textContent)
      .filter(t => /\\b[a-z]{{3,}}\\b/.test(t) && !cjk.test(t)
        && !/[_|]|^(torch|dtype|AdamW|SGD)$/.test(t)),
    pngFigures: [...document.querySelectorAll('article img[data-min-text-px]')]
      .filter(i => i.src.startsWith('data:image/png')).map(i => i.alt.slice(0, 40)),
    search: document.querySelector('input[name="q"]')?.placeholder ?? '',
  }};
}}"""


# Chinese has no italics (book/_ext/i18n/cjk_emphasis.py, _static/book.css): no element whose own
# text holds Chinese is drawn in italics or oblique, as the browser computes its style; and an
# emphasis of Chinese text stays visible, in bold or in 楷体 (KaiTi's stack, a Song face without).
_CJK_ITALICS_JS = """() => {
  const cjk = /[\\u3400-\\u4dbf\\u4e00-\\u9fff\\uf900-\\ufaff]/;
  const label = el => el.tagName.toLowerCase() + [...el.classList].map(c => '.' + c).join('')
    + ' "' + el.textContent.trim().replace(/\\s+/g, ' ').slice(0, 30) + '"';
  const italic = [], lost = [];
  for (const el of document.body.querySelectorAll('*')) {
    if (el.closest('script, style, mjx-container, svg')) continue;
    const own = [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('');
    if (!cjk.test(own)) continue;
    const style = getComputedStyle(el);
    if (style.fontStyle !== 'normal') italic.push(`${label(el)} (${style.fontStyle})`);
  }
  for (const em of document.querySelectorAll('article em')) {
    if (!cjk.test(em.textContent)) continue;
    const style = getComputedStyle(em);
    const bold = parseInt(style.fontWeight, 10) >= 600;
    const kai = /Kai/.test(style.fontFamily);  // _static/book.css's stack, whatever is installed
    if (!bold && !kai) lost.push(label(em));
  }
  return {italic, lost};
}"""

# The theme's own words on a Chinese page (book/_ext/i18n/interface_strings.py): every text and
# every tooltip or label (title, aria-label, ...) outside the article's prose, and the theme's
# parts inside it (heading links, toggles, buttons, also those its scripts add), is Chinese,
# but for code, formulas and the names below; an element marked lang="en" (the switcher to the
# English page) says its own language. And no word of Taiwan's usage (列印 for 打印 ...) or in
# traditional characters, anywhere on the page.
INTERFACE_NAMES = {
    "Ctrl": "the search shortcut's key", "K": "the search shortcut's key",
    "Binder": "a service's name", "Colab": "a service's name", "GitHub": "a service's name",
    ".pdf": "a file type", ".ipynb": "a file type", ".md": "a file type",
}  # fmt: skip
TAIWAN_WORDS = (
    "列印", "档案", "程式码", "原始码", "搜寻", "网路", "视窗", "软体", "伺服器", "萤幕",
    "滑鼠", "登入", "介面", "资料夹", "连结", "影片", "讯息", "回馈",
)  # fmt: skip
# Traditional forms of characters common in an interface (never in simplified text).
TRADITIONAL = (
    "檔網設顯視頁載選單側邊欄換複內錄尋變體與為這個們來說會"
    "後過還當從對於開關閉項鍵圖層頭權數據連結訊"
)
_INTERFACE_JS = """([names, taiwan, traditional]) => {
  const cjk = /[\\u3400-\\u9fff]/, latin = /[A-Za-z]{2,}/;
  const ok = new Set(names);
  const english = t => latin.test(t) && !cjk.test(t) && !ok.has(t);
  const theirs = 'summary, button, .headerlink, .copybtn, .toggle-button, .sd-summary-title';
  const inProse = el => el.closest('article.bd-article') && !el.closest(theirs);
  // Code and formulas are names, wherever they are (a heading's code in the page's contents).
  const skip = 'script, style, noscript, [lang="en"], [lang^="en-"], code, pre, kbd, .math, '
    + 'mjx-container';
  const found = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement, t = n.textContent.replace(/\\s+/g, ' ').trim();
    if (t && !el.closest(skip) && !inProse(el) && english(t))
      found.push(`text "${t.slice(0, 50)}"`);
  }
  // Bootstrap moves a tooltip's title to data-bs-original-title once the page is up.
  const attributes = ['title', 'aria-label', 'placeholder', 'data-bs-title', 'data-tooltip',
                      'data-bs-original-title'];
  for (const el of document.body.querySelectorAll(attributes.map(a => `[${a}]`).join(', '))) {
    if (el.closest(skip)) continue;
    // In the prose, a link's title (the work it cites) or an output's label is content.
    if (inProse(el)) continue;
    for (const a of attributes) {
      const v = (el.getAttribute(a) || '').trim();
      if (v && english(v))
        found.push(`${el.tagName.toLowerCase()}[${a}="${v.slice(0, 50)}"]`);
    }
  }
  const text = document.body.innerText + ' ' + [...document.querySelectorAll(
    attributes.map(a => `[${a}]`).join(', '))].flatMap(el => attributes.map(a => el.getAttribute(a)
    || '')).join(' ');
  const tw = taiwan.filter(w => text.includes(w));
  const trad = [...new Set(text.match(new RegExp(`[${traditional}]`, 'g')) || [])];
  return {english: [...new Set(found)], taiwan: [...tw, ...trad]};
}"""


def _chinese_typography_problems(tab: object) -> list[str]:
    """A Chinese page's italics and interface strings, as the browser shows them."""
    problems = []
    style = tab.evaluate(_CJK_ITALICS_JS)
    if style["italic"]:
        problems.append(f"Chinese text in italics: {style['italic'][:5]}")
    if style["lost"]:
        problems.append(f"emphasis of Chinese text neither bold nor 楷体: {style['lost'][:5]}")
    words = tab.evaluate(_INTERFACE_JS, [list(INTERFACE_NAMES), list(TAIWAN_WORDS), TRADITIONAL])
    if words["english"]:
        problems.append(f"interface strings in English: {words['english'][:8]}")
    if words["taiwan"]:
        problems.append(f"Taiwan's words or traditional characters: {words['taiwan'][:8]}")
    return problems


def _no_chinese_edition(built_book: Path) -> None:
    """A private toc or book root builds English only; the book's own build must have both."""
    if "MHA_BOOK_TOC" in os.environ or "MHA_BOOK_SOURCE" in os.environ:
        pytest.skip("a private table of contents or book root builds the English edition only")
    pytest.fail(f"{built_book} has no Chinese edition ({ZH}): build with scripts/build_book.py")


def _check_chinese_page(tab: object, site: Site, page: str) -> list[str]:
    """What only a Chinese page must show: its language, its switcher, the English numbers."""
    found = tab.evaluate(_CHINESE_JS, site.base + f"{page}.html")
    problems = []
    if found["lang"] != "zh-CN":
        problems.append(f'<html lang="{found["lang"]}">, not zh-CN')
    if found["switcher"] != f"/{page}.html":
        problems.append(f"the language switcher opens {found['switcher']}, not /{page}.html")
    if found["numbers"] != found["englishNumbers"]:
        only_zh = sorted(set(found["numbers"]) - set(found["englishNumbers"]))
        only_en = sorted(set(found["englishNumbers"]) - set(found["numbers"]))
        problems.append(
            f"glued numbers differ from the English page's ({len(found['numbers'])} vs "
            f"{len(found['englishNumbers'])}; only here {only_zh[:8]}, only there {only_en[:8]})"
        )
    if found["englishAlts"]:
        problems.append(f"figures with an English alt text: {found['englishAlts']}")
    if found["englishHeaders"]:
        problems.append(f"table headers in English: {found['englishHeaders'][:5]}")
    if found["pngFigures"]:
        problems.append(f"figures drawn in English (no translatable copy): {found['pngFigures']}")
    if found["englishProse"]:
        problems.append(f"text left in English: {found['englishProse'][:5]}")
    if not re.search(r"[\u3400-\u9fff]", found["search"]):
        problems.append(f"the search field says {found['search']!r}, not Chinese")
    problems.extend(_chinese_typography_problems(tab))
    return problems


def test_the_chinese_typography_checks_find_injected_faults(site: Site, built_book: Path) -> None:
    """The checks above, on a Chinese page with faults put in: Chinese in italics, an emphasis
    drawn as plain text, an English button title and text, and Taiwan's 列印; and a button
    added with one of the theme's English labels gets its Chinese one."""
    if not (built_book / ZH).is_dir():
        _no_chinese_edition(built_book)
    tab = site.context.new_page()
    try:
        tab.goto(site.base + f"{ZH}{PAGES[0]}.html", wait_until="load")
        assert _chinese_typography_problems(tab) == [], "the page itself must pass"
        tab.evaluate("""() => {
          const p = document.createElement('p');
          document.querySelector('article section').append(p);
          p.innerHTML = '<em>斜体的中文</em><span style="font-style: oblique">倾斜</span>'
            + '<em class="plain" style="font-style: normal">平常</em>'
            + '<button title="Open the sidebar">列印成 PDF</button>'
            + '<button class="mha-added" aria-label="Toggle hidden content">+</button>';
          document.querySelector('footer, .bd-footer-content, body').insertAdjacentHTML(
            'beforeend', '<p>Open issue</p>');
        }""")
        found = "\n".join(_chinese_typography_problems(tab))
        # A button a script adds with one of the theme's English labels is translated.
        added = tab.evaluate("document.querySelector('.mha-added').getAttribute('aria-label')")
    finally:
        tab.close()
    faults = ("斜体的中文", "倾斜", "平常", 'title="Open the sidebar"', "Open issue", "列印")
    for fault in faults:
        assert fault in found, f"{fault} not found in:\n{found}"
    assert added == "显示或隐藏内容", added


def test_language_switcher_keeps_the_section(site: Site, built_book: Path) -> None:
    """From a section of a chapter to the same section in Chinese, and back."""
    if not (built_book / ZH).is_dir():
        _no_chinese_edition(built_book)
    page = next(p for p in PAGES if (SOURCE / f"{p}.ipynb").is_file())
    tab = site.context.new_page()
    try:
        tab.goto(site.base + f"{page}.html", wait_until="load")
        section = tab.evaluate("document.querySelector('article section section').id")
        tab.goto(site.base + f"{page}.html#{section}", wait_until="load")
        for edition in (ZH, ""):
            with tab.expect_navigation():
                tab.click("a.mha-language-switch")
            assert tab.url == site.base + f"{edition}{page}.html#{section}"
            assert tab.evaluate(f"!!document.getElementById('{section}')"), tab.url
    finally:
        tab.close()


# Words of the Chinese edition, each on several pages: a reader's query is not cut into words,
# so the search must find a phrase wherever the pages use it (book/_ext/i18n/chinese_search.py).
CHINESE_TERMS = (
    "多头注意力", "注意力头", "位置编码", "剪枝", "词元", "随机种子", "重要性", "基线", "消融",
    "共指", "依存", "初始化", "梯度", "准确率", "参数量", "注意力图", "融合内核", "预训练模型",
    "探针", "下限", "头维度", "缩放", "查询", "子空间", "输出投影", "句法", "语义", "蒸馏",
    "论断总账", "头",
)  # fmt: skip


def _chinese_pages_with(built_book: Path, term: str) -> set[str]:
    """The Chinese pages whose article text contains `term` (paths as the search links them)."""
    import html as html_lib

    found = set()
    for page in (built_book / ZH).rglob("*.html"):
        if "_static" in page.parts or page.name in ("search.html", "genindex.html"):
            continue
        text = page.read_text()
        start, end = text.find("<article"), text.find("</article>")
        if start < 0:
            continue
        body = re.sub(r"<(script|style)\b.*?</\1>", "", text[start:end], flags=re.S)
        if term in html_lib.unescape(re.sub(r"<[^>]+>", "", body)):
            found.add(page.relative_to(built_book / ZH).with_suffix("").as_posix())
    return found


def test_chinese_search_finds_a_phrase_on_every_page_that_uses_it(
    site: Site, built_book: Path
) -> None:
    """Each of the terms, typed as a reader types it (no spaces), finds every Chinese page
    whose text contains it."""
    if not (built_book / ZH).is_dir():
        _no_chinese_edition(built_book)
    assert len(CHINESE_TERMS) >= 20
    tab = site.context.new_page()
    try:
        found = _in_page_search(tab, site, list(CHINESE_TERMS))
    finally:
        tab.close()
    missed = []
    for term in CHINESE_TERMS:
        want = _chinese_pages_with(built_book, term)
        assert want, f"no Chinese page uses {term}: choose another term"
        if want - found[term]:
            missed.append(f"{term}: {sorted(want - found[term])}")
    assert not missed, f"the search misses pages that use the term: {missed}"


def _search(
    tab: object, site: Site, query: str, summaries: bool = True
) -> list[tuple[str, str]]:
    """The Chinese search page's results for `query`: (page, its summary), in order; with
    `summaries=False` the list alone (every summary ""), without waiting for the summaries,
    which the page fetches one result page at a time after the list is complete."""
    tab.goto(site.base + f"{ZH}search.html?q={query}", wait_until="load")
    tab.wait_for_function(
        "() => document.querySelector('#search-results p.search-summary')?.innerText.trim()",
        timeout=PAGE_TIMEOUT_MS,
    )
    if not summaries:
        hits = tab.eval_on_selector_all(
            "#search-results ul.search li a", "as => as.map(a => new URL(a.href).pathname)"
        )
        return [(re.sub(r"^.*?/zh/|\.html$", "", h), "") for h in hits]
    try:  # each result's summary is fetched after the list is complete
        tab.wait_for_function(
            "() => [...document.querySelectorAll('#search-results ul.search li')]"
            ".every(li => li.querySelector('p.context'))",
            timeout=5_000,
        )
    except Exception:  # noqa: BLE001, S110 - a result without a summary has none to check
        pass
    hits = tab.eval_on_selector_all(
        "#search-results ul.search li",
        "ls => ls.map(li => [new URL(li.querySelector('a').href).pathname,"
        " li.querySelector('p.context')?.textContent ?? ''])",
    )
    return [(re.sub(r"^.*?/zh/|\.html$", "", h), summary) for h, summary in hits]


# The search page's own search, run in the page for one query: the pages it lists, in order.
# It is what the page runs for `search.html?q=...` (searchtools.js: Search.query calls
# _parseQuery, which splits with book/_ext/i18n/static/chinese_search.js's splitQuery, then
# _performSearch, and lists every result); _in_page_search checks that on its first queries.
_PAGES_FOUND_JS = "q => Search._performSearch(...Search._parseQuery(q)).map(r => r[0])"


def _in_page_search(tab: object, site: Site, queries: list[str]) -> dict[str, set[str]]:
    """The pages the Chinese search finds for each query, the search page loaded once: the
    first two queries are also typed into the page's address (`search.html?q=`), and the
    pages it lists must be the same."""
    typed = {q: {page for page, _ in _search(tab, site, q, summaries=False)} for q in queries[:2]}
    tab.goto(site.base + f"{ZH}search.html", wait_until="load")
    tab.wait_for_function(
        "() => typeof Search !== 'undefined' && Search.hasIndex()", timeout=PAGE_TIMEOUT_MS
    )
    found = {q: set(tab.evaluate(_PAGES_FOUND_JS, q)) for q in queries}
    for q, pages in typed.items():
        assert found[q] == pages, f"{q}: the page lists {sorted(pages)}, its search {found[q]}"
    return found


def _glossary_heads(page: Path) -> dict[str, str]:
    """Each entry of a built glossary page: its anchor id → the text of its term, as shown."""
    import html as html_lib

    heads = {}
    entry = re.compile(r'<dt\b[^>]*\bid="([^"]+)"[^>]*>(.*?)</dt>', re.S)
    for term_id, dt in entry.findall(page.read_text()):
        dt = re.sub(r'<a class="headerlink".*?</a>', "", dt, flags=re.S)
        text = html_lib.unescape(re.sub(r"<[^>]+>", "", dt)).strip()
        heads[term_id] = text.replace("\u2019", "'")  # the English build's smart apostrophe
    return heads


def glossary_terms(built_book: Path) -> list[tuple[str, str]]:
    """Each entry of the Chinese glossary: (its English term, as the English glossary shows it
    under the same anchor, its Chinese name). The Chinese glossary heads each entry with the
    Chinese term first and the English in brackets, 注意力汇（attention sink）, as d2l-zh does;
    the name is the words before the bracket (the whole head where there is none: MiniLM)."""
    english = _glossary_heads(built_book / "book" / "glossary.html")
    chinese = _glossary_heads(built_book / ZH / "book" / "glossary.html")
    assert chinese.keys() == english.keys(), "the two glossaries have different entries"
    return [(english[i], re.sub(r"（[^）]*）$", "", chinese[i]).strip()) for i in english]


_CJK_CHAR = re.compile(r"[\u4e00-\u9fff]")
ENGLISH_ONLY_TERMS = {"MiniLM", "BLEU"}  # names, the same in Chinese


def chinese_first(english: str, head: str) -> bool:
    """Whether a Chinese glossary entry's head is in d2l-zh's order: the Chinese term, then
    the English one in brackets (注意力汇（attention sink）); a head whose Chinese term already
    holds the English words needs no brackets ([CLS] 与 [SEP]), and a name stays as it is."""
    if head == english:
        return english in ENGLISH_ONLY_TERMS
    bracketed = re.fullmatch(r"(.+?)（(.+)）", head)
    if bracketed:
        return bracketed[2] == english and bool(_CJK_CHAR.search(bracketed[1]))
    words = [w for w in re.findall(r"[A-Za-z]+", english) if w != "and"]
    return bool(_CJK_CHAR.search(head)) and all(w in head for w in words)


@pytest.mark.parametrize(
    ("english", "head", "ok"),
    [
        ("attention sink", "注意力汇（attention sink）", True),
        ("attention sink", "attention sink", False),
        ("attention sink", "attention sink（注意力汇）", False),
        ("attention sink", "注意力汇", False),
        ("[CLS] and [SEP]", "[CLS] 与 [SEP]", True),
        ("MiniLM", "MiniLM", True),
    ],
)
def test_chinese_first_on_hand_checked_heads(english: str, head: str, ok: bool) -> None:
    assert chinese_first(english, head) == ok


def test_the_chinese_glossary_heads_each_entry_chinese_first(built_book: Path) -> None:
    """注意力汇（attention sink）, not attention sink: every entry of the Chinese glossary is
    headed by its Chinese term with the English one in brackets (chinese_first), under the
    English edition's anchor, and every glossary link of a Chinese page lands on an entry."""
    if not (built_book / ZH).is_dir():
        _no_chinese_edition(built_book)
    english = _glossary_heads(built_book / "book" / "glossary.html")
    chinese = _glossary_heads(built_book / ZH / "book" / "glossary.html")
    assert chinese["term-attention-sink"] == "注意力汇（attention sink）"
    wrong = [
        f"{english[i]!r} is headed {chinese.get(i)!r}"
        for i in english
        if not chinese_first(english[i], chinese.get(i, ""))
    ]
    assert not wrong, "Chinese glossary heads not in d2l-zh's order:\n" + "\n".join(wrong)
    links = [
        a
        for page in (built_book / ZH).rglob("*.html")
        if "_static" not in page.parts
        for a in re.findall(r'href="[^"]*glossary\.html#(term-[^"]+)"', page.read_text())
    ]
    assert links and not set(links) - chinese.keys(), sorted(set(links) - chinese.keys())


def test_chinese_search_finds_every_glossary_term_on_the_glossary(
    site: Site, built_book: Path
) -> None:
    """Each glossary entry, searched by its Chinese name and by its English term, finds the
    glossary, the page that defines it."""
    if not (built_book / ZH).is_dir():
        _no_chinese_edition(built_book)
    terms = glossary_terms(built_book)
    assert len(terms) >= 25 and ("attention sink", "注意力汇") in terms, terms
    tab = site.context.new_page()
    try:
        found = _in_page_search(tab, site, [q for pair in terms for q in pair[::-1]])
    finally:
        tab.close()
    missed = [query for query, pages in found.items() if "book/glossary" not in pages]
    assert not missed, f"the search for these glossary terms misses the glossary: {missed}"


# Words a reader types that the pages do not use as a phrase (book/_ext/i18n/chinese_search.py):
# 缩放点积 (the chapter on scaling says 缩放 and 点积, never the phrase), and d2l-zh's 注意力汇聚
# (its attention pooling), which readers type for the sinks; each must find these pages.
SEARCHES = {
    "缩放点积": {"notebooks/02_scaling"},
    "注意力汇聚": {"notebooks/09b_attention_sinks", "book/glossary"},
    "汇点": {"notebooks/09b_attention_sinks", "notebooks/05_inside_bert"},
}
_TEX = re.compile(r"\\[()\[\]]|\\(?:frac|sqrt|text|operatorname|times)\b")


def test_chinese_search_finds_d2l_words_and_shows_formulas_as_text(
    site: Site, built_book: Path
) -> None:
    """The searches above find their pages, and no result's summary shows a formula's TeX
    source (\\(W_q\\)): the summaries of every result of these searches and of 投影."""
    if not (built_book / ZH).is_dir():
        _no_chinese_edition(built_book)
    tab = site.context.new_page()
    missed, tex = [], []
    try:
        for query in [*SEARCHES, "投影"]:
            hits = _search(tab, site, query)
            lacking = SEARCHES.get(query, set()) - {page for page, _ in hits}
            if lacking:
                missed.append(f"{query}: {sorted(lacking)}")
            tex += [
                f"{query} → {page}: …{summary[max(0, m.start() - 30) : m.end() + 30]}…"
                for page, summary in hits
                for m in _TEX.finditer(summary)
            ]
    finally:
        tab.close()
    assert not missed, f"the search misses: {missed}"
    assert not tex, "summaries show TeX source:\n" + "\n".join(tex[:10])


def _check_bertviz_view(tab: object, params: dict) -> list[str]:
    """A head view lists the tokens; a model view shows them once a head is clicked."""
    view_id = params["root_div_id"]
    data = params["attention"][int(params["default_filter"])]
    tokens = set(data["left_text"]) | set(data["right_text"])
    try:
        tab.wait_for_function(
            "id => document.querySelectorAll(`#${id} svg text`).length > 0",
            arg=view_id,
            timeout=BERTVIZ_TIMEOUT_MS,
        )
        is_model_view = tab.evaluate(_MODEL_VIEW_CLICK_JS, view_id)
        if is_model_view:
            tab.wait_for_function(
                "id => document.querySelectorAll(`#${id} svg text.token`).length > 0",
                arg=view_id,
            )
    except Exception as exc:  # noqa: BLE001 - reported with the page's other problems
        return [f"bertviz view {view_id} drew no SVG text: {exc}"]
    if is_model_view:
        fit = tab.evaluate(_MODEL_VIEW_FITS_JS, view_id)
        if fit["svg"] > fit["column"] + 1:
            return [
                f"bertviz model view {view_id} is {fit['svg']:.0f} px wide in a "
                f"{fit['column']} px column: some heads are hidden"
            ]
    shown = set(tab.evaluate(_SVG_TEXT_JS, view_id))
    if not tokens <= shown:
        return [f"bertviz view {view_id} lacks tokens {sorted(tokens - shown)}"]
    return []


def test_index_opens_the_book_root(site: Site) -> None:
    """A reader typing the bare site address lands on the book's first page."""
    tab = site.context.new_page()
    try:
        response = tab.goto(site.base, wait_until="load")
        assert response is not None and response.status == 200
        tab.wait_for_url(f"**/{PAGES[0]}.html")
    finally:
        tab.close()


def test_toc_pages_lists_every_file_of_the_toc() -> None:
    """The page list the browser visits is the whole toc (checked against a plain regex)."""
    text = book_toc().read_text()
    files = re.findall(r"^\s*(?:-\s*)?(?:root|file):\s*(\S+)\s*$", text, flags=re.M)
    assert PAGES == [re.sub(r"\.(md|ipynb|rst)$", "", f) for f in files]
    assert any((SOURCE / f"{p}.ipynb").is_file() for p in PAGES), "no notebook page in the toc"
