"""mha_lib.analysis.sentence_eval: the labels say who did what to whom; loss and metric by hand.

Labels are checked by parsing the generated sentences back with regular
expressions written here, independently of the templates' code; losses and
similarities against explicit loops over torch's cosine similarity.
"""

import re

import pytest
import torch
import torch.nn.functional as F

from mha_lib.analysis import sentence_eval as se

PAST = {past: i for i, (past, _) in enumerate(se.VERBS)}
PARTICIPLE = {pp: i for i, (_, pp) in enumerate(se.VERBS)}
N = r"(\w+)"
ACTIVE_PATTERNS = [
    re.compile(rf"^(?:yesterday |in the story, )?the {N} {N} the {N}(?: this morning)?\.$"),
]
PARAPHRASE_PATTERNS = [  # (pattern, which group is the agent, verb, patient, verb table)
    (re.compile(rf"^it was the {N} who {N} the {N}\.$"), (1, 2, 3), PAST),
    (re.compile(rf"^the {N} was the one who {N} the {N}\.$"), (1, 2, 3), PAST),
    (re.compile(rf"^the {N} (?:was|got) {N} by the {N}\.$"), (3, 2, 1), PARTICIPLE),
]


def parse_active(text):
    m = ACTIVE_PATTERNS[0].match(text)
    assert m, f"unexpected anchor {text!r}"
    return m.group(1), PAST[m.group(2)], m.group(3)


def parse_paraphrase(text):
    for pattern, (a, v, p), verbs in PARAPHRASE_PATTERNS:
        m = pattern.match(text)
        if m:
            return m.group(a), verbs[m.group(v)], m.group(p)
    raise AssertionError(f"unexpected paraphrase {text!r}")


def test_labels_describe_the_same_event_and_groups_hold_the_swaps():
    data = se.make_retrieval_set(12, seed=3)
    assert len(data.anchors) == len(data.candidates) == 12 * se.GROUP_SIZE == 96
    for anchor, candidate, event in zip(data.anchors, data.candidates, data.events, strict=True):
        who = (event.agent, event.verb, event.patient)
        assert parse_active(anchor) == who
        assert parse_paraphrase(candidate) == who
    for g in range(data.num_groups):
        events = data.events[g * 8 : (g + 1) * 8]
        triples = {(e.agent, e.verb, e.patient) for e in events}
        assert len(triples) == 8
        for a, v, p in triples:
            assert (p, v, a) in triples  # the role swap: same words, roles reversed
        assert len({e.verb for e in events}) == 2
        assert len({e.agent for e in events} | {e.patient for e in events}) == 4


def test_examples_by_hand():
    assert parse_paraphrase("the pilot was praised by the chef.") == ("chef", 1, "pilot")
    assert parse_paraphrase("it was the chef who praised the pilot.") == ("chef", 1, "pilot")
    assert parse_active("yesterday the dog bit the cat.") == ("dog", PAST["bit"], "cat")
    assert se.CHANCE == 1 / 8 and se.BAG_OF_WORDS_CEILING == 0.5


def test_seeded_and_templates_used():
    a, b = se.make_retrieval_set(8, seed=0), se.make_retrieval_set(8, seed=0)
    assert a == b
    assert se.make_retrieval_set(8, seed=1).anchors != a.anchors
    big = se.make_retrieval_set(40, seed=0)
    used = {parse_paraphrase(c) and PARAPHRASE_PATTERNS.index(next(
        p for p in PARAPHRASE_PATTERNS if p[0].match(c))) for c in big.candidates}  # fmt: skip
    assert used == {0, 1, 2}
    with pytest.raises(ValueError, match="num_groups"):
        se.make_retrieval_set(0)


@pytest.fixture(scope="module")
def tiny():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=20, max_position_embeddings=64, attn_implementation="eager",
    )  # fmt: skip
    return BertModel(config).eval()


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from mha_lib import bert

    return AutoTokenizer.from_pretrained(bert.default_model_path())


def test_mean_pool_ignores_padding(tiny, tokenizer):
    texts = ["the chef praised the pilot.", "in the story, the dog bit the cat this morning."]
    enc = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        batched = se.embed(tiny, enc["input_ids"], enc["attention_mask"])
        for i, text in enumerate(texts):
            alone = tokenizer([text], return_tensors="pt")
            hidden = tiny(**alone).last_hidden_state[0]  # (T, D)
            torch.testing.assert_close(batched[i], hidden.mean(0), rtol=1e-5, atol=1e-5)


def test_loss_accuracy_and_fidelity_by_hand(tiny, tokenizer):
    data = se.make_retrieval_set(3, seed=2)
    batches = se.make_batches(tokenizer, data, groups_per_batch=2)
    assert [len(b) for b in batches] == [16, 8]
    correct = total = 0
    for batch in batches:
        with torch.no_grad():
            a = se.embed(tiny, batch.anchor_ids, batch.anchor_mask)
            c = se.embed(tiny, batch.candidate_ids, batch.candidate_mask)
            loss = se.retrieval_loss(tiny, batch)
            per_anchor = se.retrieval_loss(tiny, batch, reduction="none")
        logits = torch.zeros(len(batch), 8)
        for i in range(len(batch)):
            g = i // 8
            for j in range(8):
                logits[i, j] = F.cosine_similarity(a[i], c[g * 8 + j], dim=0) / se.TEMPERATURE
        targets = torch.arange(len(batch)) % 8
        torch.testing.assert_close(loss, F.cross_entropy(logits, targets), rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(per_anchor.mean(), loss)
        correct += int((logits.argmax(-1) == targets).sum())
        total += len(batch)
    assert se.retrieval_accuracy(tiny, batches) == pytest.approx(correct / total)
    reference = se.anchor_embeddings(tiny, batches)
    assert se.embedding_fidelity(tiny, batches, reference) == pytest.approx(1.0, abs=1e-5)
    assert se.embedding_fidelity(tiny, batches, -reference) == pytest.approx(-1.0, abs=1e-5)
    with pytest.raises(ValueError, match="reference must have shape"):
        se.embedding_fidelity(tiny, batches, reference[:3])
    with pytest.raises(ValueError, match="multiple of 8"):
        se.group_similarities(torch.ones(5, 4), torch.ones(5, 4))
