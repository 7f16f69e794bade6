"""The Chinese edition's message catalogues: update them from the English text, and check them.

    python scripts/catalogues.py update   # after the English text changed (make catalogues)
    python scripts/catalogues.py check    # what CI checks (tests/book/test_translation.py)

`update` extracts every message of the book with Sphinx's gettext builder (the prose of each
page and notebook, plus the figure alt texts and table labels that
book/_ext/i18n/translated_outputs.py adds) and merges it into
`locales/zh_CN/LC_MESSAGES/<page>.po` with sphinx-intl: new messages arrive empty, changed ones
fuzzy, and the translator's work is kept. `check` fails on any message that is empty or fuzzy,
on one left in English (unless a translator's comment says `keep`), and on any translation that
changed what must survive translation unchanged: maths, roles (glue, citations,
cross-references), inline code, link targets, HTML tags and numbered placeholders.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOCALES = REPO / "locales"
LANGUAGE = "zh_CN"
CATALOGUES = LOCALES / LANGUAGE / "LC_MESSAGES"

# What a translation must carry over exactly, each as (name, pattern). Order matters: maths and
# code are taken out of the text first, so that a `$` or a brace inside them is not read twice.
_MATH = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$", re.S)
_CODE = re.compile(r"(?<![`}])`[^`]+`")
_ROLE = re.compile(r"\{([a-z][a-z:-]*)\}`([^`]*)`")
_LINK_TARGET = re.compile(r"\]\(([^)\s]+)\)")
_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_PLACEHOLDER = re.compile(r"\{[a-z0-9_]+\}")  # {0} in alt texts, {heads} in the lab
_CJK = re.compile(r"[\u3400-\u9fff]")
# A message with an English word left once the protected parts are out needs Chinese.
_ENGLISH_WORD = re.compile(r"[A-Za-z]{3,}")
# A translator's comment that says an English message stays English (labels such as "nsubj").
KEEP = "keep"
# Titled cross-references: the title is translated, the target is not.
_TITLED = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.S)
_TITLED_ROLES = {"doc", "ref", "numref", "term"}


@dataclass(frozen=True)
class Problem:
    """One message that would not build the Chinese page as the English one."""

    catalogue: str
    msgid: str
    what: str

    def __str__(self) -> str:
        short = self.msgid if len(self.msgid) < 90 else self.msgid[:87] + "..."
        return f"{self.catalogue}: {self.what}: {short!r}"


def protected(text: str) -> Counter[str]:
    """Everything in a message that its translation must carry over unchanged, counted."""
    found: Counter[str] = Counter()
    rest = text
    for pattern, name in ((_MATH, "math"),):
        found.update(f"{name} {m}" for m in pattern.findall(rest))
        rest = pattern.sub(" ", rest)
    for role, body in _ROLE.findall(rest):
        titled = _TITLED.match(body)
        if role in _TITLED_ROLES and titled:
            body = "<" + titled.group(2) + ">"
        found[f"role {{{role}}}`{body}`"] += 1
    rest = _ROLE.sub(" ", rest)
    found.update(f"code {m}" for m in _CODE.findall(rest))
    rest = _CODE.sub(" ", rest)
    found.update(f"link target {m}" for m in _LINK_TARGET.findall(rest))
    found.update(f"html {m}" for m in _TAG.findall(rest))
    found.update(f"placeholder {m}" for m in _PLACEHOLDER.findall(rest))
    return found


def _prose(text: str) -> str:
    """The words of a message once maths, roles, code, tags and link targets are out."""
    for pattern in (_MATH, _ROLE, _CODE, _LINK_TARGET, _TAG):
        text = pattern.sub(" ", text)
    return text


def problems_in(path: Path) -> list[Problem]:
    """Every problem of one catalogue (an empty list when it is complete and consistent)."""
    import polib

    name = str(path.relative_to(CATALOGUES)) if path.is_relative_to(CATALOGUES) else path.name
    found: list[Problem] = []
    for entry in polib.pofile(str(path)):
        if entry.obsolete:
            continue
        if "fuzzy" in entry.flags:
            found.append(Problem(name, entry.msgid, "fuzzy (the English changed: check it)"))
            continue
        if not entry.msgstr.strip():
            found.append(Problem(name, entry.msgid, "untranslated"))
            continue
        want, got = protected(entry.msgid), protected(entry.msgstr)
        if want != got:
            lost = ", ".join(sorted((want - got).elements()))
            added = ", ".join(sorted((got - want).elements()))
            found.append(
                Problem(name, entry.msgid, f"changed a protected part (lost: {lost or '-'}; "
                        f"added: {added or '-'})")
            )
        english = _ENGLISH_WORD.search(_prose(entry.msgid)) and not _CJK.search(entry.msgstr)
        if english and KEEP not in entry.tcomment.split():
            found.append(Problem(name, entry.msgid, "left in English"))
    return found


def catalogue_files() -> list[Path]:
    """The Chinese catalogues, one per page of the book."""
    return sorted(CATALOGUES.rglob("*.po"))


def check(files: list[Path] | None = None) -> int:
    """Print every problem of the catalogues (all by default); exit status 1 when there is any."""
    files = files or catalogue_files()
    if not files:
        print(f"no catalogues under {CATALOGUES}", file=sys.stderr)
        return 1
    found = [p for path in files for p in problems_in(path)]
    for problem in found:
        print(problem)
    print(f"{len(files)} catalogues, {len(found)} problems")
    return 1 if found else 0


def update(build: Path = REPO / "_build" / "gettext") -> int:
    """Extract the book's messages into .pot files and merge them into the catalogues."""
    sys.path.insert(0, str(REPO / "scripts"))
    from build_book import gettext_build  # noqa: PLC0415 (a sibling script)

    pot = gettext_build(build)
    status = subprocess.call(
        [str(Path(sys.executable).parent / "sphinx-intl"), "update", "-p", str(pot),
         "-l", LANGUAGE, "-d", str(LOCALES), "-w", "0"]
    )
    if status == 0:
        _drop_obsolete()
    return status


def _drop_obsolete() -> None:
    """Forget the messages the English text no longer has (sphinx-intl keeps them as #~)."""
    import polib

    for path in catalogue_files():
        catalogue = polib.pofile(str(path), wrapwidth=0)
        obsolete = catalogue.obsolete_entries()
        if obsolete:
            for entry in obsolete:
                catalogue.remove(entry)
            catalogue.save(str(path))


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "check":
        sys.exit(check([Path(f).resolve() for f in sys.argv[2:]]))
    if command == "update":
        sys.exit(update())
    sys.exit(__doc__)
