"""The renderers' text helpers: control characters dropped from ASCII and non-ASCII text alike, fences that hold."""

from __future__ import annotations

import html
import re

from hypothesis import given
from hypothesis import strategies as st

from sessdex.catalog.export.html import _MD, _UNSAFE_CHARS, _escape_html, _plain_paragraphs, clean
from sessdex.catalog.export.markdown import fence

CONTROLS = "".join(chr(code) for code in (*range(0x00, 0x20), 0x7f, 0x85, 0x9b, 0x202e, 0x2066, 0x200f, 0x061c))


def test_ascii_text_loses_its_control_characters_but_not_tab_and_newline() -> None:
    assert clean("a\x1b[31mb\x00c\x7fd\te\nf\rg") == "a[31mbcd\te\nfg"
    plain = "nothing to drop\n\tindented"
    assert clean(plain) is plain


@given(st.text(alphabet=st.sampled_from(CONTROLS + "ab \n\t`é"), max_size=60))
def test_clean_drops_exactly_what_the_unsafe_character_rule_names(text: str) -> None:
    assert clean(text) == _UNSAFE_CHARS.sub("", text)


@given(st.text(alphabet=st.sampled_from("`a\n"), max_size=40))
def test_a_fence_is_longer_than_any_backtick_run_inside(text: str) -> None:
    fenced = fence(text)
    ticks = fenced.split("\n", 1)[0]
    assert len(ticks) >= 3 and set(ticks) == {"`"}
    assert all(len(run) < len(ticks) for run in re.findall("`+", text))


MARKDOWNISH = st.text(alphabet=st.sampled_from(list("ab1 \n\n.-_*`#>[]()!<&\"'=+|~:\\é") + ["\u00a0", "\u2028"]),
                      max_size=50)


@given(MARKDOWNISH)
def test_plain_paragraphs_render_exactly_as_markdown_it_renders_them(text: str) -> None:
    plain = _plain_paragraphs(text)
    if plain is not None:
        assert plain == _MD.render(text)


def test_prose_takes_the_plain_path_and_markdown_does_not() -> None:
    prose = "Please fix the parser, it fails on \"quoted\" names.\nSee the log (attached).\n\n\nThanks!"
    assert _plain_paragraphs(prose) == _MD.render(prose)
    for marked in ("a *b*", "a_b", "1. item", "- item", "    code", "x  \ny", "<b>", "a &amp; b", "[l](u)", "# h",
                   "a\n---", "a\n===", "> q", "`c`", "a | b"):
        assert _plain_paragraphs(marked) is None, marked


@given(st.text(alphabet=st.sampled_from(list("ab1 \n\n.,\"'?!()-@é")), max_size=50))
def test_mostly_plain_text_renders_exactly_as_markdown_it_renders_it(text: str) -> None:
    plain = _plain_paragraphs(text)
    if plain is not None:
        assert plain == _MD.render(text)



@given(st.text(alphabet=st.sampled_from("&<>\"'ab \n\u00e9") | st.characters(), max_size=200))
def test_html_escaping_is_the_standard_librarys(text: str) -> None:
    assert _escape_html(text) == html.escape(text, quote=True)
