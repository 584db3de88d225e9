"""How listings, usage tables, the picker and the viewer show a cost and a token count."""

from __future__ import annotations


def format_cost(cost: float) -> str:
    """A cost in dollars for tables: `$0.00` to two decimals, `<$0.01` for a tiny non-zero amount."""
    if 0 < cost < 0.005:
        return "<$0.01"
    return f"${cost:,.2f}"


def format_tokens(tokens: float) -> str:
    """A token count for tables: 950, 12.3k, 4.5M, 1.2B."""
    magnitude = abs(tokens)  # (NaN fails every test below and prints as nan)
    if magnitude >= 1e6:
        return f"{tokens / 1e9:.1f}B" if magnitude >= 1e9 else f"{tokens / 1e6:.1f}M"
    if magnitude >= 1e3:
        return f"{tokens / 1e3:.1f}k"
    return f"{tokens:.0f}"
