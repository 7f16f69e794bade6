"""How many word pieces the live lab reads (`mha_lib.bert.lab.max_tokens`)."""

from __future__ import annotations

import json
import re

import pytest

from mha_lib.bert import default_model_path
from mha_lib.bert.lab import max_tokens


def _folder(tmp_path, positions: int, settings: object = None):
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": positions}))
    if settings is not None:
        (tmp_path / "sentence_bert_config.json").write_text(json.dumps(settings))
    return tmp_path


def test_the_packaged_model_reads_what_its_model_card_says():
    # The model card's own sentence, an independent statement of sentence-transformers' cut.
    card = (default_model_path() / "README.md").read_text()
    said = re.search(r"input text longer than (\d+) word pieces is truncated", card)
    assert said is not None
    assert max_tokens() == int(said.group(1))
    config = json.loads((default_model_path() / "config.json").read_text())
    assert max_tokens() < config["max_position_embeddings"]


def test_sentence_transformers_length_is_used_and_never_beyond_the_positions(tmp_path):
    assert max_tokens(_folder(tmp_path, 512, {"max_seq_length": 128})) == 128
    assert max_tokens(_folder(tmp_path, 64, {"max_seq_length": 128})) == 64


def test_without_sentence_transformers_settings_the_positions(tmp_path):
    assert max_tokens(_folder(tmp_path, 512)) == 512


@pytest.mark.parametrize("bad", [None, "256", 1, True, 2.5])
def test_a_bad_length_is_refused(tmp_path, bad):
    with pytest.raises(ValueError, match="max_seq_length"):
        max_tokens(_folder(tmp_path, 512, {"max_seq_length": bad}))
