"""Measuring heads and models: what heads do, what layers hold, how sure a number is, its cost.

Functions here read attention maps or model outputs and return numbers; they never change
a model (that is `mha_lib.bert` and `mha_lib.pruning`). One module per question a reader
asks, imported module by module:

- `head_stats`: what each head does, in numbers: entropy, where its weight goes, how far it
  looks against a uniform head, how much it keeps for itself, how much it parks on the
  special tokens;
- `head_groups`: which heads are alike: distances between heads, and whether a layer's heads
  resemble each other more than chance;
- `geometry`: random queries and keys in many dimensions: cosines, scaled dot products, how
  sharp random attention is;
- `relations`: does some head point from a word to a related word (its syntactic head, the
  antecedent of a pronoun, a word of the same kind), against fixed offsets and word-only rules;
- `probes`: what a layer's states hold: linear probes with a control task, and the
  word-sense read-out that pruning is measured on;
- `knockout`: switch heads off, or take away what they fetch from the sinks, and measure what
  the layers above lose;
- `recall_errors`: where a toy recall model's errors fall, and where its heads looked;
- `statistics`: bootstrap intervals, and choosing a head on one half and reporting it on the
  other;
- `differences`: a difference shown, shown absent within a margin (equivalence tests), or not
  detected at this power; corrections for many tests at once;
- `cost`: parameters, FLOPs, attention-map bytes, and time (the one timing harness).

The items these run on (sentences with known dependencies, coreference and similarity frames,
the word-sense set, role swaps) are in `mha_lib.data`.
"""
