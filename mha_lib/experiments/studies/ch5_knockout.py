"""Chapter 5 part 3: does MiniLM need its parsing heads? Each switched off, against its peers.

For the direct-object and the subject relation, the heads that point a dependent at its verb
most often are chosen on part 3's selection half of the long sentences
(`mha_lib.analysis.knockout.ranked_heads`: by weight, as part 3 chose them); the best one,
then the best three, are switched off: zeroed, and the single heads also mean-ablated
(`ABLATIONS`: each head's output replaced by its average over the selection half's
tokens). Two read-outs:
the role of every subject, direct object and object of a preposition in the other half, read
from each layer's hidden states by a probe kept from the intact model (`frozen`) and by one
refitted on the damaged model (`refit`), with paired intervals for every role and the
*specificity* (the direct objects' change minus the subjects'); and the model's output, its
sentence embedding: how far apart "the dog chased the cat" and its role swap are
(`mha_lib.analysis.knockout.swap_distances`, `N_ITEMS` pairs). The controls: every
head switched off alone (`single`, both ways: the heads of the layers under the read layer
are the ones that could have changed it), and for three heads (zeroed) `DRAWS` sets of
other heads of the same layers (`matched`) and of any layer under the read layer
(`random`), read by the probes only.

Run from the repository root (about fifteen minutes on 2 idle cores, an hour on a shared
machine)::

    HF_HUB_OFFLINE=1 .venv/bin/python -m mha_lib.experiments.studies.ch5_knockout

writes `scripts/results/ch5_knockout.json` with its provenance; `live_checks`
recomputes the intact model and the best direct-object head, zeroed and mean-ablated, for the
chapter and the tests.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from mha_lib import bert
from mha_lib.analysis import differences, knockout, probes, statistics
from mha_lib.analysis.relations import arc_hits
from mha_lib.analysis.statistics import bootstrap_ci
from mha_lib.data import roles, syntax
from mha_lib.data.sentences import LONG_SENTENCES
from mha_lib.experiments.reproduce import (
    Check,
    parse_args,
    provenance,
    rounded,
    save_results,
    threads,
)

NAME = "ch5_knockout.json"
PARTS: tuple[str, ...] = ()  # the study reruns whole: no --only
RELATIONS = ("dobj", "nsubj")  # the relations whose heads are switched off
SIZES = (1, 3)  # the best head, the best three
DRAWS = 30  # control sets of three heads, per relation and kind
SPLIT_SEED = 0  # part 3's halves: heads chosen on one, roles scored on the other
DRAW_SEED = 0
ABLATIONS = ("zero", "mean")  # a head's output times 0, or replaced by its corpus mean
N_ITEMS = 200  # role-swap pairs for the output test (mha_lib.data.roles.role_swaps)
ITEM_SEED = 0
# Margins fixed before the run, for verdicts of "no change". A role's accuracy: 5 points, one
# word in twenty of that role read otherwise, the smallest loss we would call losing the role
# (the effects the chapter reads are ten points and more). The same 5 points for the
# specificity (one role losing that much more than another). The output: 10 % of the intact
# model's distance between a sentence and its role swap, a tenth of what tells them apart.
MARGIN_POINTS = 5.0
MARGIN_OUTPUT = 10.0
# Tolerance of the live output distances (relative): the embeddings are float32, and 1 - cos
# of two near-identical sentences (about 0.014) loses digits; kernels differ by about 1e-7 in
# the cosine, 1e-5 of the distance. 1e-3 is a hundred times that and far below the effects
# read (several per cent).
TOLERANCE_OUTPUT = 1e-3
# Tolerance of the live accuracies against the file: one direct object (1/152 of them; 1/607
# of all role words is 0.16 points). Hidden states differ in the last bits between CPU
# kernels and a word near a tie of two roles could flip; on plain-C, AVX2 and AVX-512 kernels
# none did (every accuracy equal). A 1 % change of an overall accuracy (about 0.8 points)
# exceeds it, and the chapter reads effects of several points.
TOLERANCE = 0.007


@dataclass
class Setup:
    """The model, the long sentences with their silver arcs, the halves, the role words and
    the intact model's states and frozen probes."""

    model: nn.Module
    tokenizer: object
    words: list[list[str]]
    relations: list[list[str]]
    arcs: tuple[torch.Tensor, list[str], list[int]]
    pick: list[int]
    report: list[int]
    train_words: list[tuple[int, int]]
    test_words: list[tuple[int, int]]
    frozen: list[object]
    intact: dict[str, torch.Tensor]
    means: torch.Tensor  # (L, H, D_head): each head's mean output on the selection half
    items: list[tuple[str, str, str, str]]  # the output test's role-swap pairs
    intact_out: dict[str, torch.Tensor]  # their distances in the intact model

    @property
    def train_y(self) -> list[str]:
        return [self.relations[i][j] for i, j in self.train_words]

    @property
    def test_y(self) -> list[str]:
        return [self.relations[i][j] for i, j in self.test_words]

    @property
    def shape(self) -> tuple[int, int]:
        return self.model.config.num_hidden_layers, self.model.config.num_attention_heads


