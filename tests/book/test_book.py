"""The book: every chapter executes in a fresh kernel and the site builds with warnings as errors.

The `built_book` fixture (conftest.py) runs `jupyter-book build -W -n --keep-going` into a
temporary directory with an empty execution cache, so each notebook runs top to bottom in its
own fresh kernel; an exception in any cell, any stderr output, an unresolved glue key or a
broken cross-reference fails the build and therefore these tests.
"""

import json
import re
import sys
from pathlib import Path

import pytest
import yaml
from typed_numbers import code_numbers, notebook_numbers, prose_numbers

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
PAGES = sorted((REPO / "book").glob("*.md"))


def toc_files() -> list[str]:
    """The root, every chapter and every chapter's sections (a long chapter's later pages)."""
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    files = [toc["root"]]

    def add(entries: list[dict]) -> None:
        for entry in entries:
            files.append(entry["file"])
            add(entry.get("sections", []))

    for part in toc.get("parts", []):
        add(part["chapters"])
    return files


def test_every_notebook_is_a_chapter_in_the_toc():
    listed = set(toc_files())
    missing = [nb.name for nb in NOTEBOOKS if f"notebooks/{nb.stem}" not in listed]
    assert not missing, f"notebooks not in _toc.yml: {missing}"


# A page a reader finishes in one sitting: a long chapter is split into parts (sections of
# the chapter in _toc.yml) rather than growing past this many source lines, every cell's
# markdown and code counted (hidden plumbing too: it is still read by whoever edits it).
MAX_PAGE_LINES = 650


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_page_is_read_in_one_sitting(path):
    cells = json.loads(path.read_text())["cells"]
    lines = sum(len("".join(c["source"]).splitlines()) for c in cells)
    assert lines <= MAX_PAGE_LINES, (
        f"{path.name}: {lines} source lines > {MAX_PAGE_LINES}; split it into parts of its chapter"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path):
    cells = json.loads(path.read_text())["cells"]
    dirty = [i for i, c in enumerate(cells) if c.get("outputs") or c.get("execution_count")]
    assert not dirty, f"{path.name}: cells {dirty} carry outputs; the book executes notebooks"


@pytest.mark.parametrize(
    "path", [*NOTEBOOKS, *sorted(REPO.glob("book/*.ipynb"))], ids=lambda p: p.name
)
def test_every_cell_has_its_own_id(path):
    """nbformat 4.5 cells carry ids; one without warns (MissingIDFieldWarning), and with
    warnings as errors a page run by the tests then fails: caught here, in a second."""
    nb = json.loads(path.read_text())
    assert (nb["nbformat"], nb["nbformat_minor"]) >= (4, 5), path.name
    ids = [c.get("id") for c in nb["cells"]]
    missing = [i for i, x in enumerate(ids) if not x]
    assert not missing, f"{path.name}: cells {missing} have no id"
    assert len(set(ids)) == len(ids), f"{path.name}: cell ids repeat"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_numbers_are_measured_not_typed(path):
    """Prose, alt text, model shapes and glue carry measured numbers only (typed_numbers.py)."""
    typed = notebook_numbers(path)
    assert not typed, f"{path.name}: typed numbers:\n" + "\n".join(typed)


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_pages_type_no_numbers(path):
    typed = prose_numbers(path.read_text())
    assert not typed, f"{path.name}: typed numbers:\n" + "\n".join(typed)


