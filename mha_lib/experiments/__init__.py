"""Experiments the book trains itself: synthetic tasks, a toy transformer, seeded training,
head health, and committed results with provenance and live checks (:mod:`~.reproduce`)."""
