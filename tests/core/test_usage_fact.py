"""`UsageFact`: a named tuple pickled by value, its cost in whole
nano-dollars."""

from __future__ import annotations

import pickle

from sessdex.core.usage import UsageFact, cost_nanos, dollars, usage_fact

FIGURES = ("e1", "2026-02-16T09:30:00.000Z", 1, "2026-02-16", "2026-02-16", "2026-02-16", "openai", "gpt-5",
           1000, 200, 50, 7, 500_000_000)


def test_a_fact_is_a_tuple_read_by_field_name_and_pickled_by_value() -> None:
    fact = UsageFact(*FIGURES)
    assert tuple(fact) == FIGURES and isinstance(fact, tuple)
    assert (fact.entry_id, fact.model, fact.cost_nanos) == ("e1", "gpt-5", 500_000_000)
    assert pickle.loads(pickle.dumps(fact)) == fact and type(pickle.loads(pickle.dumps(fact))) is UsageFact
    assert repr(fact).startswith("UsageFact(entry_id='e1', ")


def test_a_cost_is_counted_in_nano_dollars_and_implausible_ones_as_zero() -> None:
    assert cost_nanos(0.1) == 100_000_000 and cost_nanos(1 / 3) == 333_333_333 and cost_nanos(2) == 2 * 10**9
    assert dollars(cost_nanos(0.1) + cost_nanos(0.2)) == 0.3  # (0.1 + 0.2 is 0.30000000000000004)
    for odd in (float("nan"), float("inf"), 1e300, -1e300, "1", True, None, 10**400):
        assert cost_nanos(odd) == 0
    entry = {"type": "message", "id": "e1", "timestamp": "2026-02-16T09:30:00.000Z",
             "message": {"role": "assistant", "provider": "p", "model": "m",
                         "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0.45}}}}
    fact = usage_fact(entry)
    assert fact is not None and fact.cost_nanos == 450_000_000
