"""Which sense of an ambiguous word does its sentence mean? An evaluation that needs attention.

Chapter 6 prunes heads of the pretrained MiniLM and needs a score that pruning can move: the
full model must pass it well above what word identity allows, and a model without attention
must fail it. Sentence-level tests do not have that property for a sentence encoder: a bag of
its input embeddings already sorts sentences by topic, and with every head masked the model
still does (the chapter measures both). So the model is read at one token instead:

- each item puts a homonym (*bat*: animals or sport) in a sentence with three context words,
  two from the domain of one of its senses and one from the other's; the majority decides the
  label ("the bat was there with the owl, the racket and the squirrel." → animals);
- a linear probe trained on the full model reads the **target word's last hidden state** and
  picks one of the word's two domains (chance: one half);
- context words come from three disjoint vocabularies, for the probe's training items, for the
  items that score heads and for the evaluation items: word identity cannot transfer from
  training to test (bag of words, TF-IDF and word overlap sit at chance), meaning can;
- without attention a token's state depends on the token alone, so with every head masked
  the target's state is the same in both senses: the test's floor is chance by construction.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from mha_lib._checks import check_positive_int
from mha_lib.analysis.statistics import bootstrap_ci

CHANCE = 0.5
SPLITS = ("probe", "score", "eval")
# Eight domains, 27 unambiguous words each (none is a homonym below): 9 per split.
DOMAINS: dict[str, tuple[str, ...]] = {
    "food": (
        "bread", "cheese", "soup", "salad", "pasta", "rice", "butter", "flour", "sugar",
        "garlic", "onion", "noodle", "pizza", "sandwich", "omelette", "pancake", "yogurt",
        "sausage", "lettuce", "carrot", "potato", "tomato", "cucumber", "vinegar", "honey",
        "muffin", "dumpling",
    ),
    "sport": (
        "football", "tennis", "soccer", "basketball", "hockey", "golf", "rugby", "cricket",
        "baseball", "volleyball", "marathon", "stadium", "referee", "goalkeeper", "racket",
        "tournament", "trophy", "athlete", "sprinter", "cyclist", "boxer", "swimmer", "skier",
        "wrestler", "league", "championship", "jersey",
    ),
    "music": (
        "guitar", "piano", "violin", "drum", "trumpet", "flute", "ukulele", "saxophone",
        "orchestra", "choir", "melody", "rhythm", "chord", "concert", "symphony", "opera",
        "album", "song", "lyrics", "harmony", "tempo", "banjo", "clarinet", "harp", "pianist",
        "drummer", "trombone",
    ),
    "medicine": (
        "doctor", "nurse", "hospital", "clinic", "surgeon", "patient", "fever", "vaccine",
        "pill", "injection", "diagnosis", "therapy", "surgery", "ambulance", "bandage",
        "prescription", "antibiotic", "infection", "allergy", "symptom", "pharmacy", "dentist",
        "stethoscope", "wound", "illness", "physician", "medication",
    ),
    "nature": (
        "river", "lake", "forest", "meadow", "valley", "hill", "mountain", "stream", "shore",
        "cliff", "waterfall", "pond", "swamp", "island", "canyon", "glacier", "desert",
        "jungle", "prairie", "creek", "riverbed", "pebble", "mud", "moss", "fern", "reeds",
        "estuary",
    ),
    "computing": (
        "computer", "keyboard", "laptop", "software", "database", "server", "algorithm",
        "processor", "browser", "website", "password", "printer", "compiler", "programmer",
        "network", "router", "smartphone", "download", "upload", "cursor", "spreadsheet",
        "email", "backup", "firewall", "robot", "hacker", "screen",
    ),
    "money": (
        "loan", "mortgage", "salary", "budget", "invoice", "tax", "dollar", "coin", "wallet",
        "payment", "banker", "debt", "investor", "profit", "savings", "cheque", "credit",
        "cashier", "currency", "pension", "wage", "receipt", "accountant", "auditor",
        "inflation", "dividend", "fortune",
    ),
    "animals": (
        "dog", "cat", "horse", "tiger", "lion", "elephant", "rabbit", "wolf", "fox", "bear",
        "monkey", "giraffe", "zebra", "kangaroo", "penguin", "dolphin", "whale", "eagle", "owl",
        "parrot", "snake", "frog", "turtle", "squirrel", "deer", "camel", "goat",
    ),
}  # fmt: skip
# Homonyms and the domains of their two senses.
HOMONYMS: dict[str, tuple[str, str]] = {
    "bat": ("animals", "sport"), "bass": ("animals", "music"), "mouse": ("animals", "computing"),
    "bank": ("nature", "money"), "pitch": ("sport", "music"), "organ": ("medicine", "music"),
    "virus": ("medicine", "computing"), "bug": ("animals", "computing"),
    "chip": ("food", "computing"), "jam": ("food", "music"), "roll": ("food", "music"),
    "note": ("music", "money"), "record": ("music", "sport"), "score": ("music", "sport"),
    "punch": ("food", "sport"), "pitcher": ("food", "sport"), "batter": ("food", "sport"),
    "bill": ("animals", "money"), "stock": ("food", "money"), "crash": ("computing", "money"),
    "cell": ("medicine", "computing"),
}  # fmt: skip
TEMPLATES = (
    "the {t} was there with the {a}, the {b} and the {c}.",
    "we saw the {a}, the {b} and the {c}, and then the {t}.",
    "after the {a} and the {b}, the {t} stood next to the {c}.",
    "she talked about the {t}, the {a}, the {b} and the {c}.",
    "the {a}, the {t}, the {b} and the {c} were all in the story.",
    "nobody mentioned the {t} until the {a}, the {b} and the {c} came up.",
)
DOMAIN_NAMES = tuple(DOMAINS)
_VOCAB_SEED = 2019


@dataclass(frozen=True)
class SenseItem:
    """One sentence: its homonym, the two domains it can mean, and the right one (0 or 1)."""

    text: str
    target: str
    domains: tuple[str, str]
    label: int
    context: tuple[str, str, str]  # (majority, majority, other), in sentence order shuffled


def vocabulary(split: str) -> dict[str, tuple[str, ...]]:
    """Each domain's context words for one split; the three splits are disjoint."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    rng = random.Random(_VOCAB_SEED)
    out = {}
    for name, words in DOMAINS.items():
        shuffled = list(words)
        rng.shuffle(shuffled)
        third = len(shuffled) // len(SPLITS)
        i = SPLITS.index(split)
        out[name] = tuple(shuffled[i * third : (i + 1) * third])
    return out


