// A formula in a sentence that is wider than the text column scrolls sideways instead of being
// cut off (book.css, section 4d): the theme clips inline maths at the column's edge. Only a
// formula wider than its box by more than 2 px is marked (class mha-wide): Chromium finds a
// pixel of overflow in many formulas at fractional positions, which would draw a scrollbar
// under each. Marked after MathJax has drawn, again when the window changes size and when a
// collapsed block (a solution, hidden code) opens. Jupyter Book adds every file of _static/.
(() => {
  const mark = () => {
    for (const span of document.querySelectorAll(".bd-article span.math")) {
      span.classList.toggle("mha-wide", span.scrollWidth > span.clientWidth + 2);
    }
  };
  const start = () => {
    const typeset = window.MathJax?.startup?.promise;
    if (!typeset) return;
    typeset.then(mark);
    document.fonts?.ready.then(mark); // MathJax's fonts may arrive after it has drawn
    window.addEventListener("resize", mark);
    document.addEventListener("toggle", mark, true); // <details> of hidden cells
    document.addEventListener("click", () => requestAnimationFrame(mark), true); // toggle buttons
  };
  if (document.readyState === "complete") start();
  else window.addEventListener("load", start);
})();
