"""Synthetic tasks with known answers that a model can only solve by attending.

Every task draws its batches from a `torch.Generator`, so a seed fixes the
data. Inputs are `(B, T)` token ids; targets are `(B, T)` class ids with
`-100` at positions that have no answer (the `ignore_index` of
`torch.nn.functional.cross_entropy`).

- `lookback`: copy the token `offset` positions back. One head, one
  fixed position: the trivial task the training tests use.
- `associative_recall`: a context of (key, value) tokens, then query
  tokens naming one key; answer that key's value. One content-based lookup.
- `pair_recall`: the same context, but each query token names an
  *ordered pair* of keys (a, b) and the answer is the pair of values
  (value(a), value(b)), one of `num_values²` classes. Every answer needs two
  different positions at once, each in its own role, which is where one head
  has to squeeze two retrievals through a single softmax and a single value
  subspace.
- `absent_recall`: recall where a share of the queries name a key that is not in the
  context (answer: "absent"), so a head sometimes has nothing to fetch; optionally behind a
  start token that carries nothing (chapter 9's attention sinks).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

from mha_lib._checks import check_positive_int

IGNORE = -100


def _check_sample_args(batch_size: int, generator: torch.Generator) -> None:
    check_positive_int("batch_size", batch_size)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")


@dataclass(frozen=True)
class Lookback:
    """Answer at position `t` is the token at `t - offset` (none before `offset`)."""

    vocab_size: int
    seq_len: int
    offset: int

    def __post_init__(self) -> None:
        for name in ("vocab_size", "seq_len", "offset"):
            check_positive_int(name, getattr(self, name))
        if self.offset >= self.seq_len:
            raise ValueError(f"offset={self.offset} must be smaller than seq_len={self.seq_len}")

    @property
    def num_classes(self) -> int:
        return self.vocab_size

    @property
    def name(self) -> str:
        return f"lookback(offset={self.offset})"

    def sample(
        self, batch_size: int, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return `(inputs (B, T), targets (B, T))`."""
        _check_sample_args(batch_size, generator)
        shape = (batch_size, self.seq_len)
        inputs = torch.randint(self.vocab_size, shape, generator=generator)  # (B, T)
        targets = torch.full(shape, IGNORE, dtype=torch.long)  # (B, T)
        targets[:, self.offset :] = inputs[:, : -self.offset]
        return inputs, targets