def knockout_states(
    model: nn.Module,
    tokenizer: object,
    word_lists: Sequence[Sequence[str]],
    heads: Sequence[tuple[int, int]],
    means: torch.Tensor | None = None,
) -> list[torch.Tensor]:
    """Every layer's state of every word, with `heads` switched off inside each layer,
    before the output projection: their outputs times 0, or with `means` (L, H, D_head)
    each replaced by its mean output. Nothing else changes."""
    with knockout.ablated(model, heads, means):
        return probes.word_states(model, tokenizer, word_lists)


def setup(
    model: nn.Module | None = None, tokenizer: object = None, silver: list | None = None
) -> Setup:
    """Everything the runs share; pass the chapter's model and parsed sentences to reuse them."""
    if model is None:
        model, tokenizer = bert.load()
    if silver is None:
        silver = syntax.parse(syntax.load_parser(), LONG_SENTENCES)
    words = [list(s.words) for s in silver]
    relations = [list(s.relations) for s in silver]
    maps = [m for _, m in bert.batch_attention_maps(model, tokenizer, words, words=True)]
    arcs = arc_hits(maps, silver)
    pick, report = statistics.split_halves(len(silver), seed=SPLIT_SEED)
    train_words = roles.role_words(relations, pick)
    test_words = roles.role_words(relations, report)
    states = probes.word_states(model, tokenizer, words)
    means = knockout.head_means(model, tokenizer, [words[i] for i in pick])
    items = roles.role_swaps(N_ITEMS, ITEM_SEED)
    s = Setup(model, tokenizer, words, relations, arcs, pick, report, train_words, test_words,
              [], {}, means, items, {})  # fmt: skip
    s.frozen = probes.fit_by_layer(knockout.gather(states, train_words), s.train_y)
    s.intact = read(s, ())
    s.intact_out = output(s, ())
    return s


def read(
    s: Setup, heads: Sequence[tuple[int, int]], ablation: str = "zero"
) -> dict[str, torch.Tensor]:
    """The role probes' hits (frozen and refitted) with `heads` switched off
    (`ablation`: `"zero"` or `"mean"`)."""
    states = knockout_states(s.model, s.tokenizer, s.words, heads, _means(s, ablation))
    return knockout.read_roles(
        knockout.gather(states, s.train_words), s.train_y,
        knockout.gather(states, s.test_words), s.test_y, s.frozen,
    )  # fmt: skip


def output(
    s: Setup, heads: Sequence[tuple[int, int]], ablation: str = "zero"
) -> dict[str, torch.Tensor]:
    """The output test with `heads` switched off: per role-swap pair, the distance of a
    sentence's embedding from its role swap's (`"swap"`) and from its other-object
    version's (`"sub"`)."""
    with knockout.ablated(s.model, heads, _means(s, ablation)):
        return knockout.swap_distances(s.model, s.tokenizer, s.items)


