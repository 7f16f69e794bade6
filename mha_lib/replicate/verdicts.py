"""A row of the report's verdict table, in the claims ledger's words (book/claims.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

SUPPORTED = "supported"
NUANCED = "nuanced"
CONTRADICTED = "contradicted"
NOT_SUPPORTED = "not supported as stated"
NOT_TESTABLE = "not testable"
VERDICTS = (SUPPORTED, NUANCED, CONTRADICTED, NOT_SUPPORTED, NOT_TESTABLE)


@dataclass
class Row:
    """One claim measured on one model: its ledger number, the number that decides it, the
    baseline beside it and the verdict, with `detail` saying which part of the rule held.

    `trained_only` marks the claims that need training (a random model must fail them);
    `numbers` keeps the raw values for the JSON file and the tests.
    """

    number: str
    claim: str
    measured: str
    value: str
    baseline: str
    verdict: str
    detail: str = ""
    trained_only: bool = False
    numbers: dict[str, float | int | str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    @property
    def passes(self) -> bool:
        """Whether the model shows the claim's effect (supported or nuanced)."""
        return self.verdict in (SUPPORTED, NUANCED)

    def text(self) -> str:
        """The verdict as the ledger writes it: the class first, then what qualifies it."""
        return f"{self.verdict}: {self.detail}" if self.detail else self.verdict


def not_in(number: str, claim: str, why: str) -> Row:
    """A row whose measurement did not run (too slow for the budget, or not built yet)."""
    return Row(number, claim, "—", "—", "—", NOT_TESTABLE, f"not measured here: {why}")
