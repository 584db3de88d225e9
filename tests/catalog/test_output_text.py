"""`tui.terminal_text` writes exactly what the regular expressions it replaced wrote, on generated values."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from sessdex.catalog.tui.terminal_text import REPLACEMENT, terminal_json, terminal_json_bytes, terminal_text

_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
_KEYS = st.text() | st.integers() | st.floats() | st.booleans() | st.none()
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner) | st.tuples(inner, inner) | st.dictionaries(_KEYS, inner),
                       max_leaves=25)


# The expressions terminal_text and terminal_json used before they handled format characters, as the reference.
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_UNSAFE_OR_BREAK = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029]")
_LINE_BREAKS = frozenset("\t\n\r\x0b\x0c\x85\u2028\u2029")
_UNSAFE_IN_JSON = re.compile(r"[\x7f-\x9f\ud800-\udfff]")
# Controls, line breaks, surrogates, characters that are not printable but safe (no-break space, joiner,
# private use), and plain ones.
_HOSTILE = st.text(alphabet=st.sampled_from([chr(code) for code in (*range(0xb0), 0x2028, 0x2029, 0x200d, 0xe000,
                                                                     0xe003, 0x4e2d, 0x1f600, 0xd800, 0xdc80, 0xdfff)]))


@settings(max_examples=1000)
@given(_HOSTILE)
def test_terminal_text_replaces_what_the_expressions_replaced(text: str) -> None:
    one_line = _UNSAFE_OR_BREAK.sub(lambda match: " " if match.group() in _LINE_BREAKS else REPLACEMENT, text)
    assert terminal_text(text) == one_line
    assert terminal_text(text, keep_newlines=True) == _UNSAFE.sub(REPLACEMENT, text)
    assert terminal_json(text) == _UNSAFE_IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def test_bidirectional_controls_are_replaced_and_invisible_format_characters_dropped() -> None:
    spoof = "report\u202etxt.exe\u2066x\u2069\u200b\ufeffend"
    assert terminal_text(spoof) == f"report{REPLACEMENT}txt.exe{REPLACEMENT}x{REPLACEMENT}end"
    assert terminal_text(spoof, keep_newlines=True) == terminal_text(spoof)
    assert terminal_json(spoof) == "report\\u202etxt.exe\\u2066x\\u2069\\u200b\\ufeffend"
    # the joiners of emoji sequences and of several scripts stay
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467 \u0645\u200c\u06cc"
    assert terminal_text(family) == family


# Around and beside every character terminal_json escapes (but lone surrogates, which UTF-8 text cannot hold):
# their neighbours in the code space, which share their UTF-8 lead bytes and must be left alone.
_ESCAPED = [*range(0x7f, 0xa0), 0x061c, 0x180e, 0x200b, 0x200e, 0x200f, *range(0x202a, 0x202f),
            *range(0x2060, 0x2065), *range(0x2066, 0x2070), 0xfeff, *range(0xfff9, 0xfffc)]
_NEAR = st.text(alphabet=st.sampled_from(sorted({chr(code + step) for code in _ESCAPED for step in (-1, 0, 1)}
                                                | set("ab\n\"é—…中😀"))))


@settings(max_examples=1000)
@given(_NEAR)
def test_terminal_json_bytes_is_terminal_json_of_the_text(text: str) -> None:
    data = text.encode()
    assert terminal_json_bytes(data) == terminal_json(text).encode()