def _means(s: Setup, ablation: str) -> torch.Tensor | None:
    if ablation not in ABLATIONS:
        raise ValueError(f"ablation must be one of {ABLATIONS}, got {ablation!r}")
    return s.means if ablation == "mean" else None


def summary(s: Setup, hits: dict[str, torch.Tensor]) -> dict[str, dict[str, list[float]]]:
    """Per read-out, per role and overall, the accuracy at every layer."""
    return {name: knockout.accuracy_by_role(h, s.test_y) for name, h in hits.items()}


def out_summary(distances: dict[str, torch.Tensor]) -> dict[str, float]:
    """The output test's mean distances (`"swap"`, `"sub"`)."""
    return {k: float(v.mean()) for k, v in distances.items()}


def _interval(values: torch.Tensor, groups: Sequence[int] | None) -> list[float]:
    """`[mean, low95, high95, low90, high90]`: the mean and its bootstrap intervals."""
    return [float(values.mean()), *bootstrap_ci(values, groups),
            *bootstrap_ci(values, groups, level=0.90)]  # fmt: skip


def paired_drop(s: Setup, hits: dict[str, torch.Tensor]) -> dict[str, dict[str, list]]:
    """Per read-out, role and layer, `[change, low95, high95, low90, high90]` of the accuracy
    on the role's words against the intact model: the same words, resampled by sentence."""
    out: dict[str, dict[str, list]] = {}
    for name, h in hits.items():
        out[name] = {}
        for role in roles.ROLES:
            cols = [k for k, r in enumerate(s.test_y) if r == role]
            groups = [s.test_words[k][0] for k in cols]
            change = h[:, cols].double() - s.intact[name][:, cols].double()  # (L + 1, N_role)
            out[name][role] = [_interval(c, groups) for c in change]
    return out


def specificity(s: Setup, hits: dict[str, torch.Tensor]) -> dict[str, list]:
    """Per read-out and layer, `[difference, low95, high95, low90, high90]`: the direct
    objects' change minus the subjects', resampled by sentence (both roles' words of a sentence
    together). Negative: the objects lost more."""
    groups = [i for i, _ in s.test_words]
    out = {}
    for name, h in hits.items():
        change = h.double() - s.intact[name].double()  # (L + 1, N)
        rows = []
        for c in change:
            d, (ci95, ci90) = knockout.role_contrast_ci(c, s.test_y, groups, "dobj", "nsubj")
            rows.append([d, *ci95, *ci90])
        out[name] = rows
    return out


def output_change(s: Setup, distances: dict[str, torch.Tensor]) -> dict[str, list[float]]:
    """The output test's change against the intact model, in % of the intact mean distance,
    each `[change, low95, high95, low90, high90]` over the pairs: `"swap"` (negative: the
    embedding tells a sentence from its role swap less well), `"sub"` (the same for another
    object) and `"specific"` (swap's change minus sub's, pair by pair)."""
    pct = {k: 100 * (distances[k] - s.intact_out[k]) / s.intact_out[k].mean()
           for k in ("swap", "sub")}  # fmt: skip
    pct["specific"] = pct["swap"] - pct["sub"]
    return {k: _interval(v, None) for k, v in pct.items()}


def chosen_heads(s: Setup, relation: str, k: int) -> list[tuple[int, int]]:
    """The `k` best heads for `relation` on the selection half (by weight)."""
    return knockout.ranked_heads(*s.arcs, relation, s.pick)[:k]


def arm(committed: dict, relation: str, k: int, ablation: str = "zero") -> dict:
    """The committed run that switched off `relation`'s `k` best heads (`ablation`)."""
    return next(c for c in committed["chosen"] if c["relation"] == relation and c["k"] == k
                and c["ablation"] == ablation)  # fmt: skip


