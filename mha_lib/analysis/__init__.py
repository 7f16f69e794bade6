"""Measuring heads and models: head statistics, probes, evaluations, geometry, costs.

Functions here read attention maps or model outputs and return numbers; they never change
a model (that is :mod:`mha_lib.bert` and :mod:`mha_lib.pruning`). A collection of
independent tools, imported module by module:

- :mod:`~mha_lib.analysis.head_stats`: entropy, where a head's mass goes, head distances;
- :mod:`~mha_lib.analysis.attention_range`: how far heads look, against a uniform head;
- :mod:`~mha_lib.analysis.geometry`: random dot products and cosines, sharpness of maps;
- :mod:`~mha_lib.analysis.softmax_stats`: how peaked a softmax is, its gradient;
- :mod:`~mha_lib.analysis.syntax_probe`, :mod:`~mha_lib.analysis.silver_syntax`: heads
  against known and parsed dependencies; :mod:`~mha_lib.analysis.knockout`: whether the layers
  above a parsing head still know a noun's role when the head is switched off;
- :mod:`~mha_lib.analysis.coref_probe`, :mod:`~mha_lib.analysis.similarity_probe`: items
  whose answer is known by construction;
- :mod:`~mha_lib.analysis.heldout`: choose on one half, report on the other, with intervals;
- :mod:`~mha_lib.analysis.bootstrap`: the one bootstrap interval every quoted score uses;
- :mod:`~mha_lib.analysis.differences`: a difference shown, shown absent within a margin
  (equivalence tests), or not detected at this power; corrections for many tests at once;
- :mod:`~mha_lib.analysis.sense_eval`: the word-sense test that pruning is measured on;
- :mod:`~mha_lib.analysis.cost`: parameters, FLOPs, map bytes; and
  :mod:`~mha_lib.analysis.timing`: timing several ways of computing the same thing fairly.
"""
