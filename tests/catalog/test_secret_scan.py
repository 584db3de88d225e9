"""The secret scan of session files parses only the lines where a rule may match (secret_places), and finds what
parsing every line and trying every rule on every string finds, however the JSON writer escaped the text."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessdex.catalog import secrets as secrets_module
from sessdex.catalog.export.scan import SecretFinding, scan_record, scan_session_file
from sessdex.catalog.secrets import keywords_in, secret_places
from tests.catalog.test_secrets import _PIECES, _SPELLINGS, A40, POSITIVE


def _escaped_string(text: str, escape: Callable[[str], str]) -> str:
    return '"' + "".join(escape(char) for char in text) + '"'


def _dumps(value: Any, escape: Callable[[str], str]) -> bytes:
    """`value` as JSON with each character of its strings written by `escape` (a writer's choice of escapes)."""
    if isinstance(value, str):
        return _escaped_string(value, escape).encode("utf-8", "surrogatepass")
    if isinstance(value, dict):
        return b"{" + b",".join(_dumps(key, escape) + b":" + _dumps(item, escape) for key, item in value.items()) + b"}"
    if isinstance(value, list):
        return b"[" + b",".join(_dumps(item, escape) for item in value) + b"]"
    return json.dumps(value).encode()


def _u_escape(char: str, upper: bool = False) -> str:
    units = char.encode("utf-16-be", "surrogatepass")
    hexes = [units[at:at + 2].hex() for at in range(0, len(units), 2)]
    return "".join("\\u" + (unit.upper() if upper else unit) for unit in hexes)


def _required(char: str) -> str | None:
    """The escape JSON requires for `char`, or None."""
    if char in '"\\':
        return "\\" + char
    if ord(char) < 0x20:
        return {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\f": "\\f", "\b": "\\b"}.get(char, _u_escape(char))
    return None


# Writers' choices beyond orjson's and json's: escaped slashes, every control character as \u00XX (upper-case
# hex), everything outside ASCII escaped, and every character escaped.
ESCAPES: list[Callable[[str], str]] = [
    lambda char: "\\/" if char == "/" else (_required(char) or char),
    lambda char: _u_escape(char, upper=True) if ord(char) < 0x20 else (_required(char) or char),
    lambda char: _u_escape(char) if ord(char) > 0x7E else (_required(char) or char),
    lambda char: _u_escape(char),
]


def _lines(value: Any) -> list[bytes]:
    return [orjson.dumps(value), json.dumps(value).encode("ascii"), json.dumps(value, ensure_ascii=False).encode(),
            *(_dumps(value, escape) for escape in ESCAPES)]


def _everything_tried(path: Path, line: bytes) -> list[SecretFinding]:
    """What the scan finds in `line` when every line is parsed and every rule tried on every string."""
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return []
    return scan_record(path, record, secrets_module._KEYWORDS)


def _entry(text: str) -> dict[str, Any]:
    return {"type": "message", "id": "e1", "message": {"role": "user", "content": [{"type": "text", "text": text}],
                                                       "usage": {"totalTokens": 3}}}


@pytest.mark.parametrize(("kind", "text", "secret"), POSITIVE, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(POSITIVE)])
def test_every_planted_secret_is_in_a_place_to_look_however_escaped(kind: str, text: str, secret: str,
                                                                    tmp_path: Path) -> None:
    for shown in (text, "line 1 of the output\n" * 150 + text + "\nxxxx" * 600):
        for line in _lines(_entry(shown)):
            assert secret_places(line), line
            assert [finding.kind for finding in _everything_tried(tmp_path, line)] == [kind]


def test_a_keyword_or_its_context_written_with_json_escapes_is_still_found(tmp_path: Path) -> None:
    secret = "q8Zr2LmN4pX7"
    lines = [
        b'{"id": "e1", "text": "api_\\u006bey = \\"' + secret.encode() + b'\\""}',  # "k" escaped
        b'{"id": "e2", "text": "api_key\\u0020=\\u0020\\u0022' + secret.encode() + b'\\u0022"}',  # space, quotes
        b'{"id": "e3", "text": "api_key\\t=\\u000b\\"' + secret.encode() + b'\\""}',  # tab, vertical tab
        b'{"id": "e4", "text": "postgresql:\\/\\/alice:' + secret.encode() + b'@db.example.com"}',  # \/ slashes
        b'{"id": "e5", "text": "Authorization: Bearer abc\\/DEF123456ghiJKL789"}',
        b'{"id": "e6", "text": "export API_TOKEN=\\u0009' + secret.encode() + b'"}',
        b'{"id": "e7", "text": "api_\\u212Aey = \\"' + secret.encode() + b'\\""}',  # Kelvin sign, escaped
        orjson.dumps({"id": "e8", "text": "key, then pa\u017f\u017fword = '" + secret + "'"}),  # long s
        orjson.dumps({"id": "e9", "text": "aws_secret_key\u00a0=\u2003" + A40}),  # spaces outside ASCII
    ]
    session = tmp_path / "s.jsonl"
    session.write_bytes(b"\n".join(lines) + b"\n")
    found = scan_session_file(session)
    assert found is not None
    assert sorted({finding.entry_id for finding in found}) == [f"e{index}" for index in range(1, 10)]
    for line in lines:
        assert secret_places(line) and _everything_tried(tmp_path, line), line


def test_keywords_written_as_mere_words_are_no_place_to_look() -> None:
    # The words of prose and code hold keywords ("token", "secret", "keyboard", "password_field") without being
    # a match of any rule: the scan does not parse such lines (unless every character is escaped: then it does).
    words = ["Tokens used: the token budget; tokenize(text); secret missing: {parent}; keyboard layout;",
             "password_field = form.get(x); api_key=None; Bearer of news; see https://example.com/a@b;",
             "TOKEN_COUNT = 3; export SECRET_SIZE; access_token: refresh later; key = 'short'"]
    for text in words:
        for line in _lines(_entry(text))[:-1]:
            assert keywords_in(line), line
            assert secret_places(line) == [], line


def test_each_place_lies_within_the_line_holding_it() -> None:
    lines = [orjson.dumps(_entry("x" * 50)), orjson.dumps(_entry("token = '" + "q8Zr2LmN4pX7" + "'")),
             orjson.dumps(_entry("plain")), orjson.dumps(_entry("AKIA" + "IOSFODNN7EXAMPLE"))]
    block = b"\n".join(lines) + b"\n"
    places = secret_places(block)
    assert places == sorted(places)
    assert {block.count(b"\n", 0, place - 1) for place in places} == {1, 3}
    assert all(block[place - 1:place] != b"\n" for place in places)


_SCAN_PIECES = [*_PIECES, *_SPELLINGS, "ſecret", "ı", "\u0130", "\u00a0", "\u2003", "\x0b", "\x1f", "\x7f", "/", "\\/",
                "'", ":=", "=>", "://", "@", "export ", "AWS_SECRET_ACCESS_KEY=", "  API_KEY\t=\t", "x" * 40, A40]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.lists(st.sampled_from(_SCAN_PIECES) | st.text(max_size=8), max_size=12).map("".join),
                      min_size=1, max_size=4))