def controls(
    committed: dict, relation: str, k: int, kind: str = "matched", ablation: str = "zero"
) -> list[dict]:
    """The control runs of the arm that switched off `relation`'s `k` best heads, switched
    off the same way: for one head, the other heads of its layer (`"matched"`) or every
    other head that can reach the layer above it, i.e. of its layer and the layers under it
    (`"random"`), from the `single` part; for more, the drawn sets of that kind."""
    if kind not in ("matched", "random"):
        raise ValueError(f"kind must be 'matched' or 'random', got {kind!r}")
    chosen = arm(committed, relation, k, ablation)
    if k > 1:
        return [e for e in committed[kind] if e["relation"] == relation and e["k"] == k
                and e["ablation"] == ablation]  # fmt: skip
    (layer, head), = chosen["heads"]
    top = layer if kind == "random" else 0  # and the layers under it: those that reach
    return [e for e in committed["single"] if e["ablation"] == ablation
            and e["heads"][0] != [layer, head]
            and (e["heads"][0][0] == layer or e["heads"][0][0] < top)]  # fmt: skip


def change(committed: dict, result: dict, readout: str, role: str, layer: int) -> float:
    """Points of `role`'s accuracy that a run's `result` gained over the intact model."""
    return 100 * (result[readout][role][layer] - committed["intact"][readout][role][layer])


def _versus(own: float, values: list[float]) -> dict:
    """How an arm's change stands among its controls' (drops are negative): their median,
    largest drop (`worst`), how many drop as much (`as_large` of `n`) and the empirical
    p-value `(as_large + 1) / (n + 1)`, the arm's rank among them read as a test."""
    as_large = sum(v <= own for v in values)
    return {"median": float(np.median(values)), "worst": min(values), "as_large": as_large,
            "n": len(values), "p": (as_large + 1) / (len(values) + 1)}  # fmt: skip


def _decided(own: float, low: float, high: float, low90: float, high90: float,
             margin: float) -> dict:
    """A change with its intervals (95 %: `low`, `high`; 90 %), its `outcome` against
    `margin` (`mha_lib.analysis.differences.from_intervals`) and the smallest change
    the 95 % interval could have detected (`detectable`, for an outcome of "not detected")."""
    return {"own": own, "low": low, "high": high, "low90": low90, "high90": high90,
            "outcome": differences.from_intervals((low90, high90), (low, high), margin=margin),
            "detectable": differences.interval_detectable((low, high))}  # fmt: skip


def compare(
    committed: dict,
    relation: str,
    k: int,
    readout: str,
    layer: int,
    ablation: str = "zero",
    role: str | None = None,
) -> dict:
    """An arm against its controls at one layer, in points of `role`'s accuracy (default:
    the arm's relation): its change (`own`) with the paired intervals (`low`, `high`:
    95 %; `low90`, `high90`), its outcome (`_decided`), and per kind of control
    `_versus`."""
    role = relation if role is None else role
    chosen = arm(committed, relation, k, ablation)
    own = change(committed, chosen["result"], readout, role, layer)
    low, high, low90, high90 = (100 * v for v in chosen["drop"][readout][role][layer][1:])
    out: dict[str, object] = _decided(own, low, high, low90, high90, MARGIN_POINTS)
    for kind in ("matched", "random"):
        values = [change(committed, e["result"], readout, role, layer)
                  for e in controls(committed, relation, k, kind, ablation)]  # fmt: skip
        out[kind] = _versus(own, values)
    return out


def compare_output(
    committed: dict, relation: str, ablation: str = "zero", measure: str = "swap"
) -> dict:
    """The best `relation` head's change of the output test (`measure`: `"swap"`,
    `"sub"`) in % of the intact model's mean distance, with its intervals (`low`,
    `high`, `low90`, `high90`) and outcome against `MARGIN_OUTPUT`, beside the
    same change for the other heads of its layer (`"matched"`) and, since every head can
    reach the output, for every other head (`"all"`), switched off the same way
    (`_versus`)."""
    chosen = arm(committed, relation, 1, ablation)
    own, low, high, low90, high90 = chosen["output_change"][measure]
    intact = committed["intact_output"][measure]

    def pct(e: dict) -> float:
        return 100 * (e["output"][measure] - intact) / intact

    out: dict[str, object] = _decided(own, low, high, low90, high90, MARGIN_OUTPUT)
    out["matched"] = _versus(own, [pct(e) for e in controls(committed, relation, 1, "matched",
                                                             ablation)])  # fmt: skip
    others = [e for e in committed["single"] if e["ablation"] == ablation
              and e["heads"] != chosen["heads"]]  # fmt: skip
    out["all"] = _versus(own, [pct(e) for e in others])
    return out


