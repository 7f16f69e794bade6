"""Measuring heads and models: head statistics, probes, evaluations, geometry, costs.

Functions here read attention maps or model outputs and return numbers; they never change
a model (that is :mod:`mha_lib.bert` and :mod:`mha_lib.pruning`).
"""
