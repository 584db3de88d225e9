"""Each use the picker makes of prompt_toolkit beyond its public API (catalog/tui/prompt_toolkit_adapter.py) still
does what the picker relies on with the installed prompt_toolkit."""

from __future__ import annotations

import io

from prompt_toolkit.application import Application
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.layout import Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.output.vt100 import Vt100_Output

from sessdex.catalog.tui.prompt_toolkit_adapter import (
    HOME,
    erase_screen,
    flush_replaced,
    look_up_key_bindings,
    screen_was_erased,
    stay_on_alternate_screen,
)

ENTER_ALTERNATE = "\x1b[?1049h"
LEAVE_ALTERNATE = "\x1b[?1049l"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _output() -> tuple[Vt100_Output, _Terminal]:
    written = _Terminal()
    return Vt100_Output(written, lambda: Size(rows=10, columns=40), term="xterm"), written  # type: ignore[arg-type]


def _run(app: Application[None], during: list[object]) -> None:
    """Run `app` until its first render is done, then call each of `during` (with the app) and exit."""
    def after_first_render(_app: object) -> None:
        app.after_render -= after_first_render
        for step in during:
            step(app)  # type: ignore[operator]
        app.exit()

    app.after_render += after_first_render
    app.run()


def _app(inp: object, output: Vt100_Output, bindings: KeyBindings | None = None) -> Application[None]:
    return Application(layout=Layout(Window(FormattedTextControl("hello"))), full_screen=True, input=inp,
                       output=output, key_bindings=bindings)  # type: ignore[arg-type]


def test_the_screen_reads_as_erased_before_the_first_render_and_after_an_erase_only() -> None:
    output, written = _output()
    seen: list[bool] = []
    with create_pipe_input() as inp:
        app = _app(inp, output)
        assert screen_was_erased(app)

        def erase(app: Application[None]) -> None:
            seen.append(screen_was_erased(app))
            written.seek(0)
            written.truncate()
            erase_screen(app)
            seen.append(screen_was_erased(app))
            seen.append(LEAVE_ALTERNATE in written.getvalue())

        _run(app, [erase])
    assert seen == [False, True, False]  # rendered; erased, still on the alternate screen


def test_looking_up_key_bindings_merges_the_applications_table_before_the_first_key(monkeypatch) -> None:
    from prompt_toolkit.key_binding import key_bindings

    merges: list[object] = []
    merge = key_bindings._MergedKeyBindings._update_cache

    def counted(self: object) -> None:
        merges.append(self)
        merge(self)  # type: ignore[arg-type]

    monkeypatch.setattr(key_bindings._MergedKeyBindings, "_update_cache", counted)
    bindings = KeyBindings()
    bindings.add("x")(lambda event: None)
    output, _written = _output()
    with create_pipe_input() as inp:
        app = _app(inp, output, bindings)
        look_up_key_bindings(app, ["x", "y"])
        assert merges  # the merge a first key press would wait for happened here
        merged = getattr(app.key_processor, "_bindings", None)
        assert merged is not None
        assert ("x",) in [binding.keys for binding in merged.get_bindings_for_keys(("x",))]
    # (tests/catalog/test_picker_features.py checks that a running picker's first keys merge nothing more)


def test_a_replaced_flush_is_the_outputs_own_again_after_the_block() -> None:
    output, written = _output()
    calls: list[str] = []
    with flush_replaced(output, lambda: calls.append("held")) as own:
        output.write_raw("text")
        output.flush()
        assert calls == ["held"] and written.getvalue() == ""
        own()
        assert written.getvalue() == "text"
    assert "flush" not in vars(output)
    output.write_raw("more")
    output.flush()
    assert written.getvalue() == "textmore" and calls == ["held"]


def test_an_output_kept_on_the_alternate_screen_never_switches_to_it_again() -> None:
    output, written = _output()
    stay_on_alternate_screen(output)
    with create_pipe_input() as inp:
        _run(_app(inp, output), [])
    text = written.getvalue()
    assert ENTER_ALTERNATE not in text and "hello" in text and HOME in text.split("hello")[0]
    plain, plain_written = _output()
    with create_pipe_input() as inp:
        _run(_app(inp, plain), [])
    assert ENTER_ALTERNATE in plain_written.getvalue()  # what the adapter keeps from happening