def roles_at(
    committed: dict, relation: str, k: int, readout: str, layer: int, ablation: str = "zero"
) -> dict:
    """Every role's `compare` at one layer, and `"specificity"`: the direct objects'
    change minus the subjects' (points, intervals as in `compare`), each with its
    `outcome` against `MARGIN_POINTS` (`mha_lib.analysis.differences.
    from_intervals`: equivalent, different, within the margin, or not detected)."""
    out = {role: compare(committed, relation, k, readout, layer, ablation, role)
           for role in roles.ROLES}  # fmt: skip
    row = arm(committed, relation, k, ablation)["specificity"][readout][layer]
    out["specificity"] = _decided(*(100 * v for v in row), MARGIN_POINTS)
    return out


def first_layer_above(committed: dict, relation: str, k: int) -> int:
    """The first layer whose states come after every head the arm switched off."""
    return max(h[0] for h in arm(committed, relation, k)["heads"]) + 1


@dataclass
class Readings:
    """Every arm of the committed file read against its controls: `probes[relation, k,
    ablation, readout, where]` (`compare`), `roles[...]` (`roles_at`) at the
    first layer above the arm's heads (`where="next"`, `read_at`) and at the top
    (`"last"`), and `outputs[relation, ablation]` (`compare_output`, single heads)."""

    probes: dict[tuple, dict]
    roles: dict[tuple, dict]
    outputs: dict[tuple, dict]
    read_at: dict[tuple[str, int], int]


def readings(committed: dict) -> Readings:
    """`Readings` of every arm (single heads both ways, sets of three zeroed)."""
    layers = committed["config"]["layers"]
    r = Readings({}, {}, {}, {})
    for relation in RELATIONS:
        for k in SIZES:
            r.read_at[relation, k] = first_layer_above(committed, relation, k)
            for ablation in ABLATIONS if k == 1 else ("zero",):
                if k == 1:
                    r.outputs[relation, ablation] = compare_output(committed, relation, ablation)
                for readout in ("frozen", "refit"):
                    for where, layer in (("next", r.read_at[relation, k]), ("last", layers)):
                        key = (relation, k, ablation, readout, where)
                        r.probes[key] = compare(committed, relation, k, readout, layer, ablation)
                        r.roles[key] = roles_at(committed, relation, k, readout, layer, ablation)
    return r


def head_names(committed: dict, relation: str, k: int) -> str:
    """The heads an arm switched off, as the book names them: `"2-0, 3-8, 2-1"`."""
    return ", ".join(f"{h[0]}-{h[1]}" for h in arm(committed, relation, k)["heads"])


