"""Does the model need a parsing head? Switch it off and ask the layers above what they know.

A head whose strongest weight goes from each direct object to its verb (chapter 5 part 3) shows
a correlation. The test of use is an intervention: switch the head off (a head mask, which the
caller applies) and read the hidden states above it with a probe for the *syntactic role* of
nouns (`mha_lib.data.roles.ROLES`: subject, direct object, object of a preposition), which a
model can only tell by relating the noun to the words it depends on.

Two read-outs, as in chapter 6: a probe fitted on the intact model and kept *frozen* (is the
role still written where the model wrote it?) and a probe *refitted* on the damaged model
(is it still there to be read at all?). And one baseline: switching off any head moves the
states above it, so a head's effect counts only against switching off as many other heads of
the same layers (`matched_draws`), or of any layers that can reach the read layer
(`random_draws`).

Two ways to switch a head off (`ablated`): *zeroing* its output, which also shifts the
average state of every layer above, and *mean ablation*, which puts its average output over a
corpus (`head_means`) in place of what it computed for this sentence: the states keep
their average, and only what the head said about this sentence is lost. A frozen probe that
fails after zeroing but not after mean ablation was reading a shift, not lost information.

And one test at the model's output: all-MiniLM-L6-v2 has no masked-word head, only a sentence
embedding, so the question is whether the embedding still tells "the dog chased the cat" from
"the cat chased the dog" (`swap_distances`), beside a change of who, not of roles.

The same intervention at the sinks (chapter 9, `sink_ablation`): take away what heads fetch
from `[CLS]` and `[SEP]`, and measure how much the layer's output moves.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator, Sequence

import numpy as np
import torch
from torch import nn

from mha_lib._checks import check_floating, check_positive_int, check_tensor
from mha_lib.analysis.probes import hits_by_layer
from mha_lib.bert.lab import mean_pool
from mha_lib.bert.loading import encoder_layers, require_eager
from mha_lib.bert.norms import transformed_values
from mha_lib.bert.surgery import head_mask
from mha_lib.data.roles import swap_texts

Head = tuple[int, int]  # (layer, head)


def gather(states: Sequence[torch.Tensor], words: Sequence[tuple[int, int]]) -> torch.Tensor:
    """`(L + 1, N, D)`: every layer's state of each `(sentence, word)`, from per-sentence
    `(L + 1, W, D)` states (`mha_lib.analysis.probes.word_states`)."""
    if not words:
        raise ValueError("words must not be empty")
    return torch.stack([states[i][:, j] for i, j in words], 1)


def ranked_heads(
    hits: torch.Tensor,
    relations: Sequence[str],
    owners: Sequence[int],
    relation: str,
    select: Sequence[int],
) -> list[Head]:
    """Every head, best first, by its accuracy on `relation`'s arcs of the `select`
    sentences (`hits`, `relations`, `owners` as from
    `mha_lib.analysis.relations.arc_hits`); ties keep the lower layer and head."""
    check_tensor(hits, "hits")
    if hits.dim() != 3 or hits.shape[0] != len(relations) or len(relations) != len(owners):
        raise ValueError("hits must be (A, L, H) with one relation and owner per arc")
    keep = set(int(i) for i in select)
    rows = [a for a, (r, o) in enumerate(zip(relations, owners, strict=True))
            if r == relation and o in keep]  # fmt: skip
    if not rows:
        raise ValueError(f"no {relation!r} arc in the selected sentences")
    score = hits[rows].double().mean(0).flatten()
    heads = hits.shape[2]
    order = sorted(range(score.numel()), key=lambda k: (-float(score[k]), k))
    return [divmod(k, heads) for k in order]


def matched_draws(heads: Sequence[Head], num_heads: int, n: int, seed: int = 0) -> list[list[Head]]:
    """`n` sets of as many heads as `heads`, each head replaced by another head of its own
    layer (never one of `heads`, never twice in a set): the control that moves the same
    layers. With one head, the draws cycle through every other head of its layer in a
    seeded order, so `n = num_heads − 1` is the exact, complete control."""
    check_positive_int("num_heads", num_heads)
    check_positive_int("n", n)
    chosen = set(heads)
    if len(chosen) != len(heads) or not heads:
        raise ValueError("heads must be distinct and non-empty")
    for layer, head in heads:
        if not 0 <= head < num_heads:
            raise ValueError(f"head {layer}-{head} is outside 0 … {num_heads - 1}")
        same = sum(1 for lh in heads if lh[0] == layer)
        if num_heads - same < same:
            raise ValueError(f"too many heads of layer {layer} to draw others in their place")
    rng = random.Random(seed)
    if len(heads) == 1:
        layer = heads[0][0]
        others = [(layer, h) for h in range(num_heads) if (layer, h) not in chosen]
        rng.shuffle(others)
        return [[others[k % len(others)]] for k in range(n)]
    out = []
    for _ in range(n):
        drawn: list[Head] = []
        for layer, _head in heads:
            free = [(layer, h) for h in range(num_heads)
                    if (layer, h) not in chosen and (layer, h) not in drawn]  # fmt: skip
            drawn.append(rng.choice(free))
        out.append(drawn)
    return out


def random_draws(
    k: int,
    num_layers: int,
    num_heads: int,
    n: int,
    exclude: Sequence[Head] = (),
    seed: int = 0,
    *,
    below: int | None = None,
) -> list[list[Head]]:
    """`n` sets of `k` distinct heads drawn from all layers (or from the layers under
    `below`: the heads that can reach layer `below`'s states), none of `exclude`."""
    for name, value in (("k", k), ("num_layers", num_layers), ("num_heads", num_heads), ("n", n)):
        check_positive_int(name, value)
    top = num_layers if below is None else below
    if not 0 < top <= num_layers:
        raise ValueError(f"below must be in 1 … {num_layers}, got {below!r}")
    pool = [(layer, h) for layer in range(top) for h in range(num_heads)
            if (layer, h) not in set(exclude)]  # fmt: skip
    if k > len(pool):
        raise ValueError(f"cannot draw {k} heads from {len(pool)}")
    rng = random.Random(seed)
    return [sorted(rng.sample(pool, k)) for _ in range(n)]


def mask_without(heads: Sequence[Head], num_layers: int, num_heads: int) -> torch.Tensor:
    """`(L, H)` float head mask, ones with `heads` at zero (`mha_lib.bert.head_mask`)."""
    mask = torch.ones(num_layers, num_heads)
    for layer, head in heads:
        mask[layer, head] = 0.0
    return mask


def read_roles(
    train_x: torch.Tensor,
    train_y: Sequence[str],
    test_x: torch.Tensor,
    test_y: Sequence[str],
    frozen: Sequence[object],
) -> dict[str, torch.Tensor]:
    """`{"frozen": (L + 1, N_test), "refit": (L + 1, N_test)}` bool hits of the role probes on
    states of a (possibly damaged) model: the `frozen` probes (one per layer, fitted on the
    intact model by `fit_by_layer`) read `test_x` as
    they are; the refitted ones are fitted on `train_x`."""
    return {
        "frozen": hits_by_layer(train_x, train_y, test_x, test_y, probes=frozen),
        "refit": hits_by_layer(train_x, train_y, test_x, test_y),
    }


def accuracy_by_role(hits: torch.Tensor, test_y: Sequence[str]) -> dict[str, list[float]]:
    """Per role (and `"all"`), the per-layer accuracy of `hits` `(L + 1, N)`."""
    check_tensor(hits, "hits")
    if hits.dim() != 2 or hits.shape[1] != len(test_y):
        raise ValueError("hits must be (L + 1, N) with one label per item")
    out = {"all": hits.double().mean(1).tolist()}
    for role in sorted(set(test_y)):
        cols = torch.tensor([r == role for r in test_y])
        out[role] = hits[:, cols].double().mean(1).tolist()
    return out


def reaching(heads: Sequence[Head], layer: int, num_heads: int) -> list[Head]:
    """Every head that can change layer `layer`'s states (those of the layers under it: the
    embeddings are layer 0, block `b`'s output layer `b + 1`), but `heads`."""
    if layer < 0:
        raise ValueError(f"layer must be non-negative, got {layer!r}")
    skip = {tuple(h) for h in heads}
    return [(b, h) for b in range(layer) for h in range(num_heads) if (b, h) not in skip]


def _contexts(model: nn.Module) -> list[nn.Module]:
    """Each layer's self-attention, checked to hold all its heads (none pruned)."""
    mods = [layer.attention.self for layer in encoder_layers(model)]
    for m in mods:
        if m.query.out_features != m.num_attention_heads * m.attention_head_size:
            raise ValueError("mean ablation needs every head of the model (none pruned)")
    return mods


def head_means(
    model: nn.Module, tokenizer: object, word_lists: Sequence[Sequence[str]], batch_size: int = 32
) -> torch.Tensor:
    """`(L, H, D_head)`: each head's output (its slice of the context, before the output
    projection), averaged over every real token of `word_lists` (`[CLS]` and `[SEP]`
    too, padding not): the value mean ablation puts in its place."""
    check_positive_int("batch_size", batch_size)
    if not word_lists:
        raise ValueError("word_lists must be non-empty")
    mods = _contexts(model)
    device = next(model.parameters()).device
    seen: list[torch.Tensor] = []
    handles = [m.register_forward_hook(lambda mod, args, out: seen.append(out[0])) for m in mods]
    sums, count = None, 0
    try:
        for start in range(0, len(word_lists), batch_size):
            chunk = [list(w) for w in word_lists[start : start + batch_size]]
            enc = tokenizer(chunk, is_split_into_words=True, padding=True, return_tensors="pt")
            seen.clear()
            with torch.inference_mode():
                model(input_ids=enc["input_ids"].to(device),
                      attention_mask=enc["attention_mask"].to(device))  # fmt: skip
            real = enc["attention_mask"].to(device=device, dtype=torch.float64)  # (B, T)
            batch = torch.stack([(c.double() * real[..., None]).sum((0, 1)) for c in seen])
            sums = batch if sums is None else sums + batch  # (L, H·Dh)
            count += int(real.sum())
    finally:
        for handle in handles:
            handle.remove()
    assert sums is not None
    heads, width = mods[0].num_attention_heads, mods[0].attention_head_size
    return (sums / count).float().cpu().reshape(len(mods), heads, width)


@contextlib.contextmanager
def heads_replaced(
    model: nn.Module, heads: Sequence[Head], values: torch.Tensor
) -> Iterator[None]:
    """Inside the block, each of `heads` outputs `values[layer, head]` `(D_head,)` at
    every token instead of what it computed (`values` `(L, H, D_head)`, e.g.
    `head_means`); every other head is untouched."""
    mods = _contexts(model)
    check_floating(values, "values")
    shape = (len(mods), mods[0].num_attention_heads, mods[0].attention_head_size)
    if tuple(values.shape) != shape:
        raise ValueError(f"values must be (L, H, D_head) = {shape}, got {tuple(values.shape)}")
    by_layer: dict[int, list[int]] = {}
    for layer, head in heads:
        if not (0 <= layer < shape[0] and 0 <= head < shape[1]):
            raise ValueError(f"head {layer}-{head} is not in the model")
        by_layer.setdefault(layer, []).append(head)

    def make_hook(layer: int, chosen: list[int]):  # noqa: ANN202 - a torch hook
        def hook(module: nn.Module, args: tuple, output: tuple) -> tuple:
            shaped = output[0].unflatten(-1, (shape[1], shape[2])).clone()  # (B, T, H, Dh)
            for h in chosen:
                shaped[..., h, :] = values[layer, h].to(shaped.device, shaped.dtype)
            return (shaped.flatten(-2), *output[1:])  # (B, T, H·Dh)

        return hook

    handles = [mods[layer].register_forward_hook(make_hook(layer, chosen))
               for layer, chosen in by_layer.items()]  # fmt: skip
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


@contextlib.contextmanager
def ablated(
    model: nn.Module, heads: Sequence[Head], means: torch.Tensor | None = None
) -> Iterator[None]:
    """`heads` switched off inside the block: zeroed (`means` None, the head mask of
    `mha_lib.bert.head_mask`) or mean-ablated (each outputs its `means` entry)."""
    if means is None:
        cfg = model.config
        with head_mask(model, mask_without(heads, cfg.num_hidden_layers, cfg.num_attention_heads)):
            yield
    else:
        with heads_replaced(model, heads, means):
            yield


def sentence_embeddings(
    model: nn.Module, tokenizer: object, texts: Sequence[str], batch_size: int = 64
) -> torch.Tensor:
    """`(N, D)` float64: all-MiniLM-L6-v2's sentence embedding of each text, the mean of the
    last layer over real tokens, L2-normalised (sentence-transformers' pooling)."""
    check_positive_int("batch_size", batch_size)
    device = next(model.parameters()).device
    parts = []
    for start in range(0, len(texts), batch_size):
        enc = tokenizer(list(texts[start : start + batch_size]), padding=True, return_tensors="pt")
        mask = enc["attention_mask"].to(device)
        with torch.inference_mode():
            hidden = model(input_ids=enc["input_ids"].to(device), attention_mask=mask)
        pooled = mean_pool(hidden.last_hidden_state.double(), mask)  # (B, D)
        parts.append(torch.nn.functional.normalize(pooled, dim=-1).cpu())
    return torch.cat(parts)


def swap_distances(
    model: nn.Module, tokenizer: object, items: Sequence[tuple[str, str, str, str]]
) -> dict[str, torch.Tensor]:
    """Per item, `1 − cos` between a sentence's embedding and its role swap's (`"swap"`:
    0 means the embedding cannot tell who did what to whom) and its object-substituted
    version's (`"sub"`: a change that needs no roles), each `(N,)` float64."""
    texts = swap_texts(items)
    e = {k: sentence_embeddings(model, tokenizer, v) for k, v in texts.items()}
    return {k: 1 - (e["base"] * e[k]).sum(-1) for k in ("swap", "sub")}


def role_contrast_ci(
    change: torch.Tensor,
    roles: Sequence[str],
    groups: Sequence[int],
    a: str,
    b: str,
    *,
    levels: Sequence[float] = (0.95, 0.90),
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[float, list[tuple[float, float]]]:
    """`mean(change on a's items) − mean(change on b's items)` and its percentile intervals
    at `levels`, resampling whole `groups` (sentences) with replacement, so the two roles'
    words of one sentence stay together: how much more one role changed than the other."""
    check_tensor(change, "change")
    if change.dim() != 1 or not len(change) == len(roles) == len(groups):
        raise ValueError("change must be (N,) with one role and one group per item")
    for role in (a, b):
        if role not in roles:
            raise ValueError(f"no item of role {role!r}")
    check_positive_int("n_boot", n_boot)
    v = change.detach().double().cpu().numpy()
    ids = {g: k for k, g in enumerate(sorted(set(int(g) for g in groups)))}
    g = np.array([ids[int(x)] for x in groups])
    stats = []
    for role in (a, b):
        on = np.array([r == role for r in roles], dtype=float)
        stats.append((np.bincount(g, v * on, len(ids)), np.bincount(g, on, len(ids))))
    point = float(v[[r == a for r in roles]].mean() - v[[r == b for r in roles]].mean())
    draws = np.random.default_rng(seed).integers(0, len(ids), size=(n_boot, len(ids)))
    with np.errstate(invalid="ignore", divide="ignore"):
        means = [s[draws].sum(1) / c[draws].sum(1) for s, c in stats]  # (n_boot,) each
    diffs = means[0] - means[1]
    diffs = diffs[np.isfinite(diffs)]  # a draw without one of the roles has no contrast
    out = []
    for level in levels:
        if not 0 < level < 1:
            raise ValueError(f"levels must be in (0, 1), got {level!r}")
        tail = 100 * (1 - level) / 2
        lo, hi = np.percentile(diffs, [tail, 100 - tail])
        out.append((float(lo), float(hi)))
    return point, out


# What heads take from the sinks, by taking it away (chapter 9). A "sink" (Xiao et al. 2023) is
# a position that receives much of a head's weight whatever the query: in BERT-family models
# `[CLS]` and `[SEP]`; `head_stats.special_mass` reads how much weight they get.


ABLATIONS = ("zero", "mean", "random", "off")


@torch.no_grad()
def sink_ablation(
    model: torch.nn.Module,
    tokenizer: object,
    sentences: Sequence[str],
    *,
    draws: int = 8,
    seed: int = 0,
) -> dict[str, torch.Tensor]:
    """What each head takes from `[CLS]` and `[SEP]`, measured by taking it away.

    In layer `l` head `h` adds `o_i = sum_j alpha_ij f(x_j)` to the layer's attention
    output `A` (`mha_lib.bert.norms.transformed_values`). With `S` the two special
    positions and `w_i` the weight query `i` puts on them, one head at a time:

    - `zero`: their part removed, `o_i − sum_{j in S} alpha_ij f(x_j)`;
    - `mean`: their `f(x_j)` replaced by the mean `f` of the sentence's ordinary tokens;
    - `random` (baseline): the same weight `w_i` taken from a random ordinary token `r`,
      `o_i − w_i f(x_r)`, averaged over `draws` draws (seeded by `seed`);
    - `off` (baseline): the whole head switched off, `o_i` removed.

    Returns, per sentence, layer and head `(N, L, H)`: `weight` (the mean over queries of
    `w_i`), and for each ablation `attn_<ablation>`, the relative change of the attention
    output `||ΔA|| / ||A||`, and `hidden_<ablation>`, that of the hidden state after the
    layer (its attention output changed, the rest of the layer run again), Frobenius norms
    over the sentence's positions. Every query position is read, the special ones too.
    """
    if not sentences:
        raise ValueError("sink_ablation needs at least one sentence")
    check_positive_int("draws", draws)
    require_eager(model)
    was_training = model.training
    model.eval()
    generator = torch.Generator().manual_seed(seed)
    layers = encoder_layers(model)
    keys = ["weight"] + [f"{p}_{a}" for p in ("attn", "hidden") for a in ABLATIONS]
    rows: dict[str, list[torch.Tensor]] = {k: [] for k in keys}
    try:
        for text in sentences:
            enc = tokenizer(text, return_tensors="pt").to(next(model.parameters()).device)
            t = enc["input_ids"].shape[1]
            if t < 3:
                raise ValueError(f"sentence {text!r} has no ordinary token")
            out = model(**enc, output_attentions=True, output_hidden_states=True)
            per_layer: dict[str, list[torch.Tensor]] = {k: [] for k in keys}
            for layer, x, after, alpha in zip(
                layers, out.hidden_states, out.hidden_states[1:], out.attentions, strict=False
            ):
                x, after, alpha = x[0], after[0], alpha[0]  # (T, D), (T, D), (H, T, T)
                f = transformed_values(layer, x[None])[0]  # (H, T, D)
                o = alpha @ f  # (H, T, D): what each head adds
                dense = layer.attention.output.dense
                attn = o.sum(0) + dense.bias  # (T, D): the layer's attention output
                special = [0, t - 1]
                w = alpha[..., special].sum(-1)  # (H, T)
                sink = alpha[..., special] @ f[:, special]  # (H, T, D)
                ordinary = f[:, 1 : t - 1]  # (H, T − 2, D)
                mean = ordinary.mean(1, keepdim=True)  # (H, 1, D)
                picks = torch.randint(t - 2, (draws, *w.shape), generator=generator)
                fetched = ordinary[torch.arange(w.shape[0])[None, :, None], picks.to(f.device)]
                deltas = {
                    "zero": [-sink],
                    "mean": [w[..., None] * mean - sink],
                    "random": list(-w[..., None] * fetched),  # draws × (H, T, D)
                    "off": [-o],
                }
                per_layer["weight"].append(w.mean(-1))
                for name, changes in deltas.items():
                    a_rel, h_rel = [], []
                    for delta in changes:  # (H, T, D): one head changed at a time
                        a_rel.append(delta.flatten(1).norm(dim=1) / attn.norm())
                        changed = _rest_of_layer(layer, x, attn + delta)  # (H, T, D)
                        h_rel.append((changed - after).flatten(1).norm(dim=1) / after.norm())
                    per_layer[f"attn_{name}"].append(torch.stack(a_rel).mean(0))
                    per_layer[f"hidden_{name}"].append(torch.stack(h_rel).mean(0))
            for k in keys:
                rows[k].append(torch.stack(per_layer[k]).float().cpu())  # (L, H)
    finally:
        model.train(was_training)
    return {k: torch.stack(v) for k, v in rows.items()}  # (N, L, H) each


def _rest_of_layer(layer: torch.nn.Module, x: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
    """A BERT layer's output from its input `x` `(T, D)` and attention output `attn`
    `(..., T, D)` (before the residual): add and normalise, feed forward, add and normalise,
    as `BertLayer` does in eval mode."""
    a = layer.attention.output.LayerNorm(attn + x)  # (..., T, D)
    return layer.output(layer.intermediate(a), a)  # (..., T, D)
