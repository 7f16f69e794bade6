"""Node for the tests of the lab's JavaScript: found, or the test skipped (failed under CI)."""

from __future__ import annotations

import os
import shutil

import pytest


def node_executable() -> str:
    """The `node` on PATH; without one a test is skipped, but fails when `CI=true`."""
    node = shutil.which("node")
    if node is None:
        message = "node is not installed (apt-get install npm brings it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return node