def glue_values(committed: dict, r: Readings) -> dict[str, float | str]:
    """The numbers chapter 5 part 3 glues, by key: `ko_{relation}{k}[_mean]_{readout}_{where}`
    (the change of the arm's role, points; `_loss` its negative; `_low90`/`_high90` its
    90 % interval, the equivalence test's; `_detectable` the smallest change its 95 % interval
    detects), with `_nsubj`/`_pobj` (the other roles), `_spec`/`_spec_low`/
    `_spec_high`/`_spec_detectable` (specificity, 90 % interval) and per control kind
    `_{kind}_worst`/`_worst_loss`/`_as_large`/`_n`; and
    `ko_{relation}1[_mean]_out` (the output test, % of the intact distance) with `_loss`,
    `_sub`, `_low`, `_high`, `_matched_as_large`, `_all_as_large`; the heads' names,
    the read layers, the counts of controls, pairs and draws, and the margins."""
    out: dict[str, float | str] = {
        "ko_obj_head": head_names(committed, "dobj", 1), "ko_obj_layer": r.read_at["dobj", 1],
        "ko_subj_head": head_names(committed, "nsubj", 1),
        "ko_subj3_heads": head_names(committed, "nsubj", 3),
        "ko_subj3_layer": r.read_at["nsubj", 3], "ko_k": max(SIZES),
        "ko_n_heads_out": r.outputs["dobj", "zero"]["all"]["n"],
        "ko_n_reach": r.probes["dobj", 1, "zero", "frozen", "next"]["random"]["n"],
        "ko_intact_swap": committed["intact_output"]["swap"],
        "ko_margin_points": committed["config"]["margin_points"],
        "ko_margin_output": committed["config"]["margin_output"],
        "ko_n_items": committed["config"]["items"], "ko_draws": committed["config"]["draws"],
    }  # fmt: skip
    for (relation, ablation), o in r.outputs.items():
        tag = f"ko_{relation}1" + ("" if ablation == "zero" else "_mean") + "_out"
        sub = compare_output(committed, relation, ablation, "sub")["own"]
        out.update({tag: o["own"], f"{tag}_loss": -o["own"], f"{tag}_sub": sub,
                    f"{tag}_low": o["low"], f"{tag}_high": o["high"],
                    f"{tag}_matched_as_large": o["matched"]["as_large"],
                    f"{tag}_all_as_large": o["all"]["as_large"]})  # fmt: skip
    for (relation, k, ablation, readout, where), v in r.probes.items():
        key = f"ko_{relation}{k}" + ("" if ablation == "zero" else "_mean") + f"_{readout}_{where}"
        out.update({key: v["own"], f"{key}_loss": -v["own"], f"{key}_low90": v["low90"],
                    f"{key}_high90": v["high90"], f"{key}_detectable": v["detectable"]})
        for kind in ("matched", "random"):
            c = v[kind]
            tag = f"{key}_{kind}"
            out.update({f"{tag}_worst": c["worst"], f"{tag}_worst_loss": -c["worst"],
                        f"{tag}_as_large": c["as_large"], f"{tag}_n": c["n"]})  # fmt: skip
        at = r.roles[relation, k, ablation, readout, where]
        spec = at["specificity"]
        out.update({f"{key}_spec": spec["own"], f"{key}_spec_low": spec["low90"],
                    f"{key}_spec_high": spec["high90"],
                    f"{key}_spec_detectable": spec["detectable"]})  # fmt: skip
        for role in ("nsubj", "pobj"):
            out.update({f"{key}_{role}": at[role]["own"], f"{key}_{role}_loss": -at[role]["own"]})
    return out


def strip_values(committed: dict, layer: int) -> dict[str, dict]:
    """The chapter's strip plots, per panel and column: the other heads' values and the best
    direct-object and subject heads' (`own`, in `RELATIONS` order). `"probe"`: the
    direct objects' change (points) in `layer` for every head that can reach it (its layer
    and those under it), per `(readout, ablation)` (the frozen probe's first, zeroed before
    mean-ablated); `"output"`: every head's change of the distance to the role swap (% of the
    intact model's), per ablation."""
    mine = [arm(committed, rel, 1)["heads"] for rel in RELATIONS]
    base = committed["intact_output"]["swap"]
    probe, out = {}, {}
    for ablation in ABLATIONS:
        single = [e for e in committed["single"] if e["ablation"] == ablation]
        reach = [e for e in single if e["heads"][0][0] < layer and e["heads"] not in mine]
        best = [arm(committed, rel, 1, ablation) for rel in RELATIONS]
        for readout in ("frozen", "refit"):
            probe[readout, ablation] = {
                kind: [change(committed, e["result"], readout, "dobj", layer) for e in runs]
                for kind, runs in (("others", reach), ("own", best))
            }
        out[ablation] = {
            kind: [100 * (e["output"]["swap"] - base) / base for e in runs]
            for kind, runs in (("others", [e for e in single if e["heads"] not in mine]),
                               ("own", best))
        }  # fmt: skip
    probe = {(ro, ab): probe[ro, ab] for ro in ("frozen", "refit") for ab in ABLATIONS}
    return {"probe": probe, "output": out}


