"""The studies too slow for a chapter: each module is one, whose results the book commits.

A study module holds its whole design in one place: the grid it runs (configurations,
seeds), what each run records, and the interface every study shares
(`Study`): `NAME` (its file in `scripts/results`),
`PARTS` (the parts `--only` reruns), `run_one` (the runner for one item), `main` (its
command line, `python -m mha_lib.experiments.studies.<name>`), and
`live_checks(live, committed)`: what a run retrained now must share with the file, within
tolerances that hold on any CPU (`mha_lib.experiments.reproduce`). Chapters and
`tests/results/test_committed_results.py` import a study to retrain a sample and verify it.

Every module of this package is one study, and this package is the only list of them:
`names` finds them, `load` imports one, `all_studies` every one.

- `ch3_coupling`: does removing one head change what the others learn?
- `ch4_sweep`: the number of heads at a fixed width, several seeds;
- `ch4_planted`: a match planted in a few of 512 features, one head against many;
- `ch4_onekey`: where one head's errors fall on one-key recall, against two and four;
- `ch5_knockout`: does the model need its parsing heads? Each switched off, against its
  peers;
- `ch6_toy`: which heads of the toy model matter, and what pruning costs;
- `ch6_pretrained`: the same for the pretrained model, on the word-sense test;
- `ch7_init`: which too-large initial weights hurt a head, and why, in one layer;
- `ch7_deep`: where such weights make the gradients explode, and whether that or the
  saturated softmax leaves the heads dead;
- `ch9_sharing`: heads that share their keys and values, or their query;
- `ch9_sinks`: what MiniLM's sink heads take from `[CLS]`/`[SEP]`, and when a causal
  toy grows a sink (a positive control beside it).
- `replicate`: the real-model verdicts on MiniLM and on a random model of BERT-base's
  shape, the negative control (`mha_lib.replicate` runs them on any BERT-family model).
"""

import importlib
import pkgutil
from typing import cast

from mha_lib.experiments.reproduce import Study


def names() -> tuple[str, ...]:
    """Every study's module name, sorted: the modules of this package."""
    return tuple(sorted(m.name for m in pkgutil.iter_modules(__path__)))


def load(name: str) -> Study:
    """The study `name` (a module of this package), imported."""
    if name not in names():
        raise ValueError(f"no study {name!r}; the studies are {list(names())}")
    return cast(Study, importlib.import_module(f"{__name__}.{name}"))


def all_studies() -> dict[str, Study]:
    """Every study by its module name, in `names`' order."""
    return {name: load(name) for name in names()}
