/* Chinese search: a query's Chinese cut into the pieces the book's index knows
 * (book/_ext/i18n/chinese_search.py indexes every character and pair of the pages, and jieba's
 * words).
 *
 * Sphinx's searchtools.js calls the global splitQuery() when a search runs, with the index
 * loaded. Its own split is kept for everything but runs of CJK characters. A run is covered
 * by pieces that are terms of the index (a word jieba cut from a page, or a pair of
 * characters that some page holds) or single characters: as few single characters as
 * possible, then as many pieces as possible, so that each piece is a word of the book. A
 * piece of one or two characters is searched as it is, a longer one as its overlapping pairs
 * (jieba may have cut it otherwise in a page: 参数量 as 参 + 数量). So 缩放点积 is 缩放 + 点积,
 * and finds chapter 2, which has both words but never the phrase; a page that has the phrase
 * always has every piece. Without an index (a unit test) a run becomes its overlapping pairs
 * (位置编码: 位置, 置编, 编码), each once.
 *
 * Search results' summaries: a formula's TeX source (\(W_q\)) is shown as plain text (W_q). */
(() => {
  const CJK_RUNS = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+/gu;
  const SEPARATORS = /[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu;

  const pairs = (run) =>
    run.length <= 2 ? [run] : Array.from({ length: run.length - 1 }, (_, i) => run.slice(i, i + 2));

  // The fewest single characters, then the most pieces: best[i] covers run.slice(0, i).
  const cover = (run, known) => {
    const best = [{ singles: 0, pieces: [] }];
    for (let end = 1; end <= run.length; end++) {
      let choice = null;
      for (let start = end - 1; start >= 0; start--) {
        const piece = run.slice(start, end);
        if (piece.length > 1 && !known(piece)) continue;
        const before = best[start];
        const singles = before.singles + (piece.length === 1 ? 1 : 0);
        const pieces = before.pieces.length + 1;
        if (!choice || singles < choice.singles ||
            (singles === choice.singles && pieces > choice.pieces.length))
          choice = { singles, pieces: [...before.pieces, piece] };
      }
      best.push(choice);
    }
    return best[run.length].pieces;
  };

  const cut = (query, known) => {
    const parts = [];
    const chinese = (run) =>
      known ? cover(run, known).flatMap(pairs) : pairs(run);
    for (const piece of query.split(SEPARATORS)) {
      if (!piece) continue;
      let last = 0;
      for (const match of piece.matchAll(CJK_RUNS)) {
        if (match.index > last) parts.push(piece.slice(last, match.index));
        parts.push(...chinese(match[0]));
        last = match.index + match[0].length;
      }
      if (last < piece.length) parts.push(piece.slice(last));
    }
    return [...new Set(parts)];
  };

  // The index's terms, once Sphinx has loaded it (searchtools.js keeps it in Search._index).
  const indexTerms = () => {
    const index = typeof Search !== "undefined" ? Search._index : null;
    if (!index) return null;
    const has = Object.prototype.hasOwnProperty;
    return (term) => has.call(index.terms, term) || has.call(index.titleterms, term);
  };

  // TeX as a reader can read it in a line of plain text.
  const SYMBOLS = {
    times: "×", cdot: "·", top: "⊤", le: "≤", leq: "≤", ge: "≥", geq: "≥", approx: "≈",
    neq: "≠", ne: "≠", to: "→", rightarrow: "→", infty: "∞", sum: "Σ", prod: "Π", in: "∈",
    dots: "…", ldots: "…", cdots: "⋯", pm: "±", alpha: "α", beta: "β", gamma: "γ",
    delta: "δ", epsilon: "ε", varepsilon: "ε", theta: "θ", lambda: "λ", mu: "μ", pi: "π",
    rho: "ρ", sigma: "σ", tau: "τ", phi: "φ", omega: "ω", Sigma: "Σ", Delta: "Δ",
  };
  const texToText = (tex) =>
    tex
      .replace(/^\s*(\\\(|\\\[|\$\$?)|(\\\)|\\\]|\$\$?)\s*$/g, "")
      .replace(/\\(?:text|mathrm|mathbf|mathit|operatorname|textrm|mathcal)\s*\{([^{}]*)\}/g, "$1")
      .replace(/\\sqrt\s*\{([^{}]*)\}/g, "√$1")
      .replace(/\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, "$1/$2")
      .replace(/\\(left|right|big|Big|bigl|bigr)\b/g, "")
      .replace(/\\[,;:! ]/g, " ")
      .replace(/\\([A-Za-z]+)/g, (_, name) => SYMBOLS[name] ?? name)
      .replace(/[{}]/g, "")
      .replace(/\s+/g, " ")
      .trim();

  const plainMaths = (htmlString) => {
    const doc = new DOMParser().parseFromString(htmlString, "text/html");
    doc.querySelectorAll("span.math, div.math").forEach((el) => {
      el.replaceWith(doc.createTextNode(texToText(el.textContent)));
    });
    return doc.documentElement.outerHTML;
  };

  const patchSummaries = () => {
    if (typeof Search === "undefined" || Search.mhaPlainMaths) return;
    const htmlToText = Search.htmlToText;
    Search.htmlToText = (htmlString, anchor) => htmlToText(plainMaths(htmlString), anchor);
    Search.mhaPlainMaths = true;
  };

  window.splitQuery = (query) => cut(query, indexTerms());
  window.mhaChineseSearch = { cut, cover, texToText };
  if (typeof Search !== "undefined") patchSummaries();
  else if (typeof document !== "undefined")
    document.addEventListener("DOMContentLoaded", patchSummaries);
})();