WORDS = {"zero": "zeroed", "mean": "mean-ablated", "frozen": "frozen", "refit": "refitted"}


def _with_ci(v: dict, ends: tuple[str, str] = ("low", "high")) -> str:
    """A change and its interval for a table (points, or %): `"-14.5 [-20.2, -9.2]"`."""
    return f"{v['own']:+.1f} [{v[ends[0]]:+.1f}, {v[ends[1]]:+.1f}]"


def table_rows(committed: dict, r: Readings) -> dict[str, list[list[str]]]:
    """The chapter's two tables of the single heads, a row per head and ablation (and
    read-out), in `RELATIONS` order: `"roles"`, in the first layer above the head, each
    role's change [95 %], the specificity [90 %] and how many of the other heads that can
    reach that layer take as much from the head's role; `"output"`, the changes of the
    distances to the role swap and to another object [95 %] and how many heads of its layer,
    and of the model, shrink the first as much."""
    roles, output = [], []
    for rel in RELATIONS:
        name = head_names(committed, rel, 1)
        for ab in ABLATIONS:
            for ro in ("frozen", "refit"):
                at, v = r.roles[rel, 1, ab, ro, "next"], r.probes[rel, 1, ab, ro, "next"]
                roles.append([name, WORDS[ab], WORDS[ro],
                              *(_with_ci(at[x]) for x in ("dobj", "nsubj", "pobj")),
                              _with_ci(at["specificity"], ("low90", "high90")),
                              f"{v['random']['as_large']} / {v['random']['n']}"])  # fmt: skip
            swap, sub = r.outputs[rel, ab], compare_output(committed, rel, ab, "sub")
            output.append([name, WORDS[ab], _with_ci(swap), _with_ci(sub),
                           *(f"{swap[k]['as_large']} / {swap[k]['n']}"
                             for k in ("matched", "all"))])  # fmt: skip
    return {"roles": roles, "output": output}


@dataclass(frozen=True)
class Live:
    """What a page recomputes for `live_checks`: the setup (its intact model) and the
    best direct-object head switched off both ways (`dobj[ablation]`: `read` with it;
    `dobj_out[ablation]`: `output`)."""

    setup: Setup
    dobj: dict[str, dict[str, torch.Tensor]]
    dobj_out: dict[str, dict[str, torch.Tensor]]


def live_checks(live: Live, committed: dict) -> list[Check]:
    """The intact model's role accuracies and output distances, the heads chosen, and the best
    direct-object head switched off both ways (`Live`), against the file."""
    s, dobj, dobj_out = live.setup, live.dobj, live.dobj_out
    live_intact = summary(s, s.intact)
    head = chosen_heads(s, "dobj", 1)
    checks = [
        Check(f"heads chosen for {c['relation']} (k = {c['k']}): layers and heads",
              [v for lh in chosen_heads(s, c["relation"], c["k"]) for v in lh],
              [v for lh in c["heads"] for v in lh], 0)
        for c in committed["chosen"]
    ]  # fmt: skip
    checks.append(Check("the best direct-object head", list(head[0]),
                        arm(committed, "dobj", 1)["heads"][0], 0))  # fmt: skip
    name = f"head {head[0][0]}-{head[0][1]}"
    for readout in ("frozen", "refit"):
        for role in ("all", "dobj", "nsubj"):
            checks.append(Check(f"intact model, {readout} probe, {role}: accuracy per layer",
                                live_intact[readout][role], committed["intact"][readout][role],
                                TOLERANCE))  # fmt: skip
    for ablation in ABLATIONS:
        off = summary(s, dobj[ablation])
        entry = arm(committed, "dobj", 1, ablation)
        for readout in ("frozen", "refit"):
            for role in ("all", "dobj", "nsubj"):
                checks.append(Check(f"{name} off ({ablation}), {readout} probe, {role}: "
                                    "accuracy per layer", off[readout][role],
                                    entry["result"][readout][role], TOLERANCE))  # fmt: skip
        for measure, value in out_summary(dobj_out[ablation]).items():
            checks.append(Check(f"{name} off ({ablation}), output: mean {measure} distance",
                                value, entry["output"][measure], TOLERANCE_OUTPUT,
                                relative=True))  # fmt: skip
    for measure, value in out_summary(s.intact_out).items():
        checks.append(Check(f"intact model, output: mean {measure} distance", value,
                            committed["intact_output"][measure], TOLERANCE_OUTPUT,
                            relative=True))  # fmt: skip
    return checks


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(__doc__, NAME, processes=None, threads=2, argv=argv)
    with threads(args.threads):
        _run(args)


