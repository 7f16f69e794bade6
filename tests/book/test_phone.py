"""Every page on a phone (390 x 844 CSS px, touch, a phone's overlay scrollbars), both editions.

tests/book/test_site.py narrows a desktop tab to 390 px and checks that nothing spills out of the
column and that whatever is wider than its box scrolls, with a scrollbar. On a phone that is
not enough: a phone draws no scrollbar until the reader scrolls, so a figure, a formula or a
table cut at the edge of its box looks complete, and the reader never learns that the rest is
there (a review found it on 50 of 62 pages). Here each page is loaded as a phone loads it
(Chromium's mobile emulation: touch, overlay scrollbars, the page's viewport tag) and:

1. **Nothing is cut without a visible way to see the rest.** Every figure (`img`, `svg`,
   `canvas`), formula (MathJax's drawn `mjx-math`) and table shown on the page must fit
   inside every box around it that clips (`overflow-x` not `visible`), or that box must
   show a hint beside it: an element of class `mha-more` (_static/small_screens.js
   writes them: "scrolls sideways", or a figure's "tap to enlarge"), shown, at least 9 px
   text, on screen, and within 48 px of the box.
2. **A figure too small to read opens at a readable size.** A figure shown narrower than the
   width at which its smallest text is 9 px (`data-min-text-px`) must carry such a hint as
   a button; a tap on it opens the figure where its text is 9 px or more.
3. **The lab's touch targets are at least 44 x 44 CSS px** (WCAG 2.5.5, Apple's and Google's
   guidance): every button, menu, text field and head tile of the lab.

A failed page lists every problem with its size in px; the counts per page are the numbers a
reviewer compares (`MHA_PHONE_REPORT=<file>` appends one JSON line per page).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_site import (
    CHROMIUM,
    CHROMIUM_ARGS,
    PAGES,
    ZH,
    Site,
    _missing_browser,
    _no_chinese_edition,
    _route,
    served,
)

pytestmark = pytest.mark.book

PHONE = {"width": 390, "height": 844}
TOUCH_PX = 44  # the smallest touch target, CSS px
MIN_TEXT_PX = 9  # as tests/book/test_site.py: a figure's smallest text as shown
HINT_NEAR_PX = 48  # a hint this close to its box (above or below) belongs to it
REPORT = os.environ.get("MHA_PHONE_REPORT")

# Every figure, formula and table shown, and the boxes that cut it. A formula is MathJax's
# drawn mjx-math (its container is as wide as the column whatever the formula's width).
_CUT_JS = """([nearPx, minText]) => {
  const article = document.querySelector('main article');
  const SR = 'mjx-assistive-mml, .visually-hidden, .sr-only, .mha-lab-strings, dialog';
  const shown = el => {
    const r = el.getBoundingClientRect();
    return r.width > 1 && r.height > 1 && !el.closest(SR) &&
           el.checkVisibility({opacityProperty: true, visibilityProperty: true});
  };
  const label = el => el.tagName.toLowerCase() +
      [...el.classList].slice(0, 2).map(c => '.' + c).join('') + ' "' +
      (el.getAttribute('alt') || el.textContent).trim().replace(/\\s+/g, ' ').slice(0, 40) + '"';
  const hints = [...document.querySelectorAll('.mha-more')].filter(h => {
    if (!shown(h)) return false;
    const r = h.getBoundingClientRect();
    const size = parseFloat(getComputedStyle(h).fontSize);
    return size >= minText && r.left >= -1 && r.right <= innerWidth + 1 &&
           h.textContent.trim().length > 0;
  });
  const hinted = box => {
    const b = box.getBoundingClientRect();
    return hints.some(h => {
      const r = h.getBoundingClientRect();
      return r.top < b.bottom + nearPx && r.bottom > b.top - nearPx;
    });
  };
  const items = [...article.querySelectorAll('img, svg, canvas, mjx-math, table')]
    .filter(el => !(el.tagName === 'svg' && el.parentElement.closest('svg, mjx-container')))
    .filter(el => !(el.tagName === 'TABLE' && el.parentElement.closest('table')))
    .filter(el => !el.closest('mjx-container') || el.tagName === 'MJX-MATH')
    .filter(shown);
  const found = [];
  for (const el of items) {
    const r = el.getBoundingClientRect();
    const kind = el.tagName === 'MJX-MATH' ? 'formula' : el.tagName === 'TABLE' ? 'table'
               : 'figure';
    for (let a = el.parentElement; a && a !== document.documentElement; a = a.parentElement) {
      if (getComputedStyle(a).overflowX === 'visible') continue;
      const box = a.getBoundingClientRect();
      const left = box.left + a.clientLeft, right = left + a.clientWidth;
      const cut = Math.round(Math.max(0, r.right - right) + Math.max(0, left - r.left));
      if (cut > 1) {
        found.push({kind, cut, what: label(el), box: label(a), width: Math.round(r.width),
                    inside: a.clientWidth, hinted: hinted(a)});
        break;
      }
    }
  }
  // Figures shown smaller than their readable width (their smallest text under 9 px).
  const small = [...article.querySelectorAll('img[data-min-text-px]')].filter(shown)
    .filter(i => i.naturalWidth && parseFloat(i.dataset.minTextPx) *
                 Math.min(1, i.getBoundingClientRect().width / i.naturalWidth) < minText - 0.01)
    .map(i => ({what: label(i),
                text: parseFloat(i.dataset.minTextPx) *
                      i.getBoundingClientRect().width / i.naturalWidth,
                zoom: !!i.closest('.mha-zoomable')?.querySelector('button.mha-more.mha-zoom')}));
  return {found, small};
}"""

# A tap on the first small figure's button opens it; the text as shown there, and the hint of
# the box it scrolls in if it is wider than the screen.
_ZOOM_JS = """async ([minText, nearPx]) => {
  const img = [...document.querySelectorAll('main article .mha-zoomable img[data-min-text-px]')]
    .find(i => i.getBoundingClientRect().width > 0);
  if (!img) return null;
  img.closest('.mha-zoomable').querySelector('button.mha-zoom').click();
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const dialog = document.querySelector('dialog.mha-zoom-view[open]');
  if (!dialog) return {open: false};
  const big = dialog.querySelector('img');
  await (big.complete ? null : new Promise(r => big.addEventListener('load', r)));
  const w = big.getBoundingClientRect().width;
  const text = parseFloat(img.dataset.minTextPx) * Math.min(1, w / big.naturalWidth);
  const pane = big.parentElement;
  const wide = pane.scrollWidth > pane.clientWidth + 1;
  const hint = [...dialog.querySelectorAll('.mha-more')].some(h =>
    h.checkVisibility({opacityProperty: true}) && h.textContent.trim() &&
    parseFloat(getComputedStyle(h).fontSize) >= minText);
  const close = dialog.querySelector('button.mha-zoom-close');
  const closeBox = close ? close.getBoundingClientRect() : null;
  close?.click();
  return {open: true, text, wide, hint, closes: !dialog.open,
          closeSize: closeBox ? [closeBox.width, closeBox.height] : null};
}"""

# The lab's touch targets: everything a finger presses.
_TARGETS_JS = """() => [...document.querySelectorAll(
    '#mha-lab button, #mha-lab select, #mha-lab input, #mha-lab textarea, #mha-lab a[href],'
    + ' #mha-lab [role=button], #mha-lab summary')]
  .filter(el => el.checkVisibility({visibilityProperty: true}) &&
                el.getBoundingClientRect().width > 0)
  .map(el => { const r = el.getBoundingClientRect();
    return {what: el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
              [...el.classList].slice(0, 1).map(c => '.' + c).join('') +
              (el.dataset.layer ? ` ${el.dataset.layer}-${el.dataset.head ?? ''}` : ''),
            w: Math.round(r.width * 10) / 10, h: Math.round(r.height * 10) / 10}; })"""

_LAB_DRAWN_JS = "() => window.mhaLab && mhaLab.draws >= 1"


@pytest.fixture(scope="module")
def phone(request: pytest.FixtureRequest) -> Iterator[Site]:
    """The built site served locally and one phone-like browser context."""
    if not CHROMIUM.is_file():
        _missing_browser(f"{CHROMIUM} not found")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing_browser("the Python package playwright is not installed")
    built_book = request.getfixturevalue("built_book")
    with served(built_book) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(
            viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2
        )
        context.set_default_timeout(20_000)
        site = Site(base=base, context=context)
        context.route("**/*", functools.partial(_route, site))
        yield site
        context.close()
        browser.close()


def phone_problems(site: Site, url: str) -> tuple[list[str], dict]:
    """What a reader with a phone meets on `url` (a page path without .html); and counts."""
    tab = site.context.new_page()
    try:
        response = tab.goto(site.base + f"{url}.html", wait_until="load")
        assert response is not None and response.status == 200, url
        lab = tab.evaluate("!!document.getElementById('mha-lab')")
        if lab:
            tab.wait_for_function(_LAB_DRAWN_JS, timeout=120_000)
        if tab.evaluate("document.querySelectorAll('span.math, div.math').length"):
            tab.wait_for_function("() => window.MathJax?.startup?.promise")
            tab.evaluate("() => MathJax.startup.promise")
        tab.evaluate("() => document.fonts.ready.then(() => null)")
        # Twice a frame later: the page's own scripts mark what scrolls after layout.
        tab.evaluate("() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 400)))")
        seen = tab.evaluate(_CUT_JS, [HINT_NEAR_PX, MIN_TEXT_PX])
        problems = [
            f"{c['kind']} cut by {c['cut']} px ({c['width']} px in {c['inside']} px) with "
            f"nothing that says so: {c['what']} in {c['box']}"
            for c in seen["found"]
            if not c["hinted"]
        ]
        problems += [
            f"figure text {s['text']:.1f} px as shown, and no button to enlarge it: {s['what']}"
            for s in seen["small"]
            if not s["zoom"]
        ]
        zoom = tab.evaluate(_ZOOM_JS, [MIN_TEXT_PX, HINT_NEAR_PX]) if seen["small"] else None
        if zoom is not None:
            if not zoom["open"]:
                problems.append("a tap on a figure's enlarge button opened nothing")
            else:
                if zoom["text"] < MIN_TEXT_PX - 0.01:
                    problems.append(f"an enlarged figure's text is {zoom['text']:.1f} px")
                if zoom["wide"] and not zoom["hint"]:
                    problems.append("an enlarged figure scrolls sideways and nothing says so")
                if not zoom["closes"]:
                    problems.append("an enlarged figure's close button does not close it")
                size = zoom["closeSize"] or [0, 0]
                if min(size) < TOUCH_PX - 0.5:
                    problems.append(f"an enlarged figure's close button is {size} px")
        small_targets = []
        if lab:
            small_targets = [
                t
                for t in tab.evaluate(_TARGETS_JS)
                if t["w"] < TOUCH_PX - 0.5 or t["h"] < TOUCH_PX - 0.5
            ]
            if small_targets:
                sizes = sorted({f"{t['w']:.0f}x{t['h']:.0f}" for t in small_targets})
                problems.append(
                    f"{len(small_targets)} touch targets of the lab under {TOUCH_PX} x "
                    f"{TOUCH_PX} px (sizes {', '.join(sizes[:8])}): "
                    + ", ".join(t["what"] for t in small_targets[:6])
                )
        counts = {
            "page": url,
            "cut": len(seen["found"]),
            "cut_unhinted": sum(not c["hinted"] for c in seen["found"]),
            "by_kind": {
                k: sum(c["kind"] == k and not c["hinted"] for c in seen["found"])
                for k in ("figure", "formula", "table")
            },
            "worst_cut_px": max((c["cut"] for c in seen["found"] if not c["hinted"]), default=0),
            "small_figures": len(seen["small"]),
            "small_figures_without_zoom": sum(not s["zoom"] for s in seen["small"]),
            "small_touch_targets": len(small_targets),
        }
        if site.blocked:
            problems.append(f"requests that leave the site: {site.blocked}")
        return problems, counts
    finally:
        tab.close()


def _check(site: Site, built_book: Path, page: str, edition: str) -> None:
    if edition and not (built_book / edition).is_dir():
        _no_chinese_edition(built_book)
    site.blocked.clear()
    problems, counts = phone_problems(site, edition + page)
    if REPORT:
        with open(REPORT, "a") as fh:
            fh.write(json.dumps(counts) + "\n")
    assert not problems, f"{edition}{page} at {PHONE['width']} px:\n- " + "\n- ".join(problems)


@pytest.mark.parametrize("page", PAGES)
def test_phone_page(phone: Site, built_book: Path, page: str) -> None:
    _check(phone, built_book, page, "")


@pytest.mark.parametrize("page", PAGES)
def test_chinese_phone_page(phone: Site, built_book: Path, page: str) -> None:
    _check(phone, built_book, page, ZH)
