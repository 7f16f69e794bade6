"""The one major version of transformers whose BERT internals mha_lib.bert reads."""

from __future__ import annotations

from importlib import metadata

SUPPORTED_MAJOR = 5


def check_transformers() -> None:
    """Raise ImportError if an installed transformers is not the supported major version.

    A missing transformers is not an error here: `mha_lib.bert.load` says how to
    install it when it is needed.
    """
    try:
        version = metadata.version("transformers")
    except metadata.PackageNotFoundError:
        return
    major = int(version.split(".")[0])
    if major != SUPPORTED_MAJOR:
        raise ImportError(
            f"mha_lib.bert reads the BERT modules of transformers {SUPPORTED_MAJOR}.x, but "
            f"transformers {version} is installed; install 'transformers>={SUPPORTED_MAJOR},"
            f"<{SUPPORTED_MAJOR + 1}' (pip install 'mha-lib[bert]')"
        )
