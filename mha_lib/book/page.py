"""What every chapter calls first and last: setup (seeded, offline, quiet), and glue.

Chapters must run the same way on the static site, a laptop and Binder, and their rendered
pages must carry no stderr noise. Everything that would differ or print is settled here,
once; the numbers a page's prose shows are glued from here (`put`).
"""

from __future__ import annotations

import os
import random
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def setup(seed: int = 0) -> None:
    """Seed every generator, stay offline, silence progress bars and library chatter."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ["TRANSFORMERS_VERBOSITY"] = "error"
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    os.environ["TQDM_DISABLE"] = "1"
    os.environ["TOKENIZERS_PARALLELISM"] = "false"

    # tqdm.auto warns when ipywidgets is absent, although the bars are disabled anyway.
    warnings.filterwarnings("ignore", message="IProgress not found", module="tqdm")

    import matplotlib as mpl
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    mpl.rcParams.update(
        {
            "figure.dpi": 110,
            "savefig.dpi": 110,
            "image.cmap": "viridis",
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.titleweight": "bold",
            # Okabe–Ito: distinguishable with the common colour-vision deficiencies.
            "axes.prop_cycle": mpl.cycler(
                color=[
                    "#0072B2",
                    "#E69F00",
                    "#009E73",
                    "#D55E00",
                    "#CC79A7",
                    "#56B4E9",
                    "#F0E442",
                    "#000000",
                ]
            ),
        }
    )


def device() -> torch.device:
    """The GPU when there is one (Colab), else the CPU: where chapters put the pretrained model.

    The small models the book trains stay on the CPU, where their committed results were made.
    """
    import torch

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def put(*pair: object, **values: object) -> None:
    """Glue measured values for the prose: `put("key", value)` or `put(key=value, ...)`.

    Tensors and NumPy scalars are glued as plain Python numbers (their repr cannot be
    formatted by `{glue:text}` roles); nothing is displayed. Glue numbers and names: the
    sentence around a value belongs in the page, where the catalogues translate it.
    """
    from myst_nb import glue

    if pair:
        if len(pair) != 2 or not isinstance(pair[0], str):
            raise TypeError("put takes a key and a value, or key=value pairs")
        values = {pair[0]: pair[1], **values}
    if not values:
        raise TypeError("put needs at least one value to glue")
    for name, value in values.items():
        glue(name, value.item() if hasattr(value, "item") else value, display=False)


def glue_cited(name: str, value: float, source: str) -> None:
    """Glue a number quoted from the literature (not measured here), naming its BibTeX key.

    Chapters glue measured values only; a figure reported by a paper is the one
    exception, and this call marks it as such (the book's tests check the key).
    """
    from myst_nb import glue

    if not isinstance(source, str) or not source.strip():
        raise ValueError("source must be the BibTeX key of the paper that reports the value")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"value must be a number, got {value!r}")
    glue(name, value, display=False)

