"""What a layer's states hold: linear probes, layer by layer, and the word-sense probe that
pruning is measured on.

The article says a transformer's lower layers deal with syntax and its upper layers with
meaning. Attention maps cannot test that (a head that points at a word says nothing about what
the layer's output encodes), so chapter 5 part 5 reads the hidden states themselves, as
Tenney et al. (2019) did for BERT: a linear probe per layer (layer 0 = the embeddings) for a
word's part of speech, its dependency label and, on chapter 6's items, a homonym's sense.

A probe's accuracy alone mixes what the states encode with what the probe memorises, so two
safeguards sit beside it. Items are held out by sentence (no word occurrence is scored by a
probe that saw its sentence). And a *control task* (Hewitt & Liang, 2019) gives every word
type a random label drawn from the real labels' frequencies: a probe that scores well there
memorises word identity, so the *selectivity* (real minus control accuracy) is what the layer
adds beyond it.

Chapter 6 prunes heads of the pretrained MiniLM and needs a score that pruning can move: the
full model must pass it well above what word identity allows, and a model without attention
must fail it. Sentence-level tests do not have that property for a sentence encoder: a bag of
its input embeddings already sorts sentences by topic, and with every head masked the model
still does (the chapter measures both). So the model is read at one token instead: a linear
probe trained on the full model reads the **target word's last hidden state** on the items of
`mha_lib.data.senses` and picks one of the word's two domains (`sense_probe`). Without
attention a token's state depends on the token alone, so with every head masked the target's
state is the same in both senses: the test's floor is chance by construction. Models that see
words only (`lexical_baselines`, `bag_baseline`) sit at chance or near it.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from mha_lib._checks import check_positive_int
from mha_lib.data.senses import DOMAIN_NAMES, SenseItem

ALPHA = 10.0  # the ridge probes' penalty (on standardised features)
KINDS = ("ridge", "logistic")

def word_states(
    model: nn.Module, tokenizer: object, word_lists: Sequence[Sequence[str]], batch_size: int = 32
) -> list[torch.Tensor]:
    """Per sentence, `(L + 1, W, D)`: every layer's hidden state of each word (the mean of
    its word pieces; layer 0 is the embedding output), so labels of words meet states of words."""
    check_positive_int("batch_size", batch_size)
    if not word_lists:
        raise ValueError("word_lists must be non-empty")
    device = next(model.parameters()).device
    out = []
    for start in range(0, len(word_lists), batch_size):
        chunk = [list(w) for w in word_lists[start : start + batch_size]]
        enc = tokenizer(chunk, is_split_into_words=True, padding=True, return_tensors="pt")
        with torch.inference_mode():
            hidden = model(
                input_ids=enc["input_ids"].to(device),
                attention_mask=enc["attention_mask"].to(device),
                output_hidden_states=True,
            ).hidden_states
        stack = torch.stack(hidden, 1).float().cpu()  # (B, L + 1, T, D)
        for row, words in enumerate(chunk):
            ids = enc.word_ids(row)
            keep = [t for t, w in enumerate(ids) if w is not None]
            index = torch.tensor([ids[t] for t in keep], device="cpu")
            sums = torch.zeros(stack.shape[1], len(words), stack.shape[3], device="cpu")
            sums.index_add_(1, index, stack[row][:, keep])
            counts = torch.bincount(index, minlength=len(words)).clamp(min=1)
            out.append(sums / counts[None, :, None])
    return out


def control_labels(
    words: Sequence[str], labels: Sequence[str], seed: int = 0
) -> list[str]:
    """Hewitt & Liang's control task: each word *type* (lower-cased) gets one label, drawn
    at random from the real labels' frequencies, and every occurrence of it carries that label.

    The control labels can be learnt only by remembering word identities.
    """
    if len(words) != len(labels) or not words:
        raise ValueError("words and labels must be non-empty and equally long")
    counts = Counter(labels)
    names = sorted(counts)
    weights = [counts[n] for n in names]
    rng = random.Random(seed)
    table: dict[str, str] = {}
    for w in sorted({w.lower() for w in words}):
        table[w] = rng.choices(names, weights)[0]
    return [table[w.lower()] for w in words]


def sentence_control_labels(
    word_lists: Sequence[Sequence[str]], labels: Sequence[Sequence[str]], seed: int = 0
) -> list[list[str]]:
    """`control_labels` for sentences: the same labels, in the same per-sentence layout
    as `labels` (one per word of each sentence of `word_lists`)."""
    if len(word_lists) != len(labels) or any(
        len(w) != len(lab) for w, lab in zip(word_lists, labels, strict=True)
    ):
        raise ValueError("word_lists and labels must give one label per word of each sentence")
    flat = control_labels([w for ws in word_lists for w in ws],
                          [v for lab in labels for v in lab], seed)  # fmt: skip
    out, start = [], 0
    for lab in labels:
        out.append(flat[start : start + len(lab)])
        start += len(lab)
    return out


def fit_probe(
    train_x: torch.Tensor,
    train_y: Sequence[object],
    *,
    kind: str = "ridge",
    alpha: float = ALPHA,
    C: float = 1.0,
) -> object:
    """A linear probe fitted on `train_x` `(N, D)` with one label per row, as a scikit-learn
    classifier: its `predict` takes float64 NumPy rows and returns label strings.

    `"ridge"`: `RidgeClassifier` (one output per label, penalty `alpha`) on standardised
    features, the layer probes. `"logistic"`: a multinomial `LogisticRegression` (penalty
    1/`C`, deterministic) on the features as they are, the sense probe (`sense_probe`).
    One label only: a constant probe.
    """
    from sklearn.dummy import DummyClassifier
    from sklearn.linear_model import LogisticRegression, RidgeClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if train_x.dim() != 2 or train_x.shape[0] != len(train_y) or len(train_y) == 0:
        raise ValueError("train_x must be (N, D) with one label per row, N > 0")
    if alpha <= 0 or C <= 0:
        raise ValueError(f"alpha and C must be positive, got {alpha!r} and {C!r}")
    y = np.array([str(v) for v in train_y])
    if len(set(y)) < 2:
        probe = DummyClassifier(strategy="constant", constant=y[0])
    elif kind == "ridge":
        probe = make_pipeline(StandardScaler(), RidgeClassifier(alpha=alpha))
    else:
        probe = LogisticRegression(C=C, max_iter=5000)
    return probe.fit(train_x.double().numpy(), y)


def probe_hits(
    train_x: torch.Tensor,
    train_y: Sequence[object],
    test_x: torch.Tensor,
    test_y: Sequence[object],
    *,
    alpha: float = ALPHA,
    probe: object | None = None,
) -> torch.Tensor:
    """`(N_test,)` bool: whether a linear probe fitted on `train_x` `(N, D)` names each
    test item's label; a test label never seen in training counts as a miss. With `probe`
    (from `fit_probe`, fitted elsewhere), that probe reads `test_x` and `train_x`
    is not used: a read-out kept *frozen* while the states change under it.

    The probe is a least-squares linear classifier (`fit_probe`). The book's other
    probes are logistic regressions; here seven layers times four label sets must fit in a
    page's budget, and the closed-form fit takes a fraction of a second where a logistic one
    takes about a minute (its layer profile for dependency labels was checked to be the same
    within a few points).
    """
    if probe is None:
        probe = fit_probe(train_x, train_y, alpha=alpha)
        width = train_x.shape[1]
    else:
        width = int(getattr(probe, "n_features_in_", test_x.shape[-1]))
    if test_x.dim() != 2 or test_x.shape[0] != len(test_y) or test_x.shape[1] != width:
        raise ValueError("test_x must be (M, D) with one label per row and the probe's D")
    predicted = probe.predict(test_x.double().numpy())  # type: ignore[attr-defined]
    truth = np.array([str(v) for v in test_y])
    return torch.as_tensor(predicted == truth, device="cpu")


def fit_by_layer(
    train_x: torch.Tensor, train_y: Sequence[object], *, alpha: float = ALPHA
) -> list[object]:
    """One probe per layer (`fit_probe`), fitted on `train_x` `(L + 1, N, D)`."""
    if train_x.dim() != 3:
        raise ValueError(f"train_x must be (L + 1, N, D), got {tuple(train_x.shape)}")
    return [fit_probe(train_x[k], train_y, alpha=alpha) for k in range(train_x.shape[0])]


def hits_by_layer(
    train_x: torch.Tensor,
    train_y: Sequence[object],
    test_x: torch.Tensor,
    test_y: Sequence[object],
    *,
    alpha: float = ALPHA,
    probes: Sequence[object] | None = None,
) -> torch.Tensor:
    """`(L + 1, N_test)` bool: `probe_hits` layer by layer on `(L + 1, N, D)`
    states; with `probes` (`fit_by_layer`, fitted elsewhere) those read `test_x`
    frozen and `train_x` is not used."""
    if train_x.dim() != 3 or test_x.dim() != 3 or train_x.shape[0] != test_x.shape[0]:
        raise ValueError("train_x and test_x must be (L + 1, N, D) with the same layers")
    if probes is not None and len(probes) != test_x.shape[0]:
        raise ValueError("probes must give one probe per layer")
    return torch.stack([
        probe_hits(train_x[k], train_y, test_x[k], test_y, alpha=alpha,
                   probe=None if probes is None else probes[k])
        for k in range(test_x.shape[0])
    ])  # fmt: skip


def layer_hits(
    states: Sequence[torch.Tensor],
    labels: Sequence[Sequence[object]],
    train: Sequence[int],
    test: Sequence[int],
    *,
    alpha: float = ALPHA,
) -> torch.Tensor:
    """`(L + 1, N_test)` bool: per layer, the probe's hits on the test sentences' words.

    `states` are `word_states`' `(L + 1, W, D)` per sentence, `labels` one label
    per word; the probe of each layer is fitted on the `train` sentences only.
    """
    if len(states) != len(labels):
        raise ValueError("states and labels must give one entry per sentence")
    if not train or not test or set(train) & set(test):
        raise ValueError("train and test must be non-empty, disjoint sentence indices")
    for s, lab in zip(states, labels, strict=True):
        if s.shape[1] != len(lab):
            raise ValueError("each sentence needs one label per word")
    tr = torch.cat([states[i] for i in train], 1)  # (L + 1, N, D)
    te = torch.cat([states[i] for i in test], 1)
    ytr = [v for i in train for v in labels[i]]
    yte = [v for i in test for v in labels[i]]
    return hits_by_layer(tr, ytr, te, yte, alpha=alpha)


def sentence_ids(labels: Sequence[Sequence[object]], sentences: Sequence[int]) -> list[int]:
    """The sentence of each word of `sentences`, in `layer_hits`' order (for intervals
    that resample whole sentences)."""
    return [i for i in sentences for _ in labels[i]]


def expected_layer(accuracy: Sequence[float]) -> float:
    """Tenney et al.'s centre of gravity: the mean layer, weighted by each layer's gain over
    the layer below (`sum_l l·(a_l − a_{l−1}) / sum_l (a_l − a_{l−1})`, l ≥ 1). A task
    learnt early has a low value, one that keeps gaining up the stack a high one."""
    a = [float(v) for v in accuracy]
    if len(a) < 2:
        raise ValueError("accuracy needs two layers or more")
    gains = [a[k] - a[k - 1] for k in range(1, len(a))]
    total = sum(gains)
    if total == 0:
        raise ValueError("no gain over layer 0: the centre of gravity is undefined")
    return sum(k * g for k, g in zip(range(1, len(a)), gains, strict=True)) / total


@dataclass(frozen=True)
class SenseBatch:
    """Tokenised items: the position of each target's first word piece, its two domains."""

    input_ids: torch.Tensor  # (B, T)
    attention_mask: torch.Tensor  # (B, T)
    target_index: torch.Tensor  # (B,)
    candidates: torch.Tensor  # (B, 2): indices into DOMAIN_NAMES
    labels: torch.Tensor  # (B,): 0 or 1, which candidate is right

    def __len__(self) -> int:
        return self.input_ids.shape[0]


