"""What each layer's hidden states hold: linear probes, layer by layer, with a control task.

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
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from mha_lib._checks import check_positive_int

ALPHA = 10.0  # the probes' ridge penalty (on standardised features)


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
    train_x: torch.Tensor, train_y: Sequence[object], *, alpha: float = ALPHA
) -> object:
    """A linear probe fitted on `train_x` `(N, D)` with one label per row: scikit-learn's
    `RidgeClassifier` (one output per label) on standardised features; its `predict`
    takes float64 NumPy rows and returns label strings. One label only: a constant probe."""
    from sklearn.dummy import DummyClassifier
    from sklearn.linear_model import RidgeClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if train_x.dim() != 2 or train_x.shape[0] != len(train_y) or len(train_y) == 0:
        raise ValueError("train_x must be (N, D) with one label per row, N > 0")
    if alpha <= 0:
        raise ValueError(f"alpha must be positive, got {alpha!r}")
    y = np.array([str(v) for v in train_y])
    if len(set(y)) < 2:
        probe = DummyClassifier(strategy="constant", constant=y[0])
    else:
        probe = make_pipeline(StandardScaler(), RidgeClassifier(alpha=alpha))
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


def target_layer_states(model: nn.Module, batches: Sequence[object]) -> torch.Tensor:
    """`(L + 1, N, D)`: every layer's state at each item's target word, for chapter 6's
    `SenseBatch` batches (the sense probe of every layer)."""
    device = next(model.parameters()).device
    parts = []
    for b in batches:
        with torch.inference_mode():
            hidden = model(
                input_ids=b.input_ids.to(device),
                attention_mask=b.attention_mask.to(device),
                output_hidden_states=True,
            ).hidden_states
        rows = torch.arange(len(b), device=device)
        at = b.target_index.to(device)
        parts.append(torch.stack([h[rows, at] for h in hidden]).float().cpu())
    return torch.cat(parts, 1)