def make_sense_set(split: str, num_items: int, seed: int) -> list[SenseItem]:
    """`num_items` items (homonyms in turn, senses alternating) from one split's words."""
    check_positive_int("num_items", num_items)
    words = vocabulary(split)
    rng = random.Random(seed)
    targets = list(HOMONYMS)
    items = []
    for i in range(num_items):
        target = targets[i % len(targets)]
        domains = HOMONYMS[target]
        label = (i // len(targets)) % 2  # each homonym's senses alternate
        right, other = domains[label], domains[1 - label]
        a, b = rng.sample(words[right], 2)
        context = [a, b, rng.choice(words[other])]
        rng.shuffle(context)
        text = rng.choice(TEMPLATES).format(t=target, a=context[0], b=context[1], c=context[2])
        items.append(SenseItem(text, target, domains, label, (context[0], context[1], context[2])))
    return items


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


def target_states(model: nn.Module, batch: SenseBatch) -> torch.Tensor:
    """`(B, D)`: the last hidden state at each item's target word, on the model's device."""
    device = next(model.parameters()).device
    hidden = model(
        input_ids=batch.input_ids.to(device), attention_mask=batch.attention_mask.to(device)
    ).last_hidden_state  # (B, T, D)
    rows = torch.arange(len(batch), device=device)
    return hidden[rows, batch.target_index.to(device)]  # (B, D)


def fit_probe(model: nn.Module, batches: Sequence[SenseBatch], *, C: float = 1.0) -> nn.Linear:
    """A multinomial logistic regression over the eight domains, fitted on the model's target
    states (scikit-learn, deterministic), returned as a frozen `nn.Linear` on its device."""
    from sklearn.linear_model import LogisticRegression

    with torch.inference_mode():
        states = torch.cat([target_states(model, b) for b in batches]).float().cpu()
    labels = torch.cat([b.candidates.gather(1, b.labels[:, None])[:, 0] for b in batches])
    fitted = LogisticRegression(C=C, max_iter=5000).fit(states.double().numpy(), labels.numpy())
    first = next(model.parameters())
    probe = nn.Linear(states.shape[1], len(DOMAIN_NAMES), device=first.device, dtype=first.dtype)
    coef = torch.zeros(len(DOMAIN_NAMES), states.shape[1], dtype=torch.float64, device="cpu")
    bias = torch.full((len(DOMAIN_NAMES),), -1e4, dtype=torch.float64, device="cpu")
    classes = torch.as_tensor(fitted.classes_, device="cpu")
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


# The accuracy's interval is the library's one bootstrap (items resampled, NumPy's generator);
# the old name stays for its callers.
bootstrap_interval = bootstrap_ci


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