def make_batches(
    tokenizer: object, items: Sequence[SenseItem], batch_size: int = 64
) -> list[SenseBatch]:
    """Tokenise once; find each target word's first piece (the word appears once per item)."""
    check_positive_int("batch_size", batch_size)
    batches = []
    for start in range(0, len(items), batch_size):
        chunk = items[start : start + batch_size]
        enc = tokenizer([it.text for it in chunk], padding=True, return_tensors="pt")
        index = []
        for row, it in enumerate(chunk):
            first = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(it.target))[0]
            hits = (enc["input_ids"][row] == first).nonzero().flatten().tolist()
            if len(hits) != 1:
                raise ValueError(f"{it.target!r} must occur once in {it.text!r}")
            index.append(hits[0])
        batches.append(
            SenseBatch(
                enc["input_ids"],
                enc["attention_mask"],
                torch.tensor(index, device="cpu"),
                torch.tensor(
                    [[DOMAIN_NAMES.index(d) for d in it.domains] for it in chunk], device="cpu"
                ),
                torch.tensor([it.label for it in chunk], device="cpu"),
            )
        )
    return batches


def target_states(
    model: nn.Module, batch: SenseBatch, *, every_layer: bool = False
) -> torch.Tensor:
    """`(B, D)`: the last hidden state at each item's target word, on the model's device; with
    `every_layer`, `(L + 1, B, D)`: every layer's (layer 0 is the embedding output)."""
    device = next(model.parameters()).device
    out = model(
        input_ids=batch.input_ids.to(device),
        attention_mask=batch.attention_mask.to(device),
        output_hidden_states=every_layer,
    )
    rows = torch.arange(len(batch), device=device)
    at = batch.target_index.to(device)
    if every_layer:
        return torch.stack([h[rows, at] for h in out.hidden_states])  # (L + 1, B, D)
    return out.last_hidden_state[rows, at]  # (B, D)


