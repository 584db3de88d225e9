"""`UsageFact`: a tuple with named fields, built without importing collections, on any interpreter."""

from __future__ import annotations

import pickle
import subprocess
import sys

from sessdex.core.usage import UsageFact

FIGURES = ("e1", "2026-02-16T09:30:00.000Z", 1, "2026-02-16", "2026-02-16", "2026-02-16", "openai", "gpt-5",
           1000, 200, 50, 7, 0.5)


def test_a_fact_is_a_tuple_read_by_field_name_and_pickled_by_value() -> None:
    fact = UsageFact(*FIGURES)
    assert tuple(fact) == FIGURES and isinstance(fact, tuple)
    assert (fact.entry_id, fact.model, fact.cost) == ("e1", "gpt-5", 0.5)
    assert pickle.loads(pickle.dumps(fact)) == fact and type(pickle.loads(pickle.dumps(fact))) is UsageFact
    assert repr(fact).startswith("UsageFact(entry_id='e1', ")


def test_without_cpythons_private_field_getter_the_fields_are_properties() -> None:
    code = (
        "import sys, types, _collections\n"
        "stub = types.ModuleType('_collections')\n"
        "stub.__dict__.update({k: v for k, v in vars(_collections).items() if k != '_tuplegetter'})\n"
        "sys.modules['_collections'] = stub\n"
        "from sessdex.core.usage import UsageFact\n"
        f"fact = UsageFact(*{FIGURES!r})\n"
        "assert type(UsageFact.cost) is property\n"
        "print(fact.entry_id, fact.model, fact.cost, fact.cache_write_tokens)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["e1", "gpt-5", "0.5", "7"]
