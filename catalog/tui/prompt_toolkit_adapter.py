"""The picker's uses of prompt_toolkit beyond its public API, all in one place.

Each function names what the picker needs and reaches into prompt_toolkit (pinned to one minor version in
pyproject.toml) to get it; tests/catalog/test_prompt_toolkit_adapter.py checks each against the installed
prompt_toolkit, so that an upgrade which moves one of them fails there, not in front of a user. Nothing here
imports prompt_toolkit: the picker's first frame uses `stay_on_alternate_screen` before it is loaded.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

HOME = "\x1b[H"


def screen_was_erased(app: Any) -> bool:
    """True when the application's next render draws its whole frame on a cleared screen (the first render, or
    one after `erase_screen` or a resize)."""
    return app.renderer.last_rendered_screen is None


def erase_screen(app: Any) -> None:
    """Have the next render clear the screen and draw everything, staying on the alternate screen."""
    app.renderer.erase(leave_alternate_screen=False)


def look_up_key_bindings(app: Any, keys: Iterable[str]) -> None:
    """Fill the application's caches of the bindings of `keys` (each pressed alone), as a key press would: its
    first look-up merges every binding into one table, which the first typed key would otherwise wait for."""
    bindings = getattr(app.key_processor, "_bindings", None)  # the application's combined key bindings
    if bindings is None:
        return
    for key in keys:
        bindings.get_bindings_for_keys((key,))
        bindings.get_bindings_starting_with_keys((key,))


@contextlib.contextmanager
def flush_replaced(output: Any, flush: Callable[[], None]) -> Iterator[Callable[[], None]]:
    """Inside the block, the output's flush calls `flush` (which may hold it back); yields the output's own
    flush. The output may be shared: it gets its own flush back after the block, and flushes once."""
    own = output.flush
    output.flush = flush
    try:
        yield own
    finally:
        del output.flush  # the instance attribute goes: the class's flush is seen again
        output.flush()


def stay_on_alternate_screen(output: Any) -> None:
    """Make an output that finds a frame already drawn on the alternate screen stay there when the application
    starts: switching again would clear it (a blank flash) and save the cursor a second time, so that leaving
    would not bring the cursor back where the shell had it. Its first render still starts from the top left."""
    output.enter_alternate_screen = lambda: output.write_raw(HOME)
