"""Token usage -> dollars, and the budgets a run must stay within.

Prices are USD per million tokens from Anthropic's public price list; cache writes cost 1.25x
and cache reads 0.1x the input price. A model missing from the table is an error rather than a
silent zero: a run whose cost cannot be computed cannot be held to a dollar budget.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from envport.errors import EnvportError

# model -> (input, output) USD per million tokens. Check the price list before quoting dollars
# for a model released after this table; newer models are added here, not guessed.
PRICES: dict[str, tuple[float, float]] = {
    "claude-opus-4-6": (5.0, 25.0),
    "claude-sonnet-4-6": (3.0, 15.0),
    "claude-opus-4-5": (5.0, 25.0),
    "claude-opus-4-1": (15.0, 75.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-sonnet-4-0": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
}
CACHE_WRITE, CACHE_READ = 1.25, 0.10


class BudgetExhausted(EnvportError):
    """The run spent its tokens or dollars; what it did so far is recorded."""


def price(model: str, prices: dict[str, tuple[float, float]] | None = None) -> tuple[float, float]:
    table = prices or PRICES
    for name in sorted(table, key=len, reverse=True):  # "claude-sonnet-4-5-20250929" -> "claude-sonnet-4-5"
        if model == name or model.startswith(name + "-"):
            return table[name]
    raise EnvportError(f"no price for model {model!r}; known: {', '.join(sorted(table))} "
                       f"(add it to envport.generate.costs.PRICES)")


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    @classmethod
    def from_response(cls, usage: dict | None) -> Usage:
        u = usage or {}
        return cls(**{k: int(u.get(k) or 0) for k in cls.__dataclass_fields__})

    @property
    def total(self) -> int:
        return (self.input_tokens + self.output_tokens + self.cache_creation_input_tokens
                + self.cache_read_input_tokens)

    def usd(self, model: str, prices=None) -> float:
        p_in, p_out = price(model, prices)
        return (self.input_tokens * p_in + self.output_tokens * p_out
                + self.cache_creation_input_tokens * p_in * CACHE_WRITE
                + self.cache_read_input_tokens * p_in * CACHE_READ) / 1e6


@dataclass(frozen=True)
class Budget:
    iterations: int = 3          # T: model turns (+ checks) per phase before a human is needed
    tool_turns: int = 40         # model calls within one iteration
    tokens: int = 3_000_000
    usd: float = 20.0


@dataclass
class CostLog:
    """Every model call's usage and cost, and the running totals the budget is checked against."""

    model: str
    prices: dict[str, tuple[float, float]] | None = None
    calls: list[dict] = field(default_factory=list)

    def add(self, usage: Usage, **context) -> dict:
        entry = {**context, **asdict(usage), "usd": usage.usd(self.model, self.prices)}
        self.calls.append(entry)
        return entry

    @property
    def tokens(self) -> int:
        return sum(c["input_tokens"] + c["output_tokens"] + c["cache_creation_input_tokens"]
                   + c["cache_read_input_tokens"] for c in self.calls)

    @property
    def usd(self) -> float:
        return sum(c["usd"] for c in self.calls)

    def totals(self) -> dict:
        keys = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        return {"calls": len(self.calls), **{k: sum(c[k] for c in self.calls) for k in keys},
                "tokens": self.tokens, "usd": round(self.usd, 6)}

    def check(self, budget: Budget) -> None:
        """Raise before a call that the budget no longer allows."""
        if self.tokens >= budget.tokens:
            raise BudgetExhausted(f"token budget spent: {self.tokens} of {budget.tokens} tokens")
        if self.usd >= budget.usd:
            raise BudgetExhausted(f"dollar budget spent: ${self.usd:.4f} of ${budget.usd:.2f}")
