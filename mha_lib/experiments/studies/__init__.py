"""The studies too slow for a chapter: each module is one, whose results the book commits.

A study module holds its whole design in one place: the grid it runs (configurations,
seeds), the runner for one item, what each run records, ``NAME`` (its file in
``scripts/results``), ``main`` (its command line, which ``scripts/<name>.py`` calls), and
``live_checks``: what a run retrained now must share with the file, within tolerances that
hold on any CPU (:mod:`mha_lib.experiments.reproduce`). Chapters and
``tests/results/test_committed_results.py`` import a study to retrain a sample and verify it.

- :mod:`~.ch3_coupling`: does removing one head change what the others learn?
- :mod:`~.ch4_sweep`: the number of heads at a fixed width, several seeds;
- :mod:`~.ch4_planted`: a match planted in a few of 512 features, one head against many;
- :mod:`~.ch5_knockout`: does the model need its parsing heads? Each switched off, against its
  peers;
- :mod:`~.ch6_toy`: which heads of the toy model matter, and what pruning costs;
- :mod:`~.ch6_pretrained`: the same for the pretrained model, on the word-sense test;
- :mod:`~.ch7_init`: which too-large initial weights hurt a head, and why, in one layer;
- :mod:`~.ch7_deep`: where such weights make the gradients explode, and whether that or the
  saturated softmax leaves the heads dead;
- :mod:`~.ch9_sharing`: heads that share their keys and values, or their query;
- :mod:`~.ch9_sinks`: what MiniLM's sink heads take from ``[CLS]``/``[SEP]``, and when a causal
  toy grows a sink (a positive control beside it).
"""
