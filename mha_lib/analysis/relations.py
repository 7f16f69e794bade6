"""Does some head point from a word to a word it is related to? Heads scored against known
relations: syntactic dependencies, a pronoun's antecedent, a semantically similar word.

Each head is read as a tiny guesser: a word's predicted partner is the word it attends to
most (Clark et al., 2019). Dependencies (`mha_lib.data.syntax`) are scored against the best
*fixed-offset* baseline ("the head is always 2 words to the right"), which is strong on short
template sentences, so only the gap above it counts; for a parser's own arcs,
`attachment_score`. A pronoun's antecedent (`mha_lib.data.coreference`) and a similar word
(`mha_lib.data.similarity`) are choices between two candidates, each scored beside rules
that see only positions or agreement and a lexical baseline that sees words, not context.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from mha_lib._checks import check_floating
from mha_lib.analysis import statistics
from mha_lib.analysis.statistics import HeldOut
from mha_lib.data.coreference import CorefItem
from mha_lib.data.similarity import SimilarityItem
from mha_lib.data.syntax import Sentence


# Syntax: heads as parsers
def head_accuracy(
    word_maps: Sequence[torch.Tensor], sentences: Sequence[Sentence], *, specials: int = 1
) -> dict[str, torch.Tensor]:
    """Per relation, the `(L, H)` fraction of dependents whose most-attended word is their head.

    `word_maps[i]` is sentence `i`'s word-level map `(L, H, W + 2·specials,
    W + 2·specials)` with `specials` tokens ([CLS], [SEP]) at each end, which
    are excluded as candidates, as is the word itself. Adds `"all"` for every arc.
    """
    hits, relations, _ = arc_hits(word_maps, sentences, specials=specials)  # (A, L, H)
    keys = list(dict.fromkeys(key for rel in relations for key in (rel, "all")))
    return {
        key: hits[[i for i, r in enumerate(relations) if key in (r, "all")]].float().mean(0)
        for key in keys
    }


def offset_baseline(sentences: Sequence[Sentence]) -> dict[str, tuple[int, float]]:
    """Per relation, the best fixed offset (head index − dependent index) and its accuracy."""
    if not sentences:
        raise ValueError("sentences must not be empty")
    offsets: dict[str, list[int]] = {}
    for s in sentences:
        for dep, head, rel in s.arcs():
            for key in (rel, "all"):
                offsets.setdefault(key, []).append(head - dep)
    best: dict[str, tuple[int, float]] = {}
    for key, values in offsets.items():
        # Ties go to the smaller |offset|, then to the left, so the result is deterministic.
        offset = max(set(values), key=lambda o: (values.count(o), -abs(o), -o))
        best[key] = (offset, values.count(offset) / len(values))
    return best


def arc_hits(
    word_maps: Sequence[torch.Tensor], sentences: Sequence[Sentence], *, specials: int = 1
) -> tuple[torch.Tensor, list[str], list[int]]:
    """Per arc, whether each head's most-attended other word is the arc's head word.

    Returns `(hits (A, L, H) bool, relation of each arc, sentence index of each arc)`,
    so that arcs can be split and resampled by sentence (see `mha_lib.analysis.statistics`);
    `head_accuracy` is the mean of these hits per relation.
    """
    if len(word_maps) != len(sentences) or not sentences:
        raise ValueError(
            f"word_maps and sentences must be non-empty and equally long, "
            f"got {len(word_maps)} and {len(sentences)}"
        )
    hits: list[torch.Tensor] = []
    relations: list[str] = []
    owners: list[int] = []
    for i, (m, s) in enumerate(zip(word_maps, sentences, strict=True)):
        check_floating(m, f"word_maps[{i}]")
        n = len(s.words)
        if m.dim() != 4 or m.shape[-1] != m.shape[-2] or m.shape[-1] != n + 2 * specials:
            raise ValueError(
                f"word_maps[{i}] must have shape (L, H, {n + 2 * specials}, {n + 2 * specials}) "
                f"for {n} words and {specials} special token(s) at each end, got {tuple(m.shape)}"
            )
        inner = m[..., specials : specials + n, specials : specials + n]  # (L, H, W, W)
        itself = torch.eye(n, dtype=torch.bool, device=inner.device)  # (W, W)
        predicted = inner.masked_fill(itself, float("-inf")).argmax(-1)  # (L, H, W)
        for dep, head, rel in s.arcs():
            hits.append(predicted[..., dep] == head)  # (L, H)
            relations.append(rel)
            owners.append(i)
    return torch.stack(hits), relations, owners


def offset_hits(sentences: Sequence[Sentence], offsets: Sequence[int]) -> dict[int, torch.Tensor]:
    """Per fixed offset, `(A,)` booleans over the arcs (order of `arc_hits`): is the
    head word exactly `offset` words from the dependent (head index − dependent index)?"""
    if not sentences:
        raise ValueError("sentences must not be empty")
    gaps = torch.tensor([h - d for s in sentences for d, h, _ in s.arcs()])  # (A,)
    return {int(o): gaps == int(o) for o in offsets}


@dataclass(frozen=True)
class RelationScore:
    """One relation's best head and best fixed offset, both chosen on one half and scored on the
    other (fractions), and the head's paired gain over the offset with its interval."""

    relation: str
    n_arcs: int  # arcs of this relation in the reporting half
    head: HeldOut
    offset: int
    offset_score: float
    offset_ci: tuple[float, float]
    gain: float
    gain_ci: tuple[float, float]
    gain_p: float  # two-sided bootstrap p-value of the gain (the interval's resamples)


def heldout_scores(
    hits: torch.Tensor,
    relations: Sequence[str],
    owners: Sequence[int],
    offsets: dict[int, torch.Tensor],
    relation: str,
    select: Sequence[int],
    report: Sequence[int],
    *,
    layer: int | None = None,
    seed: int = 0,
) -> RelationScore:
    """Score `relation` (or `"all"`) from `arc_hits` and `offset_hits` outputs.

    `select` and `report` are sentence indices (from `statistics.split_halves`); the
    arcs of a sentence stay together, and intervals resample whole sentences.
    """
    rows = [i for i, r in enumerate(relations) if relation in (r, "all")]
    if not rows:
        raise ValueError(f"no arc has relation {relation!r}")
    groups = [owners[i] for i in rows]
    sub = hits[rows]  # (A_rel, L, H)
    head = statistics.best_head(sub, select, report, groups, layer=layer, seed=seed)
    rules = {o: v[rows] for o, v in offsets.items()}
    name, score, ci = statistics.best_rule(
        {str(o): v for o, v in rules.items()}, select, report, groups, seed=seed
    )
    gain, gain_ci, gain_p = statistics.paired_gain(
        sub, rules[int(name)], head, report, groups, seed=seed
    )
    keep = set(int(r) for r in report)
    return RelationScore(
        relation=relation,
        n_arcs=sum(g in keep for g in groups),
        head=head,
        offset=int(name),
        offset_score=score,
        offset_ci=ci,
        gain=gain,
        gain_ci=gain_ci,
        gain_p=gain_p,
    )


def attachment_score(
    predicted: Sequence[Sentence], gold: Sequence[Sentence]
) -> tuple[float, float]:
    """Unlabelled and labelled attachment scores of `predicted` against `gold` (same words)."""
    if len(predicted) != len(gold) or not gold:
        raise ValueError("predicted and gold must be non-empty and equally long")
    n = heads = labels = 0
    for i, (p, g) in enumerate(zip(predicted, gold, strict=True)):
        if p.words != g.words:
            raise ValueError(f"sentence {i}: predicted and gold words differ")
        for ph, pr, gh, gr in zip(p.heads, p.relations, g.heads, g.relations, strict=True):
            n += 1
            heads += ph == gh
            labels += ph == gh and pr == gr
    return heads / n, labels / n


# Coreference and similarity: a choice between two earlier words
def choice_hits(
    word_maps: Sequence[torch.Tensor],
    queries: Sequence[int],
    candidates: Sequence[Sequence[int]],
    answers: Sequence[int],
    *,
    specials: int = 1,
    any_word: bool = False,
) -> torch.Tensor:
    """`(N, L, H)` booleans: does the query word attend more to the answer than to the rest?

    `word_maps[i]` is item i's word-level map `(L, H, W + 2·specials, W + 2·specials)`;
    indices are word indices (`[CLS]` excluded). By default only the item's candidates
    compete (ties count as misses); with `any_word` every other word does (Clark et al.'s
    stricter "most-attended word"), the query word itself and the specials excluded.
    """
    n = len(word_maps)
    if not (n == len(queries) == len(candidates) == len(answers)) or n == 0:
        raise ValueError(
            "word_maps, queries, candidates and answers must be non-empty, equal length"
        )
    rows = []
    for i, m in enumerate(word_maps):
        check_floating(m, f"word_maps[{i}]")
        if m.dim() != 4 or m.shape[-1] != m.shape[-2] or m.shape[-1] <= 2 * specials:
            raise ValueError(f"word_maps[{i}] must have shape (L, H, T, T), got {tuple(m.shape)}")
        w = m.shape[-1] - 2 * specials
        q, ans, cands = queries[i], answers[i], list(candidates[i])
        if ans not in cands or not all(0 <= j < w for j in (q, *cands)):
            raise ValueError(f"item {i}: answer must be a candidate; indices must be < {w} words")
        row = m[..., specials + q, specials : specials + w]  # (L, H, W): from the query word
        if any_word:
            others = [j for j in range(w) if j not in (q, ans)]
        else:
            others = [j for j in cands if j != ans]
        best_other = row[..., others].max(-1).values  # (L, H)
        rows.append(row[..., ans] > best_other)
    return torch.stack(rows)  # (N, L, H)


def lexical_choice(
    words: Sequence[Sequence[str]],
    queries: Sequence[int],
    candidates: Sequence[Sequence[int]],
    answers: Sequence[int],
    embed: Callable[[str], torch.Tensor],
) -> torch.Tensor:
    """`(N,)` booleans: is the answer the candidate whose `embed(word)` is most cosine-similar
    to the query word's? A baseline that sees words, not context (e.g. input embeddings)."""
    n = len(words)
    if not (n == len(queries) == len(candidates) == len(answers)) or n == 0:
        raise ValueError("words, queries, candidates and answers must be non-empty, equal length")
    hits = []
    for w, q, cands, ans in zip(words, queries, candidates, answers, strict=True):
        if ans not in cands:
            raise ValueError("every answer must be one of its candidates")
        t = embed(w[q])
        cos = {
            c: float(torch.nn.functional.cosine_similarity(t, embed(w[c]), dim=0)) for c in cands
        }
        hits.append(all(cos[ans] > cos[c] for c in cands if c != ans))
    return torch.tensor(hits)


def coref_rule_hits(items: Sequence[CorefItem]) -> dict[str, torch.Tensor]:
    """`(N,)` booleans for the rule baselines: first noun, nearest noun, nearest agreeing noun."""
    if not items:
        raise ValueError("items must not be empty")
    first = [it.candidates[0] == it.antecedent for it in items]
    nearest = [it.candidates[1] == it.antecedent for it in items]
    agreeing = []
    for it in items:
        matches = [
            c for c, k in zip(it.candidates, it.classes, strict=True) if k == it.pronoun_class
        ]
        agreeing.append(bool(matches) and max(matches) == it.antecedent)
    return {
        "first noun (the subject)": torch.tensor(first),
        "nearest preceding noun": torch.tensor(nearest),
        "nearest noun that agrees": torch.tensor(agreeing),
    }


def lexical_hits(
    items: Sequence[SimilarityItem], embed: Callable[[str], torch.Tensor]
) -> torch.Tensor:
    """`(N,)` booleans: is the similar word the candidate whose `embed(word)` is closer to
    the target's (cosine)? `embed` maps a word to a vector, e.g. its mean input embedding."""
    if not items:
        raise ValueError("items must not be empty")
    return lexical_choice(
        [it.words for it in items],
        [it.target for it in items],
        [it.candidates for it in items],
        [it.similar for it in items],
        embed,
    )


def similarity_rule_hits(items: Sequence[SimilarityItem]) -> dict[str, torch.Tensor]:
    """`(N,)` booleans for the positional rules: first candidate, nearest candidate."""
    if not items:
        raise ValueError("items must not be empty")
    return {
        "first candidate": torch.tensor([it.candidates[0] == it.similar for it in items]),
        "nearest candidate": torch.tensor([it.candidates[1] == it.similar for it in items]),
    }