def test_typed_number_guard_catches_what_it_should():
    """The guard itself: each kind of typed number is found, measured ones are not."""
    assert prose_numbers("66 of 72 heads") and prose_numbers("a gap of 0.5 points")
    assert prose_numbers("They use exactly 64.") == ["'64' in …They use exactly 64.…"]
    assert not prose_numbers("chapters 4 and 7, claim 9, Table 3 (2019), {glue:text}`x:.1f` %")
    assert not prose_numbers('the article says "about 64" and $d=64$ and `x[12]`')
    assert not prose_numbers("the article: 「每个头只处理 64 维」")
    assert prose_numbers("「」 64 heads")
    assert code_numbers('show(fig, alt="rises to 100 percent")')
    assert not code_numbers('show(fig, alt=f"rises to {acc:.0f} percent")')
    assert code_numbers("layer, head = divmod(i, 12)")
    assert not code_numbers("layer, head = divmod(i, n_heads)")
    assert code_numbers('glue("gain", 17.5, display=False)')
    assert code_numbers('glue("chance", 100 / 8, display=False)')
    assert not code_numbers('glue("gain", 100 * gain, display=False)')
    assert code_numbers('put("gain", 17.5)') and code_numbers("put(gain=17.5, n=len(x))")
    assert not code_numbers('put("gain", 100 * gain)') and not code_numbers("put(n=len(x))")


def test_cited_values_name_a_reference():
    keys = set(re.findall(r"@\w+\{([^,]+),", (REPO / "book" / "references.bib").read_text()))
    for path in NOTEBOOKS:
        for cell in json.loads(path.read_text())["cells"]:
            for source in re.findall(
                r"glue_cited\([^)]*source=\"([^\"]+)\"", "".join(cell["source"])
            ):
                assert source in keys, (
                    f"{path.name}: glue_cited source {source!r} not in references.bib"
                )


@pytest.mark.book
def test_every_toc_page_is_built(built_book):
    missing = [f for f in toc_files() if not (built_book / f"{f}.html").is_file()]
    assert not missing, f"pages missing from the built site: {missing}"


# A glued value in the prose: {glue:text}`key` or {glue:text}`key:.2f` (a key of this page).
_GLUE_ROLE = re.compile(r"\{glue:text\}`([A-Za-z_][A-Za-z0-9_]*)(?::([^`]*))?`")
_PASTED = re.compile(r'<span class="pasted-text">(.*?)</span>', re.S)
# What a reader must never see in an output: an object's repr, a failed check.
_REPR = re.compile(r"&lt;[\w.]+ object at 0x[0-9a-f]+&gt;|\bCheck\(what=|\bTrainResult\(")