def target_layer_states(model: nn.Module, batches: Sequence[SenseBatch]) -> torch.Tensor:
    """`(L + 1, N, D)` float32 on the CPU: every layer's state at each item's target word
    (`target_states` of every batch), for the sense probe of every layer."""
    parts = []
    for b in batches:
        with torch.inference_mode():
            parts.append(target_states(model, b, every_layer=True).float().cpu())
    return torch.cat(parts, 1)


def sense_probe(model: nn.Module, batches: Sequence[SenseBatch], *, C: float = 1.0) -> nn.Linear:
    """`fit_probe`'s logistic probe over the eight domains, fitted on the model's target
    states, returned as a frozen `nn.Linear` on its device: a loss through it has gradients
    for the heads (chapter 6's pruning). A domain without items gets a bias of −10⁴."""
    with torch.inference_mode():
        states = torch.cat([target_states(model, b) for b in batches]).float().cpu()
    labels = torch.cat([b.candidates.gather(1, b.labels[:, None])[:, 0] for b in batches])
    fitted = fit_probe(states, labels.tolist(), kind="logistic", C=C)
    if not hasattr(fitted, "coef_"):
        raise ValueError("the sense probe needs items of two domains or more")
    first = next(model.parameters())
    probe = nn.Linear(states.shape[1], len(DOMAIN_NAMES), device=first.device, dtype=first.dtype)
    coef = torch.zeros(len(DOMAIN_NAMES), states.shape[1], dtype=torch.float64, device="cpu")
    bias = torch.full((len(DOMAIN_NAMES),), -1e4, dtype=torch.float64, device="cpu")
    classes = torch.tensor([int(c) for c in fitted.classes_], device="cpu")
    coef[classes] = torch.as_tensor(fitted.coef_, dtype=torch.float64, device="cpu")
    bias[classes] = torch.as_tensor(fitted.intercept_, dtype=torch.float64, device="cpu")
    with torch.no_grad():
        probe.weight.copy_(coef)
        probe.bias.copy_(bias)
    return probe.requires_grad_(False)