@dataclass(frozen=True)
class KeyValueRecall:
    """Context of `num_pairs` (key, value) tokens, then `num_queries` query tokens.

    Token ids: `key * num_values + value` for a context token (keys are
    distinct within a sequence); `num_keys * num_values + i` for a query
    naming the `i`-th ordered tuple of `keys_per_query` distinct keys.
    The answer at a query position encodes the named keys' values in base
    `num_values`, first key most significant.
    """

    num_keys: int
    num_values: int
    num_pairs: int
    num_queries: int
    keys_per_query: int = 1

    def __post_init__(self) -> None:
        for name in ("num_keys", "num_values", "num_pairs", "num_queries", "keys_per_query"):
            check_positive_int(name, getattr(self, name))
        if self.num_pairs > self.num_keys:
            raise ValueError(
                f"num_pairs={self.num_pairs} cannot exceed num_keys={self.num_keys} "
                "(keys are distinct within a sequence)"
            )
        if self.keys_per_query > self.num_pairs:
            raise ValueError(
                f"keys_per_query={self.keys_per_query} cannot exceed num_pairs={self.num_pairs}"
            )

    @property
    def tuples(self) -> list[tuple[int, ...]]:
        """The ordered key tuples a query can name, in token order."""
        return list(itertools.permutations(range(self.num_keys), self.keys_per_query))

    @property
    def vocab_size(self) -> int:
        return self.num_keys * self.num_values + len(self.tuples)

    @property
    def num_classes(self) -> int:
        return self.num_values**self.keys_per_query

    @property
    def seq_len(self) -> int:
        return self.num_pairs + self.num_queries

    @property
    def name(self) -> str:
        kind = "pair_recall" if self.keys_per_query == 2 else "recall"
        return f"{kind}(K={self.num_keys}, V={self.num_values}, N={self.num_pairs})"

    def sample(
        self, batch_size: int, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return `(inputs (B, T), targets (B, T))`, `T = num_pairs + num_queries`."""
        _check_sample_args(batch_size, generator)
        b, n, q, r = batch_size, self.num_pairs, self.num_queries, self.keys_per_query
        nk, nv = self.num_keys, self.num_values
        keys = torch.rand(b, nk, generator=generator).argsort(dim=1)[:, :n]  # (B, N)
        values = torch.randint(nv, (b, n), generator=generator)  # (B, N)
        context = keys * nv + values  # (B, N)
        # Each query names r distinct context slots, in order.
        slots = torch.rand(b, q, n, generator=generator).argsort(dim=2)[..., :r]  # (B, Q, r)
        asked = keys.gather(1, slots.reshape(b, q * r)).view(b, q, r)  # (B, Q, r)
        answers = values.gather(1, slots.reshape(b, q * r)).view(b, q, r)  # (B, Q, r)
        key_place = nk ** torch.arange(r - 1, -1, -1)  # (r,)
        value_place = nv ** torch.arange(r - 1, -1, -1)  # (r,)
        query_ids = self._tuple_index()[(asked * key_place).sum(-1)]  # (B, Q)
        inputs = torch.cat([context, nk * nv + query_ids], dim=1)  # (B, N + Q)
        targets = torch.cat(
            [torch.full((b, n), IGNORE, dtype=torch.long), (answers * value_place).sum(-1)], dim=1
        )  # (B, N + Q)
        return inputs, targets

    def answer_positions(self, inputs: torch.Tensor) -> torch.Tensor:
        """For each position of `inputs` `(B, T)`, the context positions of the keys its
        query names, `(B, T, keys_per_query)` in the query's order; -1 at context positions.

        These are the positions a head must attend to in order to read the answer.
        """
        n, nk, nv = self.num_pairs, self.num_keys, self.num_values
        if inputs.dim() != 2 or inputs.shape[1] != self.seq_len:
            raise ValueError(
                f"inputs must have shape (B, {self.seq_len}), got {tuple(inputs.shape)}"
            )
        keys = inputs[:, :n] // nv  # (B, N), the key stored at each context position
        tuples = torch.tensor(self.tuples, dtype=torch.long)  # (num_tuples, r)
        named = tuples[inputs[:, n:] - nk * nv]  # (B, Q, r), keys named by each query
        match = named.unsqueeze(-1) == keys[:, None, None, :]  # (B, Q, r, N)
        if not bool(match.any(-1).all()):
            raise ValueError("a query names a key that is not in its context")
        found = match.long().argmax(-1)  # (B, Q, r)
        none = torch.full((inputs.shape[0], n, self.keys_per_query), -1, dtype=torch.long)
        return torch.cat([none, found], dim=1)  # (B, T, r)

    def _tuple_index(self) -> torch.Tensor:
        """Lookup from a tuple written in base `num_keys` to its query index."""
        index = torch.full((self.num_keys**self.keys_per_query,), -1, dtype=torch.long)
        for i, keys in enumerate(self.tuples):
            index[sum(k * self.num_keys ** (len(keys) - 1 - j) for j, k in enumerate(keys))] = i
        return index


def lookback(vocab_size: int = 8, seq_len: int = 8, offset: int = 1) -> Lookback:
    """The trivial task: repeat the token `offset` steps back."""
    return Lookback(vocab_size, seq_len, offset)


def associative_recall(
    num_keys: int = 8, num_values: int = 8, num_pairs: int = 8, num_queries: int = 4
) -> KeyValueRecall:
    """One content-based lookup per query: answer the value stored under the named key."""
    return KeyValueRecall(num_keys, num_values, num_pairs, num_queries, keys_per_query=1)


def pair_recall(
    num_keys: int = 8, num_values: int = 8, num_pairs: int = 8, num_queries: int = 4
) -> KeyValueRecall:
    """Two lookups with different roles per query: answer (value(a), value(b))."""
    return KeyValueRecall(num_keys, num_values, num_pairs, num_queries, keys_per_query=2)


@dataclass(frozen=True)
class AbsentRecall:
    """Associative recall in which a share `absent` of the queries name a missing key.

    The context and the queries are `KeyValueRecall`'s (one key per query), drawn the
    same way; then each query, with probability `absent`, is replaced by one naming a key
    drawn uniformly from those *not* in its context, whose answer is the extra class
    `num_values` ("absent"). With `start_token` every sequence begins with one more token
    (id `vocab_size − 1`) that is the same everywhere and has no answer, like a language
    model's beginning-of-sequence token. With `absent = 0` and no start token the batches
    are `KeyValueRecall`'s, token for token.
    """

    num_keys: int
    num_values: int
    num_pairs: int
    num_queries: int
    absent: float = 0.5
    start_token: bool = False

    def __post_init__(self) -> None:
        base = self.recall  # checks the recall arguments
        if isinstance(self.absent, bool) or not isinstance(self.absent, int | float):
            raise TypeError(f"absent must be a number in [0, 1], got {self.absent!r}")
        if not 0 <= self.absent <= 1:
            raise ValueError(f"absent must be in [0, 1], got {self.absent!r}")
        if self.absent > 0 and base.num_pairs == base.num_keys:
            raise ValueError(
                f"absent={self.absent} needs num_keys > num_pairs (a key missing from the "
                f"context), got num_keys={self.num_keys}, num_pairs={self.num_pairs}"
            )
        if not isinstance(self.start_token, bool):
            raise TypeError(f"start_token must be a bool, got {self.start_token!r}")

    @property
    def recall(self) -> KeyValueRecall:
        """The plain recall task this one changes."""
        return KeyValueRecall(self.num_keys, self.num_values, self.num_pairs, self.num_queries)

    @property
    def vocab_size(self) -> int:
        return self.recall.vocab_size + int(self.start_token)

    @property
    def num_classes(self) -> int:
        return self.num_values + 1  # the values, and "absent"

    @property
    def seq_len(self) -> int:
        return self.recall.seq_len + int(self.start_token)

    @property
    def context_slots(self) -> int:
        """Positions before the first query: the start token, if any, and the pairs."""
        return self.num_pairs + int(self.start_token)

    @property
    def name(self) -> str:
        start = ", start token" if self.start_token else ""
        return (
            f"absent_recall(K={self.num_keys}, V={self.num_values}, N={self.num_pairs}, "
            f"absent={self.absent:g}{start})"
        )

    def sample(
        self, batch_size: int, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return `(inputs (B, T), targets (B, T))`, `T = [1 +] num_pairs + num_queries`."""
        _check_sample_args(batch_size, generator)
        inputs, targets = self.recall.sample(batch_size, generator)  # (B, N + Q) each
        b, n, nk, nv = batch_size, self.num_pairs, self.num_keys, self.num_values
        if self.absent > 0:
            q = self.num_queries
            keys = inputs[:, :n] // nv  # (B, N)
            present = torch.zeros(b, nk, dtype=torch.bool).scatter_(1, keys, True)  # (B, K)
            # a uniform draw among the missing keys: present keys are pushed above every draw
            scores = torch.rand(b, q, nk, generator=generator) + present[:, None, :]  # (B, Q, K)
            missing = scores.argmin(-1)  # (B, Q)
            swap = torch.rand(b, q, generator=generator) < self.absent  # (B, Q)
            queries = torch.where(swap, nk * nv + missing, inputs[:, n:])  # (B, Q)
            answers = torch.where(swap, torch.full_like(missing, nv), targets[:, n:])  # (B, Q)
            inputs = torch.cat([inputs[:, :n], queries], dim=1)
            targets = torch.cat([targets[:, :n], answers], dim=1)
        if self.start_token:
            start = torch.full((b, 1), self.vocab_size - 1, dtype=torch.long)  # (B, 1)
            inputs = torch.cat([start, inputs], dim=1)  # (B, 1 + N + Q)
            targets = torch.cat([torch.full((b, 1), IGNORE, dtype=torch.long), targets], dim=1)
        return inputs, targets


def absent_recall(
    num_keys: int = 16,
    num_values: int = 8,
    num_pairs: int = 8,
    num_queries: int = 4,
    absent: float = 0.5,
    start_token: bool = False,
) -> AbsentRecall:
    """Recall where a share `absent` of the queries have nothing to fetch (answer "absent")."""
    return AbsentRecall(num_keys, num_values, num_pairs, num_queries, absent, start_token)
