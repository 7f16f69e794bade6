"""Write each inline script once per page.

sphinx-thebe 0.3.1 and sphinx-togglebutton register inline scripts that reach the page
twice under Sphinx 7.4 (once with filename None, once with ""); the repeated
`const THEBE_JS_URL` is a SyntaxError in every reader's console.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx


def _dedupe(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    seen: set[tuple[str, str]] = set()
    unique = []
    for script in context.get("script_files", []):
        attributes = getattr(script, "attributes", {})
        key = (str(getattr(script, "filename", script) or ""), str(attributes.get("body", "")))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    # In place: later handlers (e.g. MathJax's) add to this very list.
    context["script_files"][:] = unique


def setup(app: Sphinx) -> dict[str, bool]:
    # Early: html-page-context stops at the first handler that returns a template name.
    app.connect("html-page-context", _dedupe, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
