"""Input checks shared by the library.

Every public function validates its tensors up front, so a wrong shape fails
with a message naming the argument instead of broadcasting silently or
producing NaN three layers later.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def check_tensor(x: object, name: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    return x


def check_same_shape(a: torch.Tensor, b: torch.Tensor, name_a: str, name_b: str) -> None:
    """Two tensors read element by element must line up: no broadcasting between them."""
    if a.shape != b.shape:
        raise ValueError(
            f"{name_a} and {name_b} must have the same shape, got {tuple(a.shape)} and "
            f"{tuple(b.shape)}"
        )


def check_positive_int(name: str, value: object) -> int:
    """`value` if it is a positive int (not a bool), else a ValueError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def check_batches(batches: object, name: str = "batches") -> None:
    """A ValueError naming `name` unless `batches` is a non-empty list (or other sequence)."""
    if isinstance(batches, str | bytes) or not isinstance(batches, Sequence) or not batches:
        raise ValueError(f"{name} must be a non-empty list of batches")


def check_floating(x: torch.Tensor, name: str) -> None:
    check_tensor(x, name)
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")


def check_rank(x: torch.Tensor, rank: int, name: str, layout: str) -> None:
    if x.dim() != rank:
        raise ValueError(f"{name} must have {rank} dimensions {layout}, got shape {tuple(x.shape)}")


def check_maps(maps: torch.Tensor, name: str = "maps") -> int:
    """`T` of attention maps `(..., T, T)` with `T > 0`, else an error naming `name`."""
    check_floating(maps, name)
    if maps.dim() < 2 or maps.shape[-1] != maps.shape[-2] or maps.shape[-1] == 0:
        raise ValueError(f"{name} must have shape (..., T, T) with T > 0, got {tuple(maps.shape)}")
    return maps.shape[-1]


def check_mask_dtype(mask: torch.Tensor, name: str, like: torch.Tensor) -> None:
    """A mask is boolean, or floating with the dtype of the scores it is added to."""
    check_tensor(mask, name)
    if mask.dtype == torch.bool:
        return
    if not mask.is_floating_point():
        raise TypeError(f"{name} must be bool or floating point, got dtype {mask.dtype}")
    if mask.dtype != like.dtype:
        raise TypeError(
            f"{name} is {mask.dtype} but the attention scores are {like.dtype}; "
            "a float mask must have the same dtype"
        )


def check_broadcastable(mask: torch.Tensor, target: tuple[int, ...], name: str) -> None:
    """Allow only NumPy-style broadcasting to `target`, without adding dimensions beyond it."""
    shape = tuple(mask.shape)
    if len(shape) > len(target) or any(
        m not in (1, t) for m, t in zip(reversed(shape), reversed(target), strict=False)
    ):
        raise ValueError(
            f"{name} has shape {shape}, which does not broadcast to the "
            f"attention scores' shape {target}"
        )