def sense_logits(model: nn.Module, batch: SenseBatch, probe: nn.Linear) -> torch.Tensor:
    """`(B, 2)`: the probe's logits for each item's two candidate domains."""
    logits = probe(target_states(model, batch).to(probe.weight.dtype))  # (B, 8)
    return logits.gather(1, batch.candidates.to(logits.device))  # (B, 2)


def sense_loss(
    model: nn.Module, batch: SenseBatch, probe: nn.Linear, *, reduction: str = "mean"
) -> torch.Tensor:
    """Cross-entropy over the two senses: differentiable, one value per item with `"none"`."""
    if reduction not in ("mean", "none"):
        raise ValueError(f"reduction must be 'mean' or 'none', got {reduction!r}")
    logits = sense_logits(model, batch, probe)  # (B, 2)
    return F.cross_entropy(logits, batch.labels.to(logits.device), reduction=reduction)


def item_correct(model: nn.Module, batches: Sequence[SenseBatch], probe: nn.Linear) -> torch.Tensor:
    """`(N,)` bool on the CPU: which items the probe gets right (for `bootstrap_ci`)."""
    out = []
    with torch.inference_mode():
        for batch in batches:
            logits = sense_logits(model, batch, probe)
            out.append((logits.argmax(-1).cpu() == batch.labels).cpu())
    return torch.cat(out)


