// Phones (book.css section 4e-g; book/_ext/small_screens.py; tests/book/test_phone.py): nothing is
// cut inside its box without the page saying so, and a figure too small to read opens at its
// full size. A phone draws no scrollbar until the reader scrolls, so a box that scrolls
// sideways looks complete; only the browser knows, after layout, what overflows. Jupyter Book
// adds every file of _static/ to each page.
//
// 1. A figure that fits the column (.mha-zoomable, written by small_screens.py) shows its
//    "Tap to enlarge" button while it is shown narrower than its readable width (its smallest
//    text under 9 px); the button, or a tap on the figure, opens it at full size in a <dialog>
//    that pans, with a close button and, when it is wider than the screen, a hint that says so.
// 2. A display formula too wide for the column breaks where its author put a wide space
//    between two parts (\quad, \qquad: two equations side by side), one part under the other;
//    then, if still too wide, it is set smaller to fit, down to MIN_MATH_SCALE of its size;
//    beyond that it scrolls, like 3. (MathJax 3 breaks no line itself.)
// 3. A figure, formula or table still cut by a box that clips it gets a hint under that box
//    ("Scrolls sideways"), and the box a shadow at the edge that hides more.
// Run after MathJax has drawn, when fonts arrive, when the window changes size and when a
// collapsed block opens.
(() => {
  const MIN_MATH_SCALE = 0.75; // smaller than this, a formula scrolls instead
  const ITEMS = "img, svg, canvas, mjx-math, table";
  const SKIP = "mjx-assistive-mml, .mha-lab-strings, dialog, .mha-zoomable";
  const words = () => document.getElementById("mha-small-screens")?.dataset ?? {};

  const shown = (el) => {
    const r = el.getBoundingClientRect();
    return r.width > 1 && r.height > 1 && !el.closest(SKIP);
  };

  // 1. Figures that open at full size.
  let view = null;
  const openView = (zoomable) => {
    const w = words();
    if (!view) {
      view = document.createElement("dialog");
      view.className = "mha-zoom-view";
      view.setAttribute("aria-label", w.viewLabel || "");
      const bar = document.createElement("div");
      bar.className = "mha-zoom-bar";
      const pan = document.createElement("p");
      pan.className = "mha-more mha-zoom-pan";
      pan.textContent = w.pan || "";
      const close = document.createElement("button");
      close.type = "button";
      close.className = "mha-zoom-close";
      close.textContent = `✕ ${w.close || ""}`;
      close.addEventListener("click", () => view.close());
      bar.append(pan, close);
      const pane = document.createElement("div");
      pane.className = "mha-zoom-pane";
      pane.tabIndex = 0;
      view.append(bar, pane);
      // A tap on the backdrop (outside the dialog's box) closes it too.
      view.addEventListener("click", (e) => {
        if (e.target === view) view.close();
      });
      document.body.append(view);
    }
    const img = zoomable.querySelector("img");
    const big = img.cloneNode(false);
    big.removeAttribute("style");
    big.removeAttribute("loading");
    big.style.width = `${img.naturalWidth}px`;
    big.style.maxWidth = "none";
    big.style.height = "auto";
    const pane = view.querySelector(".mha-zoom-pane");
    pane.replaceChildren(big);
    view.showModal();
    pane.scrollLeft = 0;
    pane.scrollTop = 0;
    const pan = view.querySelector(".mha-zoom-pan");
    pan.hidden = !(pane.scrollWidth > pane.clientWidth + 1 || pane.scrollHeight > pane.clientHeight + 1);
  };

  const markZoomables = () => {
    for (const zoomable of document.querySelectorAll(".mha-zoomable")) {
      const img = zoomable.querySelector("img");
      const button = zoomable.querySelector("button.mha-zoom");
      if (!img || !button) continue;
      if (!zoomable.dataset.wired) {
        zoomable.dataset.wired = "1";
        button.addEventListener("click", () => openView(zoomable));
        img.addEventListener("click", () => {
          if (!button.hidden) openView(zoomable);
        });
      }
      const width = img.getBoundingClientRect().width;
      const small = width > 0 && width < parseFloat(zoomable.dataset.readableWidth) - 0.5;
      button.hidden = !small;
      zoomable.classList.toggle("mha-small", small);
    }
  };

  // 2. Display formulas too wide: broken at their wide spaces, then smaller, to fit.
  const fitFormulas = () => {
    for (const box of document.querySelectorAll('.bd-article mjx-container[display="true"]')) {
      if (box.dataset.mhaScaled) {
        box.style.fontSize = box.dataset.mhaScaled === "none" ? "" : box.dataset.mhaScaled;
        delete box.dataset.mhaScaled;
      }
      box.classList.remove("mha-broken");
      for (const gap of box.querySelectorAll(".mha-break")) gap.classList.remove("mha-break");
      const math = box.querySelector("mjx-math");
      const avail = box.parentElement.clientWidth;
      if (!math || !avail || box.getBoundingClientRect().width === 0) continue;
      if (math.getBoundingClientRect().width <= avail + 1) continue;
      // A wide space between two parts: a child of the formula with no glyph (MathJax draws
      // glyphs as mjx-c), at least about an em wide.
      const em = parseFloat(getComputedStyle(math).fontSize);
      const gaps = [...math.children].filter((c) => !c.querySelector("mjx-c") && c.getBoundingClientRect().width >= 0.9 * em);
      if (gaps.length) {
        box.classList.add("mha-broken");
        for (const gap of gaps) gap.classList.add("mha-break");
      }
      const wide = math.getBoundingClientRect().width;
      if (wide <= avail + 1) continue;
      const scale = (avail - 2) / wide;
      if (scale < MIN_MATH_SCALE) continue; // it scrolls, with a hint (3)
      box.dataset.mhaScaled = box.style.fontSize || "none";
      box.style.fontSize = `${parseFloat(getComputedStyle(box).fontSize) * scale}px`;
    }
  };

  // 3. What a box still cuts: a hint under the box, a shadow at its edge.
  const cutBy = (el) => {
    const r = el.getBoundingClientRect();
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX === "visible") continue;
      const box = a.getBoundingClientRect();
      const left = box.left + a.clientLeft;
      const right = left + a.clientWidth;
      const hidden = Math.max(0, r.right - right) + Math.max(0, left - r.left);
      if (hidden > 1) return a;
    }
    return null;
  };

  const markScrolls = () => {
    const article = document.querySelector(".bd-article");
    if (!article) return;
    const cutters = new Set();
    for (const el of article.querySelectorAll(ITEMS)) {
      if (el.tagName === "svg" && el.parentElement.closest("svg, mjx-container")) continue;
      if (el.closest("mjx-container") && el.tagName !== "MJX-MATH") continue;
      if (!shown(el)) continue;
      const box = cutBy(el);
      if (box && box.scrollWidth > box.clientWidth + 1) cutters.add(box);
    }
    for (const hint of article.querySelectorAll(".mha-scroll-hint")) {
      if (!cutters.has(hint.mhaBox)) {
        hint.mhaBox?.classList.remove("mha-cut");
        hint.remove();
      }
    }
    const text = words().scrolls || "";
    for (const box of cutters) {
      box.classList.add("mha-cut");
      if (box.mhaHint?.isConnected) continue;
      const hint = document.createElement(box.matches("span, mjx-container:not([display])") ? "span" : "div");
      hint.className = "mha-more mha-scroll-hint";
      hint.setAttribute("aria-hidden", "true"); // a screen reader reads the whole box anyway
      hint.textContent = `⟷ ${text}`;
      hint.mhaBox = box;
      box.mhaHint = hint;
      // Under the box: after its parent when that lays its children out in a row (the theme's
      // div.math is a flex box, for equation numbers).
      const row = getComputedStyle(box.parentElement).display.includes("flex");
      (row ? box.parentElement : box).after(hint);
      const edge = () => box.classList.toggle("mha-cut-end", box.scrollLeft + box.clientWidth >= box.scrollWidth - 2);
      box.addEventListener("scroll", edge, { passive: true });
      edge();
    }
  };

  let pending = 0;
  const mark = () => {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(() => {
      markZoomables();
      fitFormulas();
      markScrolls();
      document.documentElement.dataset.mhaSmallScreens = "marked";
    });
  };

  const start = () => {
    mark();
    window.MathJax?.startup?.promise?.then(mark);
    document.fonts?.ready.then(mark);
    for (const img of document.querySelectorAll(".bd-article img")) {
      if (!img.complete) img.addEventListener("load", mark, { once: true });
    }
    window.addEventListener("resize", mark);
    document.addEventListener("toggle", mark, true); // <details> of hidden cells
    document.addEventListener("click", (e) => {
      if (!e.target.closest?.(".mha-zoom-view")) mark();
    }, true); // toggle buttons
  };
  if (document.readyState === "complete") start();
  else window.addEventListener("load", start);
})();
