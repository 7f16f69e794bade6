"""The committed layer diagram is what its script draws, in both themes, and says what it must."""

import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

REPO = Path(__file__).resolve().parents[2]
FIGURES = REPO / "book" / "figures"


def test_committed_svgs_are_the_scripts_output(tmp_path):
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "draw_mha_diagram.py"), "--out", str(tmp_path)],
        check=True,
    )
    for theme in (
        "light", "dark", "light.zh_CN", "dark.zh_CN",
        "light_narrow", "dark_narrow", "light_narrow.zh_CN", "dark_narrow.zh_CN",
    ):  # fmt: skip
        drawn = (tmp_path / f"mha_layer_{theme}.svg").read_text()
        committed = (FIGURES / f"mha_layer_{theme}.svg").read_text()
        assert drawn == committed, f"rerun scripts/draw_mha_diagram.py ({theme} differs)"


@pytest.mark.parametrize("variant", ["", "_narrow"])
def test_the_diagram_names_every_stage_and_the_themes_differ(variant):
    texts = {}
    for theme in ("light", "dark"):
        root = ElementTree.parse(FIGURES / f"mha_layer_{theme}{variant}.svg").getroot()
        texts[theme] = " ".join(
            "".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")
        )
    for stage in (
        "input",
        "Q = X W",
        "K = X W",
        "V = X W",
        "head 1",
        "head h",
        "softmax",
        "concat",
        "output",
        "all T tokens",
    ):
        assert stage in texts["light"], f"the diagram lost {stage!r}"
    assert texts["light"] == texts["dark"]
    light = (FIGURES / f"mha_layer_light{variant}.svg").read_text()
    dark = (FIGURES / f"mha_layer_dark{variant}.svg").read_text()
    assert light != dark and "#e6edf3" in dark and "#1f2328" in light  # text colours per theme


@pytest.mark.parametrize("variant", ["", "_narrow"])
def test_the_chinese_diagram_has_the_same_shapes_and_no_english_words(variant):
    """Sphinx shows mha_layer_<theme>.zh_CN.svg in the Chinese build (figure_language_filename)."""
    import re

    for theme in ("light", "dark"):
        english = ElementTree.parse(FIGURES / f"mha_layer_{theme}{variant}.svg").getroot()
        chinese = ElementTree.parse(FIGURES / f"mha_layer_{theme}{variant}.zh_CN.svg").getroot()
        shapes = ("rect", "line", "path")
        for shape in shapes:
            tag = "{http://www.w3.org/2000/svg}" + shape
            assert [e.attrib for e in english.iter(tag)] == [e.attrib for e in chinese.iter(tag)]
        words = " ".join("".join(t.itertext()) for t in chinese.iter(
            "{http://www.w3.org/2000/svg}text"))
        for stage in ("输入", "头 1", "头 h", "softmax", "拼接", "混合", "输出", "全部 T 个词元"):
            assert stage in words, f"the Chinese diagram lost {stage!r}"
        # Left in English: only the formulas' names (softmax) and symbols.
        assert set(re.findall(r"[A-Za-z]{3,}", words)) <= {"softmax", "dhead", "dmodel"}  # d_{head}
        assert "WenQuanYi Zen Hei" in chinese.get("font-family")
        assert "italic" not in ElementTree.tostring(chinese, encoding="unicode")  # no CJK italics


def test_the_narrow_diagram_fits_a_phone():
    """Drawn for a phone's column (358 px at 390): its text at 12 px or more there."""
    for name in ("light_narrow", "light_narrow.zh_CN"):
        root = ElementTree.parse(FIGURES / f"mha_layer_{name}.svg").getroot()
        width = float(root.get("width"))
        assert width <= 360
        sizes = [
            float(t.get("font-size"))
            for t in root.iter("{http://www.w3.org/2000/svg}text")
        ]
        assert min(sizes) * 358 / width >= 12
