"""Experiments the book trains itself, and the committed results that come out of them.

A collection imported module by module:

- `tasks`: synthetic tasks with known answers that need attention;
- `toy_transformer`: a small pre-norm encoder built on
  `MultiHeadAttention`;
- `training`: a seeded, deterministic training loop (`Config`);
- `floors`: what a model scores without looking the key up;
- `coupling`, `head_health`,
  `planted_match`: the probes of chapters 3, 7 and 4;
- `studies`: the studies too slow for a chapter, one module each;
- `reproduce`: provenance and live checks of committed results.
"""
