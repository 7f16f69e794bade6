"""The lab's JavaScript WordPiece (lab/wordpiece.js), run under node, against the Python tokenizer.

The page tokenizes by itself, so its tokens must be the model's own: the book's sentences and
text made to trip a tokenizer (accents, punctuation, numbers, unknown words, Chinese,
control and zero-width characters, Greek capitals, long words, text past the model's 512
positions). Marked `book`: it needs node, which the book's CI job installs with npm.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from node_js import node_executable

pytestmark = pytest.mark.book

REPO = Path(__file__).resolve().parents[2]
RUNNER = """
import { readFileSync } from "node:fs";
const { WordPiece } = await import(process.argv[1]);
const tok = new WordPiece(readFileSync(process.argv[2], "utf8"));
const texts = JSON.parse(readFileSync(0, "utf8"));
console.log(JSON.stringify(texts.map((t) => tok.encode(t, Number(process.argv[3])))));
"""

TRICKY = [
    "Café déjà vu — naïve résumé, São Paulo, Dvořák, Ærøskøbing!",
    "3.14159, 1,000,000 and 42 % (or 0.5e-3); 2026-12-01 at 13:45.",
    "zqxjvtk florbnaxious unbelievablenessly antidisestablishmentarianism",
    "注意力机制是什么？多头注意力为什么有效。",
    "日本語とEnglishが混ざった文、한국어도.",
    "tabs\tand\nnewlines\r\nand\u00a0non-breaking\u2003spaces, zero\u200bwidth, soft\u00adhyphen",
    "control \x07 bell \x00 nul \ufffd replacement",
    "ΣΊΣΥΦΟΣ ΟΔΟΣ — İstanbul STRASSE straße ﬁne Ⅻ ①",
    "$^`~|\\@#&*_+=<>[]{}",
    "don't won't y'all e.g. U.S.A. Mr. Smith's",
    "emoji 🙂 and family 👩‍👩‍👧 and flags 🇫🇷",
    "a" * 150 + " short " + "b" * 99,
    " ".join(["attention"] * 700),
    "word " * 130,
]


def node_tokens(texts: list[str], vocab: Path, max_length: int, *, prelude: str = "") -> list[dict]:
    node = node_executable()
    done = subprocess.run(
        [
            node,
            "--input-type=module",
            "-e",
            prelude + RUNNER,
            "--",
            (REPO / "lab" / "wordpiece.js").as_uri(),
            str(vocab),
            str(max_length),
        ],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(done.stdout)


def test_wordpiece_matches_the_python_tokenizer() -> None:
    from mha_lib import bert
    from mha_lib.data.sentences import NATURAL_SENTENCES

    model, tokenizer = bert.load()
    limit = model.config.max_position_embeddings
    texts = [*NATURAL_SENTENCES, "The cat sat on the mat because it was tired.", *TRICKY]
    assert any(len(t) > 600 for t in texts)
    got = node_tokens(texts, bert.default_model_path() / "vocab.txt", limit)
    mismatches = []
    for text, page in zip(texts, got, strict=True):
        enc = tokenizer(text, truncation=True, max_length=limit)
        want = tokenizer.convert_ids_to_tokens(enc["input_ids"])
        if page["tokens"] != want or page["ids"] != enc["input_ids"]:
            mismatches.append(
                f"{text[:50]!r}:\n  page   {page['tokens'][:16]}\n  python {want[:16]}"
            )
        full = len(tokenizer(text)["input_ids"])
        assert page["truncated"] == max(0, full - limit), text[:50]
    assert not mismatches, "\n".join(mismatches)


def test_the_comparison_can_fail() -> None:
    """The same comparison catches a tokenizer that no longer strips accents (NFD disabled)."""
    from mha_lib import bert

    _, tokenizer = bert.load()
    vocab = bert.default_model_path() / "vocab.txt"
    want = tokenizer.convert_ids_to_tokens(tokenizer("déjà vu")["input_ids"])
    assert node_tokens(["déjà vu"], vocab, 512)[0]["tokens"] == want
    broken = "String.prototype.normalize = function () { return String(this); };\n"
    assert node_tokens(["déjà vu"], vocab, 512, prelude=broken)[0]["tokens"] != want