def run_one(
    s: Setup, heads: Sequence[tuple[int, int]], ablation: str, with_output: bool = True
) -> dict:
    """One run: the probes' accuracies and (`with_output`) the output test's distances."""
    out = {"heads": [list(h) for h in heads], "ablation": ablation,
           "result": summary(s, read(s, heads, ablation))}  # fmt: skip
    if with_output:
        out["output"] = out_summary(output(s, heads, ablation))
    return out


def _run(args: argparse.Namespace) -> None:
    torch.manual_seed(0)
    start = time.perf_counter()
    made = provenance()
    s = setup()
    num_layers, num_heads = s.shape
    result: dict[str, object] = {
        "config": {"relations": list(RELATIONS), "sizes": list(SIZES), "draws": DRAWS,
                   "split_seed": SPLIT_SEED, "draw_seed": DRAW_SEED,
                   "ablations": list(ABLATIONS), "items": N_ITEMS, "item_seed": ITEM_SEED,
                   "margin_points": MARGIN_POINTS, "margin_output": MARGIN_OUTPUT,
                   "roles": list(roles.ROLES), "layers": num_layers, "heads": num_heads,
                   "train_words": len(s.train_words), "test_words": len(s.test_words),
                   "test_sentences": len(s.report)},
        "intact": summary(s, s.intact),
        "intact_output": out_summary(s.intact_out),
    }  # fmt: skip
    single = []
    for ablation in ABLATIONS:
        for layer in range(num_layers):
            for head in range(num_heads):
                single.append(run_one(s, [(layer, head)], ablation))
            print(f"single heads of layer {layer} ({ablation}): "
                  f"{time.perf_counter() - start:.0f} s", flush=True)  # fmt: skip
    result["single"] = single
    chosen, matched, drawn = [], [], []
    for relation in RELATIONS:
        ranking = knockout.ranked_heads(*s.arcs, relation, s.pick)
        for k in SIZES:
            heads = ranking[:k]
            for ablation in ABLATIONS if k == 1 else ("zero",):
                hits = read(s, heads, ablation)
                distances = output(s, heads, ablation)
                chosen.append({"relation": relation, "k": k, "ablation": ablation,
                               "heads": [list(h) for h in heads], "result": summary(s, hits),
                               "drop": paired_drop(s, hits),
                               "specificity": specificity(s, hits),
                               "output": out_summary(distances),
                               "output_change": output_change(s, distances)})  # fmt: skip
                if k == 1:
                    continue  # its controls are in "single"
                below = max(h[0] for h in heads) + 1  # heads that can reach the read layer
                for kind, sets, out in (
                    ("matched", knockout.matched_draws(heads, num_heads, DRAWS, DRAW_SEED),
                     matched),
                    ("random", knockout.random_draws(k, num_layers, num_heads, DRAWS, heads,
                                                     DRAW_SEED, below=below), drawn),
                ):  # fmt: skip
                    for d, other in enumerate(sets):
                        out.append({"relation": relation, "k": k, "draw": d,
                                    **run_one(s, other, ablation, with_output=False)})  # fmt: skip
                    print(f"{relation}, {k} heads, {kind} ({ablation}): "
                          f"{time.perf_counter() - start:.0f} s", flush=True)  # fmt: skip
    result.update(chosen=chosen, matched=matched, random=drawn)
    result = rounded(result, decimals=6)  # type: ignore[assignment]
    save_results(args.out, result, {name: made for name in result})  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