def sense_accuracy(model: nn.Module, batches: Sequence[SenseBatch], probe: nn.Linear) -> float:
    """Fraction of items whose right sense the probe picks."""
    return float(item_correct(model, batches, probe).float().mean())


def lexical_baselines(
    train: Sequence[SenseItem], test: Sequence[SenseItem]
) -> Mapping[str, float]:
    """Accuracy on `test` of models that see words only, each choosing between the item's two
    domains: logistic regression on word counts and on TF-IDF, and a vote of the training
    sentences (labelled with one of the two domains) that share the most context words with
    the item (the templates' own words and the homonym left out; a tied vote counts as wrong)."""
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    def label(it: SenseItem) -> int:
        return DOMAIN_NAMES.index(it.domains[it.label])

    y = [label(it) for it in train]
    out = {}
    for name, vectorizer in (("bag of words", CountVectorizer()), ("TF-IDF", TfidfVectorizer())):
        x = vectorizer.fit_transform([it.text for it in train])
        clf = LogisticRegression(max_iter=5000).fit(x, y)
        log_p = clf.predict_log_proba(vectorizer.transform([it.text for it in test]))
        column = {c: i for i, c in enumerate(clf.classes_)}
        hits = 0
        for row, it in zip(log_p, test, strict=True):
            scores = [row[column[DOMAIN_NAMES.index(d)]] for d in it.domains]
            hits += int(scores[1] > scores[0]) == it.label
        out[name] = hits / len(test)
    train_words = [set(it.context) for it in train]
    hits = 0
    for it in test:
        mine = set(it.context)
        candidates = {DOMAIN_NAMES.index(d) for d in it.domains}
        allowed = [j for j, t in enumerate(train) if label(t) in candidates]
        overlap = {j: len(mine & train_words[j]) for j in allowed}
        best = max(overlap.values())
        votes = [label(train[j]) for j in allowed if overlap[j] == best]
        right = DOMAIN_NAMES.index(it.domains[it.label])
        wrong = DOMAIN_NAMES.index(it.domains[1 - it.label])
        hits += votes.count(right) > votes.count(wrong)  # a tie counts as a miss
    out["word overlap"] = hits / len(test)
    return out