def test_a_line_with_a_finding_is_always_a_place_to_look(texts: list[str], tmp_path: Path) -> None:
    value = {"type": "message", "id": "e1", "message": {"role": "user", "content": [
        {"type": "text", "text": text} for text in texts]}, texts[0][:20]: texts[-1]}
    for line in _lines(value):
        if _everything_tried(tmp_path, line):
            assert secret_places(line), line


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(entries=st.lists(st.tuples(st.lists(st.sampled_from(_SCAN_PIECES) | st.text(max_size=8), max_size=10)
                                  .map("".join), st.integers(0, len(ESCAPES) + 2)), min_size=1, max_size=12),
       padding=st.sampled_from([1, 7, 300]))
def test_the_scan_of_a_file_finds_what_trying_everything_on_every_line_finds(entries: list[tuple[str, int]],
                                                                              padding: int, tmp_path: Path) -> None:
    lines = [b"not json {", b""]
    for index, (text, writer) in enumerate(entries):
        lines.append(_lines({**_entry(text + "\n" * padding), "id": f"e{index}"})[writer])
    session = tmp_path / "s.jsonl"
    session.write_bytes(b"\n".join(lines))  # (the last line without its newline)
    expected = [finding for line in lines for finding in _everything_tried(session, line)]
    assert scan_session_file(session) == expected


def test_a_file_that_cannot_be_read_is_none_for_the_caller_to_count(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    session = tmp_path / "s.jsonl"
    session.write_bytes(orjson.dumps(_entry("token = '" + "q8Zr2LmN4pX7" + "'")) + b"\n")
    (tmp_path / "folder.jsonl").mkdir()
    (tmp_path / "link.jsonl").symlink_to(session)
    assert scan_session_file(session)
    assert scan_session_file(tmp_path / "folder.jsonl") is None
    assert scan_session_file(tmp_path / "link.jsonl") is None

    def failing(*_args: object) -> object:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr("sessdex.catalog.export.scan.line_blocks", failing)
    assert scan_session_file(session) is None
