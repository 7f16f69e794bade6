"""Measuring heads and models: head statistics, probes, evaluations, geometry, costs.

Functions here read attention maps or model outputs and return numbers; they never change
a model (that is `mha_lib.bert` and `mha_lib.pruning`). A collection of
independent tools, imported module by module:

- `head_stats`: entropy, where a head's mass goes, head distances;
- `attention_range`: how far heads look, against a uniform head;
- `geometry`: random dot products and cosines, sharpness of maps;
- `softmax_stats`: how peaked a softmax is, its gradient;
- `syntax_probe`, `silver_syntax`: heads
  against known and parsed dependencies; `knockout`: whether the layers
  above a parsing head still know a noun's role when the head is switched off;
- `coref_probe`, `similarity_probe`: items
  whose answer is known by construction;
- `heldout`: choose on one half, report on the other, with intervals;
- `bootstrap`: the one bootstrap interval every quoted score uses;
- `differences`: a difference shown, shown absent within a margin
  (equivalence tests), or not detected at this power; corrections for many tests at once;
- `sense_eval`: the word-sense test that pruning is measured on;
- `cost`: parameters, FLOPs, map bytes; and
  `timing`: timing several ways of computing the same thing fairly.
"""