# What a reader of meaning without attention gets: the probe's kind of classifier on a bag of
# the model's own input embeddings. Bags are means of small vectors, so their classifier needs
# a weaker penalty than the probe on hidden states: C is chosen on the scoring items.
BAG_WORDS = ("sentence", "context")
BAG_C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)


def embedding_bags(
    model: nn.Module, tokenizer: object, items: Sequence[SenseItem], *, words: str = "sentence"
) -> torch.Tensor:
    """`(N, D)` float64 on the CPU: the mean of the model's input word-piece embeddings over
    the sentence (`"sentence"`: every piece but [CLS] and [SEP]) or over its three context
    words only (`"context"`, a reader told which words matter). No position embeddings and
    no attention: each word's meaning as the model's first layer receives it, and no more."""
    if words not in BAG_WORDS:
        raise ValueError(f"words must be one of {BAG_WORDS}, got {words!r}")
    table = model.get_input_embeddings().weight.detach()  # (V, D)
    rows = []
    for it in items:
        if words == "sentence":
            text = [it.text]
        else:
            text = list(it.context)
        ids = [i for t in text for i in tokenizer(t, add_special_tokens=False)["input_ids"]]
        rows.append(table[torch.tensor(ids, device=table.device)].double().mean(0).cpu())
    return torch.stack(rows)  # (N, D)


def _domain_label(it: SenseItem) -> int:
    return DOMAIN_NAMES.index(it.domains[it.label])


def choice_correct(
    log_p: torch.Tensor, classes: Sequence[int], items: Sequence[SenseItem]
) -> torch.Tensor:
    """`(N,)` bool: whether the higher of each item's two candidate domains, in `log_p`
    `(N, C)` over `classes`, is the right one (a tie picks the first domain)."""
    column = {int(c): i for i, c in enumerate(classes)}
    out = []
    for row, it in zip(log_p, items, strict=True):
        first, second = (float(row[column[DOMAIN_NAMES.index(d)]]) for d in it.domains)
        out.append(int(second > first) == it.label)
    return torch.tensor(out, dtype=torch.bool, device="cpu")


def bag_baseline(
    model: nn.Module,
    tokenizer: object,
    train: Sequence[SenseItem],
    score: Sequence[SenseItem],
    test: Sequence[SenseItem],
    *,
    words: str = "sentence",
    grid: Sequence[float] = BAG_C_GRID,
    C: float | None = None,
) -> dict[str, object]:
    """The probe's kind of classifier (multinomial logistic regression over the eight domains,
    picking the more likely of the item's two) on `embedding_bags`, trained on `train`,
    its C the best on `score` (or `C` if given), evaluated on `test`: `{"C", "score",
    "accuracy", "correct"}` (score accuracy per C tried, and which test items it gets right)."""
    from sklearn.linear_model import LogisticRegression

    x = {k: embedding_bags(model, tokenizer, v, words=words).numpy()
         for k, v in (("train", train), ("score", score), ("test", test))}  # fmt: skip
    y = [_domain_label(it) for it in train]
    tried: dict[str, float] = {}
    fits = {}
    for c in grid if C is None else (C,):
        fits[c] = LogisticRegression(C=c, max_iter=5000).fit(x["train"], y)
        log_p = torch.as_tensor(fits[c].predict_log_proba(x["score"]))
        tried[str(c)] = float(choice_correct(log_p, fits[c].classes_, score).float().mean())
    best = max(fits, key=lambda c: tried[str(c)])  # the first of equals: the stronger penalty
    log_p = torch.as_tensor(fits[best].predict_log_proba(x["test"]))
    correct = choice_correct(log_p, fits[best].classes_, test)
    return {
        "C": float(best),
        "score": tried,
        "accuracy": float(correct.float().mean()),
        "correct": correct,
    }
