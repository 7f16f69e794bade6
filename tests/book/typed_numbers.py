"""Find numbers that a chapter types instead of measuring (used by test_book.py).

Every number a reader sees must come from execution. Four places where one slips in:

* **prose**: decimals and integers in Markdown, outside math, code, citations, links and
  glue roles. Allowed: references ("chapter 4", "claim 9", "Table 3", "layers 2 and 3" as
  names, a table's row number, a numbered list's item numbers, a link named by a chapter
  number), years, the constants 0 and
  1, and the source article's words in quotation marks (or its own 「」);
* **alt text**: digits in the literal parts of a figure's `alt=` (an f-string's
  replacement fields are measured, the rest is typed);
* **model shapes**: `divmod(…, 12)`-style integer literals standing for a model's size;
* **glue of a literal**: `glue("x", 17.5)` (or a chapter's `put("x", 17.5)`,
  `put(x=17.5)`) is a typed number with a glue label; a cited
  figure goes through `mha_lib.book.glue_cited`, which names its source.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

_REFERENCE = (
    r"(?:chapters?|claims?|tables?|rows?|sections?|exercises?|figures?|equations?|steps?\s+\d+\s+of"
    r"|layers?|heads?|parts?|issues?)"
)
# A reference word followed by a list of numbers: "chapters 4 and 7", "claims 3, 4 and 5".
_REFERENCE_LIST = re.compile(
    rf"\b{_REFERENCE}\s+\d+(?:(?:\s*,\s*|\s+and\s+|\s+or\s+|\s*[–-]\s*)\d+)*", re.IGNORECASE
)
_QUOTED = re.compile(r"「[^」]*」|\"[^\"\n]*\"|“[^”]*”|‘[^’]*’")  # 「」: the article, quoted
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?!\w|\.\d)")  # "64." ends a sentence


def prose_numbers(markdown: str) -> list[str]:
    """Numbers typed into one Markdown cell, each with a little context."""
    text = re.sub(r"```.*?```", " ", markdown, flags=re.S)  # fenced blocks (literalinclude)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    text = re.sub(r"\{glue:\w+\}`[^`]*`", " ", text)
    text = re.sub(r"\{\w+\}`[^`]*`", " ", text)  # cite, ref, doc roles
    text = re.sub(r"\$[^$]*\$|`[^`]*`", " ", text)
    text = re.sub(r"\[[\d\s,]+\]\([^)]*\)", " ", text)  # links named by a chapter number
    text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets
    text = re.sub(r"(?m)^\|\s*\d+[a-z]?\s*\|", "|", text)  # a table's row number
    text = re.sub(r"(?m)^\s*\d+\.\s", " ", text)  # a numbered list's item numbers
    text = re.sub(r"<[^>]+>", " ", text)  # html tags
    text = _QUOTED.sub(" ", text)
    text = _REFERENCE_LIST.sub(" ", text)
    found = []
    for m in _NUMBER.finditer(text):
        value = m.group()
        if value in ("0", "1") or re.fullmatch(r"(19|20)\d\d", value):
            continue
        context = text[max(0, m.start() - 30) : m.end() + 10].replace("\n", " ")
        found.append(f"{value!r} in …{context.strip()}…")
    return found


def _literal_parts(node: ast.AST) -> list[str]:
    """The typed (non-measured) text of a string expression."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [v.value for v in node.values if isinstance(v, ast.Constant)]
    if isinstance(node, ast.BinOp):
        return _literal_parts(node.left) + _literal_parts(node.right)
    return []


def _is_numeric_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _is_numeric_literal(node.operand)
    if isinstance(node, ast.BinOp):
        return _is_numeric_literal(node.left) and _is_numeric_literal(node.right)
    return False


def _call_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def code_numbers(source: str) -> list[str]:
    """Typed numbers in one code cell: alt text digits, literal model shapes, literal glue."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError as err:
        return [f"unparsable cell: {err}"]
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node)
        for kw in node.keywords:
            if kw.arg == "alt":
                digits = [d for part in _literal_parts(kw.value) for d in re.findall(r"\d+", part)]
                if digits:
                    found.append(f"alt text types {digits}: use measured values in an f-string")
        if name == "divmod" and len(node.args) == 2 and _is_numeric_literal(node.args[1]):
            found.append(f"divmod(…, {ast.unparse(node.args[1])}): take the shape from the model")
        # glue("key", value) and the chapters' shorthands put("key", value), put(key=value)
        if name in ("glue", "put") and len(node.args) >= 2 and _is_numeric_literal(node.args[1]):
            found.append(
                f"{name}({ast.unparse(node.args[0])}, {ast.unparse(node.args[1])}): a typed "
                "number; a cited figure goes through glue_cited"
            )
        if name == "put":
            found += [
                f"put({kw.arg}={ast.unparse(kw.value)}): a typed number"
                for kw in node.keywords
                if kw.arg is not None and _is_numeric_literal(kw.value)
            ]
    return found


def notebook_numbers(path: Path) -> list[str]:
    """Every typed number of a notebook, prefixed by its cell index."""
    cells = json.loads(Path(path).read_text())["cells"]
    found = []
    for i, cell in enumerate(cells):
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            found += [f"cell {i}: {f}" for f in prose_numbers(source)]
        elif cell["cell_type"] == "code":
            found += [f"cell {i}: {f}" for f in code_numbers(source)]
    return found


if __name__ == "__main__":
    import sys

    for arg in sys.argv[1:]:
        for line in notebook_numbers(Path(arg)):
            print(f"{Path(arg).name}: {line}")
