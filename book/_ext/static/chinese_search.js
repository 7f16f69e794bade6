/* Chinese search: a query's Chinese as its overlapping pairs of characters
 * (book/_ext/chinese_search.py indexes every character and pair of the pages).
 *
 * Sphinx's searchtools.js calls the global splitQuery() when a search runs. Its own split is
 * kept for everything but runs of CJK characters; a run of one character stays itself, a
 * longer run becomes its pairs (位置编码: 位置, 置编, 编码), each once. */
(() => {
  const CJK_RUNS = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+/gu;
  const SEPARATORS = /[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu;

  const pairs = (run) =>
    run.length === 1 ? [run] : Array.from({ length: run.length - 1 }, (_, i) => run.slice(i, i + 2));

  const cut = (query) => {
    const parts = [];
    for (const piece of query.split(SEPARATORS)) {
      if (!piece) continue;
      let last = 0;
      for (const match of piece.matchAll(CJK_RUNS)) {
        if (match.index > last) parts.push(piece.slice(last, match.index));
        parts.push(...pairs(match[0]));
        last = match.index + match[0].length;
      }
      if (last < piece.length) parts.push(piece.slice(last));
    }
    return [...new Set(parts)];
  };

  window.splitQuery = cut;
  window.mhaChineseSearch = { cut };
})();