def _glued_values(built_book: Path, stem: str) -> dict[str, object]:
    """This build's glued values of one notebook (myst-nb's glue file), as Python values."""
    import ast

    path = built_book.parent / "jupyter_execute" / "notebooks" / f"{stem}.glue.json"
    values = {}
    for key, output in json.loads(path.read_text()).items():
        text = output["data"].get("text/plain", "")
        try:
            values[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            values[key] = text
    return values


# Glued values are numbers and names; every word around them is written in the page, where the
# catalogues translate it (a glued phrase would reach the Chinese page in English, or need a
# template for every wording a measurement can pick). A glued string may hold letters only if it
# is a name, listed here with what it names: names read the same in both editions.
GLUED_NAMES = {
    "01_qkv_lookup::soft_top_title": "a book of chapter 1's toy catalogue, by its title",
    "05_inside_bert::base_model": "the Hugging Face id of the model MiniLM was distilled from",
    "05_inside_bert::parser_license": "the parser's licence, as its metadata names it (MIT)",
    "05c_heads_as_parsers::silver_beat_list": "dependency labels (det, nsubj, dobj, ...)",
    "05c_heads_as_parsers::silver_holm_list": "dependency labels (det, nsubj, dobj, ...)",
    "05c_heads_as_parsers::silver_tie_list": "dependency labels (amod, poss, aux, ...)",
    "06b_pruning_a_pretrained_model::latency_cpu": "torch's CPU capability (AVX2)",
    "07c_one_dead_head::init_machine": "torch's CPU capability (AVX2)",
}
_LETTERS = re.compile(r"[^\W\d_]{2,}")  # a word, in any script (a head "3-1" has none)


def glued_words(glue_dir: Path) -> list[str]:
    """Every glued string in `glue_dir`'s glue files that holds a word and is not a name."""
    found = []
    for path in sorted(glue_dir.glob("*.glue.json")):
        stem = path.name.removesuffix(".glue.json")
        for key, output in json.loads(path.read_text()).items():
            text = output["data"].get("text/plain", "")
            is_string = text.startswith(("'", '"'))
            if is_string and _LETTERS.search(text) and f"{stem}::{key}" not in GLUED_NAMES:
                found.append(f"{stem}::{key} = {text}")
    return found


def test_the_glue_check_finds_words(tmp_path):
    """The check itself, on a hand-made glue file: a phrase fails, numbers and names pass."""

    def output(text: str) -> dict:
        return {"output_type": "display_data", "data": {"text/plain": text}}

    glue = {"ratio": "2.5", "head": "'3-1'", "verdict": "'4.3 times slower'"}
    glue["base_model"] = "'nreimers/MiniLM-L6-H384-uncased'"  # a listed name
    path = tmp_path / "05_inside_bert.glue.json"
    path.write_text(json.dumps({k: output(v) for k, v in glue.items()}))
    assert glued_words(tmp_path) == ["05_inside_bert::verdict = '4.3 times slower'"]


@pytest.mark.book
def test_glued_values_are_numbers_and_names(built_book):
    words = glued_words(built_book.parent / "jupyter_execute" / "notebooks")
    assert not words, (
        "glued strings with words (write the sentence in the page and glue its numbers, "
        "or list a name in GLUED_NAMES):\n" + "\n".join(words)
    )


@pytest.mark.book
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_chapter_shows_the_reader_what_it_computed(built_book, path):
    """The page as a reader sees it: every glued number of the prose rendered with its format,
    one image per figure cell, tables, and no traceback, object repr or failed check."""
    import html

    page = (built_book / "notebooks" / f"{path.stem}.html").read_text()
    assert "Traceback" not in page, f"{path.name}: a traceback is rendered on the page"
    assert "{glue:" not in page, f"{path.name}: a glue role was not resolved (check its backticks)"
    cells = json.loads(path.read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    prose = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert page.count("cell_output") >= 1 or not code, f"{path.name}: no executed output"
    figure_cells = sum(bool(re.search(r"^\s*show\(", c, re.M)) for c in code)
    images = page.count('src="data:image/png;base64,')
    assert images >= figure_cells, f"{path.name}: {figure_cells} figure cells, {images} images"
    tables = sum("html_table(" in c or "checks_table(" in c for c in code)
    assert page.count('class="mha-table"') >= min(tables, 1), f"{path.name}: no table rendered"
    assert not _REPR.search(page), f"{path.name}: {_REPR.search(page).group(0)} on the page"
    assert ">NO<" not in page, f"{path.name}: a reproduction check shows NO"
    # Every number glued into this page's prose, as the reader reads it.
    values = _glued_values(built_book, path.stem)
    pasted = {html.unescape(re.sub(r"<[^>]+>", "", t)).strip() for t in _PASTED.findall(page)}
    missing = []
    for key, spec in _GLUE_ROLE.findall(prose):
        value = values.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue  # words are the translation tests' business
        shown = format(value, spec) if spec else str(value)
        if shown not in pasted and shown.replace("-", "−") not in pasted:
            missing.append(f"{key} = {shown}")
    assert not missing, f"{path.name}: glued numbers not on the page: {missing[:5]}"


def test_page_numbers_follow_the_file_names():
    sys.path.insert(0, str(REPO / "book" / "_ext"))
    from chapter_numbers import page_number

    assert page_number("notebooks/04_high_dimensional") == "4"
    assert page_number("notebooks/04c_one_head_or_several") == "4.3"
    assert page_number("notebooks/07b_initialisation_and_dead_heads") == "7.2"
    assert page_number("book/lab") is None and page_number("book/claims") is None


@pytest.mark.book
@pytest.mark.parametrize("edition", ["", "zh"])
def test_sidebar_numbers_chapters_and_parts_as_the_text_does(built_book, edition):
    """Every chapter and part is listed with its number ("4.3" for part 3 of chapter 4), in
    both editions, and its page's heading carries the same; the lab and the ledger none."""
    page = (built_book / edition / "notebooks" / "04c_one_head_or_several.html").read_text()
    entries = dict(
        re.findall(r'<a class="(?:current )?reference internal" href="([^"#]*)">([^<]*)</a>', page)
    )
    for path in NOTEBOOKS:
        stem = path.stem
        href = "#" if stem == "04c_one_head_or_several" else f"{stem}.html"
        number = f"{int(stem[:2])}" + (f".{ord(stem[2]) - ord('a') + 1}" if stem[2] != "_" else "")
        if href != "#":
            assert entries[href].startswith(f"{number} "), (edition, stem, entries[href])
    assert not re.match(r"\d", entries["../book/lab.html"])
    assert re.search(r"<h1>4\.3 ", page), "the page's heading lacks its number"


def _shown_formats(prose: str) -> dict[str, set[str]]:
    """Each glue key of a page's prose and the formats it is shown with."""
    formats: dict[str, set[str]] = {}
    for key, spec in _GLUE_ROLE.findall(prose):
        formats.setdefault(key, set()).add(spec)
    return formats


@pytest.mark.book
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_quantity_shows_one_value_per_page(built_book, path):
    """A glued number appears on its page with one value: the same key shown with two formats
    that round it differently (0.291 here, 0.29 there) reads as two measurements."""
    values = _glued_values(built_book, path.stem)
    cells = json.loads(path.read_text())["cells"]
    prose = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    clashes = []
    for key, specs in _shown_formats(prose).items():
        value = values.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or len(specs) < 2:
            continue
        shown = {format(value, s) if s else str(value) for s in specs}
        if len(shown) > 1:
            clashes.append(f"{key}: {sorted(shown)}")
    assert not clashes, f"{path.name}: one quantity, several values: {clashes}"


def _page_text(path: Path) -> str:
    import html

    body = re.sub(r"<(script|style)\b.*?</\1>", "", path.read_text(), flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", body))


@pytest.mark.book
@pytest.mark.parametrize("edition", ["", "zh"])
def test_the_article_is_quoted_in_its_own_characters(built_book, edition):
    """Every 「…」 of the ledger's source is on the built ledger as written: smart quotes must
    not curl the article's straight quotes (they made 给点积结果"降温" read ”降温”)."""
    quotes = re.findall(r"「[^」]*」", (REPO / "book" / "claims.md").read_text())
    assert len(quotes) >= 10
    text = _page_text(built_book / edition / "book" / "claims.html")
    changed = [q for q in quotes if q not in text]
    assert not changed, f"quotes not as the article writes them: {changed[:3]}"


@pytest.mark.book
def test_the_chinese_edition_speaks_chinese_around_the_pages(built_book):
    """The switcher is on the search page and the index too; the fold-out hints and the
    article's bibliography entry are Chinese, its title as written."""
    for page in ("search.html", "genindex.html"):
        for edition, target in (("", "zh/" + page), ("zh", "../" + page)):
            html = (built_book / edition / page).read_text()
            assert f'href="{target}"' in html and "mha-language-switch" in html, (edition, page)
    chapter = (built_book / "zh" / "notebooks" / "01_qkv_lookup.html").read_text()
    assert "toggleHintShow = '点击展开'" in chapter
    references = _page_text(built_book / "zh" / "book" / "references.html")
    assert "Multi-Head Attention 为什么有效？" in references and "中文文章" in references
    english = _page_text(built_book / "book" / "references.html")
    assert "Multi-Head Attention 为什么有效？" in english, "the bibliography style lowercased it"
