"""Experiments the book trains itself, and the committed results that come out of them.

A collection imported module by module:

- :mod:`~mha_lib.experiments.tasks`: synthetic tasks with known answers that need attention;
- :mod:`~mha_lib.experiments.toy_transformer`: a small pre-norm encoder built on
  :class:`~mha_lib.MultiHeadAttention`;
- :mod:`~mha_lib.experiments.training`: a seeded, deterministic training loop (``Config``);
- :mod:`~mha_lib.experiments.floors`: what a model scores without looking the key up;
- :mod:`~mha_lib.experiments.coupling`, :mod:`~mha_lib.experiments.head_health`,
  :mod:`~mha_lib.experiments.planted_match`: the probes of chapters 3, 7 and 4;
- :mod:`~mha_lib.experiments.studies`: the studies too slow for a chapter, one module each;
- :mod:`~mha_lib.experiments.reproduce`: provenance and live checks of committed results.
"""
