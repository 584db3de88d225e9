"""The secret detector: every rule finds its token shape and leaves look-alike ordinary text alone."""

from __future__ import annotations

import hashlib
import json

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessdex.catalog import secrets as secrets_module
from sessdex.catalog.secrets import SecretMatch, find_secrets, keywords_in, redact, redact_value

# Fake credentials, assembled from parts so that no scanner mistakes this file for a leak.
A40 = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
ALNUM36 = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PEM = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7v\nQk9yZW1pcHN1bQ==\n-----END " + "RSA PRIVATE KEY-----"
JWT = "eyJ" + "hbGciOiJIUzI1NiJ9." + "eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"

POSITIVE = [
    ("private-key", "key:\n" + PEM + "\nend", PEM),
    ("aws-access-key", "id AKIA" + "IOSFODNN7EXAMPLE here", "AKIA" + "IOSFODNN7EXAMPLE"),
    ("aws-secret-key", "aws_secret_access_key = " + A40, A40),
    ("github-token", "token ghp_" + ALNUM36 + " ok", "ghp_" + ALNUM36),
    ("github-token", "gho_" + ALNUM36, "gho_" + ALNUM36),
    ("github-token", "github_pat_" + "A" * 22 + "_" + "b" * 59, "github_pat_" + "A" * 22 + "_" + "b" * 59),
    ("gitlab-token", "glpat-" + "xY3_z" * 4, "glpat-" + "xY3_z" * 4),
    ("anthropic-key", "sk-ant-api03-" + "Ab9_" * 24, "sk-ant-api03-" + "Ab9_" * 24),
    ("openai-key", "OPENAI sk-proj-" + "Zq8x" * 12, "sk-proj-" + "Zq8x" * 12),
    ("openai-key", "sk-" + "a1B2" * 12, "sk-" + "a1B2" * 12),
    ("slack-token", "xoxb-" + "123456789012-abcdefABCDEF", "xoxb-" + "123456789012-abcdefABCDEF"),
    ("slack-webhook", "https://hooks.slack.com/services/" + "T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX",
     "https://hooks.slack.com/services/" + "T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX"),
    ("google-api-key", "AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"),
    ("gcp-service-account", '"private_key_id": "' + "a" * 40 + '"', "a" * 40),
    ("azure-storage-key", "AccountKey=" + "Q" * 86 + "==;", "Q" * 86 + "=="),
    ("azure-client-secret", "secret abc8Q~" + "Zy9" * 11 + "x", "abc8Q~" + "Zy9" * 11 + "x"),
    ("stripe-key", "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"),
    ("jwt", "cookie " + JWT, JWT),
    ("url-password", "postgresql://alice:" + "s3cr3tPw@db.example.com/app", "s3cr3tPw"),
    ("auth-header", "Authorization: Bearer " + "abcDEF123456ghiJKL789", "abcDEF123456ghiJKL789"),
    ("auth-header", "Authorization: Basic " + "YWxhZGRpbjpvcGVuc2VzYW1l", "YWxhZGRpbjpvcGVuc2VzYW1l"),
    ("secret-assignment", 'api_key = "' + "q8Zr2LmN4pX7" + '"', "q8Zr2LmN4pX7"),
    ("secret-assignment", "export DB_PASSWORD=" + "hunter2hunter2", "hunter2hunter2"),
    ("secret-assignment", '{"client_secret": "' + "Vq3k9Lm2Xp7R" + '"}', "Vq3k9Lm2Xp7R"),
]


@pytest.mark.parametrize(("kind", "text", "secret"), POSITIVE, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(POSITIVE)])
def test_each_rule_finds_its_secret_and_redact_removes_it(kind: str, text: str, secret: str) -> None:
    matches = find_secrets(text)
    assert [m.kind for m in matches] == [kind]
    assert text[matches[0].start:matches[0].end] == secret
    cleaned = redact(text)
    assert secret not in cleaned
    assert f"[REDACTED:{kind}]" in cleaned


NEGATIVE = [
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END PUBLIC KEY-----",  # private-key
    "AKIA is a prefix; AKIAshort and akiaiosfodnn7example are not keys",  # aws-access-key
    "aws_secret_access_key = ${AWS_SECRET}",  # aws-secret-key
    "ghp_short and gho_ are prefixes, github_pat_ alone is not a token",  # github-token
    "glpat- is the prefix of a GitLab token",  # gitlab-token
    "sk-ant-api03-short",  # anthropic-key
    "run with --sk-learn and task-list-items; sk-abc is short",  # openai-key
    "xoxb- without a body; the xox format",  # slack-token
    "https://hooks.slack.com/services/",  # slack-webhook
    "AIza is how Google keys start; AIzaShort",  # google-api-key
    '"private_key_id": "not-hex"',  # gcp-service-account
    "AccountKey=short==",  # azure-storage-key
    "a 8Q~ sequence in prose",  # azure-client-secret
    "sk_live_ and rk_test_short",  # stripe-key
    "eyJ is base64 for {\" but eyJhbGciOi alone is no token",  # jwt
    "https://example.com/path?a=b and ssh://git@github.com:22/repo and http://host:8080/x",  # url-password
    "the bearer of bad news; Bearer <token>; token count",  # auth-header
    'password = "<your-password>"; api_key = os.environ["API_KEY"]; token = get_token()',  # secret-assignment
    "PASSWORD=${PASSWORD}\nSECRET=changeme",  # secret-assignment
]


@pytest.mark.parametrize("text", NEGATIVE)
def test_look_alike_text_is_not_a_secret(text: str) -> None:
    assert find_secrets(text) == []
    assert redact(text) == text


def test_ordinary_code_prose_and_digests_are_left_alone() -> None:
    text = "\n".join([
        "def tokenize(text: str) -> list[str]:",
        "    password_field = form.get('password')",
        "    return [word for word in text.split() if word]",
        "The commit 3f786850e387550fdab836ed7e6dc881de23001b fixed the secret-handling docs.",
        "sha256: " + hashlib.sha256(b"x").hexdigest(),
        "md5 " + hashlib.md5(b"x").hexdigest() + " uuid 123e4567-e89b-12d3-a456-426614174000",
        "base64 of a PNG: iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
        "Set the token in ~/.config and restart; see https://docs.python.org/3/library/secrets.html",
    ])
    assert find_secrets(text) == []


def test_matches_are_sorted_and_merged_and_redaction_is_stable() -> None:
    text = "a=" + "AKIA" + "IOSFODNN7EXAMPLE b=" + JWT
    matches = find_secrets(text)
    assert [m.kind for m in matches] == ["aws-access-key", "jwt"]
    assert all(isinstance(m, SecretMatch) for m in matches)
    assert matches[0].end <= matches[1].start
    once = redact(text)
    assert redact(once) == once
    assert once == "a=[REDACTED:aws-access-key] b=[REDACTED:jwt]"


def _lines_of(text: str) -> list[bytes]:
    """`text` inside a session entry, as the agent writes it and as other JSON writers may (escaped), alone and
    inside a long tool output (long lines are checked by their distinct words)."""
    lines = []
    for shown in (text, "line 1 of the output\n" * 150 + text + "\nxxxx" * 600):
        entry = {"type": "message", "id": "e1", "message": {"role": "user", "content": [{"type": "text", "text": shown}]}}
        lines += [orjson.dumps(entry), json.dumps(entry).encode("ascii"), json.dumps(entry, ensure_ascii=False).encode()]
    return lines


@pytest.mark.parametrize(("kind", "text", "secret"), POSITIVE, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(POSITIVE)])
def test_the_raw_line_pre_check_lets_every_secret_through(kind: str, text: str, secret: str) -> None:
    for line in _lines_of(text):
        keywords = keywords_in(line)
        assert keywords, line
        value = orjson.loads(line)
        assert redact_value(value, keywords) == redact_value(value)
        assert secret not in orjson.dumps(redact_value(value, keywords)).decode()


def test_a_keyword_spelled_with_escapes_or_the_kelvin_sign_is_not_missed() -> None:
    secret = "q8Zr2LmN4pX7"
    escaped = b'{"text": "api_\\u006bey = \\"' + secret.encode() + b'\\""}'  # "k" as a JSON escape
    kelvin = orjson.dumps({"text": 'api_\u212aey = "' + secret + '"'})  # KELVIN SIGN lower-cases to "k"
    for line in (escaped, kelvin):
        value = orjson.loads(line)
        assert secret not in redact_value(value, keywords_in(line))["text"]


def test_a_line_without_any_keyword_needs_no_redaction() -> None:
    line = orjson.dumps({"type": "message", "id": "e1", "message": {"role": "toolResult", "content": [
        {"type": "text", "text": "  12  src/module_3.py: collected 700 items\n" * 50}]}})
    assert keywords_in(line) == ()
    value = orjson.loads(line)
    assert redact_value(value, ()) is value


# Pieces random text is made of: every planted secret and its surroundings, every rule keyword in several cases,
# characters that a byte search could miss (the Kelvin sign, dotted capital I) and ones JSON escapes.
_PIECES = ([text for _, text, _ in POSITIVE] + [text for text in NEGATIVE]
           + [keyword for keyword in secrets_module._KEYWORDS] + [keyword.upper() for keyword in secrets_module._KEYWORDS]
           + ["\u212aey", "api_\u212aey = \"q8Zr2LmN4pX7\"", "\u0130", "\n", " ", "=", '"', "\\", "\t", "\x00", "é",
              "password", "Bearer ", "://user:", "@host", "AKIA", "IOSFODNN7EXAMPLE", "\"totalTokens\":", "tokensAfter"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PIECES) | st.text(max_size=8), max_size=12).map("".join))
def test_the_pre_check_never_changes_the_findings(text: str) -> None:
    # Every rule tried on the text, as if there were no pre-check at all, against the pre-checked detector.
    unchecked = find_secrets(text, secrets_module._KEYWORDS)
    assert find_secrets(text) == unchecked
    value = {"type": "message", "id": "e1", "message": {"role": "user", "content": [{"type": "text", "text": text}],
                                                        text[:20]: [text, 1]}}
    unchecked_value = redact_value(value, secrets_module._KEYWORDS)
    assert redact_value(value) == unchecked_value
    for line in (orjson.dumps(value), json.dumps(value).encode("ascii"), json.dumps(value, ensure_ascii=False).encode()):
        assert redact_value(orjson.loads(line), keywords_in(line)) == unchecked_value



# Every spelling each rule's expression allows at the start of a match (where the rules say a match starts).
_NAMES = [f"{head}{joint}{tail}" for head, tail in (("api", "key"), ("secret", "key"), ("client", "secret"),
                                                    ("access", "token"), ("auth", "token")) for joint in ("", "_", "-")]
_SPELLINGS = ([f'{name} = "q8Zr2LmN4pX7"' for name in [*_NAMES, "secret", "passwd", "password", "pwd", "token"]]
              + [f"aws{a}secret{b}{c}key = {A40}" for a in ("", "_") for b in ("", "_") for c in ("", "access", "access_")]
              + ["Bearer " + "abcDEF123456ghiJKL789", "token " + "abcDEF123456ghiJKL789"])


@pytest.mark.parametrize("spelling", [*_SPELLINGS, *(spelling.upper() for spelling in _SPELLINGS)])
def test_every_spelling_a_rule_allows_is_found_where_the_rule_is_tried(spelling: str) -> None:
    for text in (spelling, "x " + spelling + " y", "line\n  " + spelling + "\n"):
        places = secrets_module._keyword_places(text, secrets_module._KEYWORDS)
        found = [match for match in find_secrets(text) if match.kind != "secret-assignment" or "=" in spelling]
        assert found, text
        for rule in secrets_module._RULES:
            here = {keyword: places[keyword] for keyword in rule.keywords if keyword in places}
            if here and None not in here.values():
                known = {keyword: where for keyword, where in here.items() if where is not None}
                assert ([match.span() for match in secrets_module._rule_matches(rule, text, known)]
                        == [match.span() for match in rule.pattern.finditer(text)]), (rule.kind, text)

@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PIECES + ["ſecret", "ı", "\u0130", "AWS_SECRET_ACCESS_KEY=", "client-secret: ",
                                           "'" + A40 + "'", "x" * 30, "\n  export MY_API_TOKEN=", "\t AUTH_TOKEN = ",
                                           "SECRET_KEY=", "PASSWORD =", "passwd: ", "secret-key=>", "token_refresh",
                                           "keyboard", "_access_key :", "\n\t", "TOKEN_KEY="])
                | st.text(max_size=8), max_size=16).map("".join))
def test_each_rule_is_tried_where_a_match_can_start_and_finds_what_trying_everywhere_finds(text: str) -> None:
    places = secrets_module._keyword_places(text, secrets_module._KEYWORDS)
    for rule in secrets_module._RULES:
        here = {keyword: places[keyword] for keyword in rule.keywords if keyword in places}
        if here:
            known = {keyword: where for keyword, where in here.items() if where is not None}
            tried = secrets_module._rule_matches(rule, text, known if len(known) == len(here) else None)
            assert ([match.span() for match in tried]
                    == [match.span() for match in rule.pattern.finditer(text)]), rule.kind


def test_the_keyword_matcher_answers_threads_scanning_at_once() -> None:
    # The matcher scans without holding the GIL, so threads (the web server's) scan at the same time.
    import threading

    text = ("ordinary tool output line\n" * 20_000 + "token " + "AKIA" + "IOSFODNN7EXAMPLE").encode()
    answers: list[tuple[str, ...]] = []
    errors: list[BaseException] = []

    def scan() -> None:
        try:
            answers.extend(keywords_in(text) for _ in range(50))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=scan) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and set(answers) == {("akia", "token")}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_PIECES) | st.text(max_size=8), max_size=12).map("".join), st.sampled_from([1, 300]),
       st.sampled_from(["", "\u00e9", "\U0001f600"]))
def test_which_keywords_a_text_holds_and_where_is_what_substring_searches_say(text: str, copies: int,
                                                                               wide: str) -> None:
    text = (text * copies) + wide  # short ASCII text is searched keyword by keyword, other text by the matcher
    lower = text.lower()
    places = secrets_module._keyword_places(text, secrets_module._KEYWORDS)
    assert sorted(places) == [keyword for keyword in secrets_module._KEYWORDS if keyword in lower]
    for keyword, where in places.items():
        if where is not None:
            assert sorted(where) == [at for at in range(len(lower)) if lower.startswith(keyword, at)], keyword


def test_escapes_that_spell_no_keyword_letter_do_not_defeat_the_pre_check() -> None:
    # Colour codes in tool output are written as \u001b escapes: they cannot spell a keyword, so such a line is
    # still known to hold none (and is neither parsed nor searched by any rule).
    line = orjson.dumps({"type": "message", "message": {"role": "toolResult", "content": [
        {"type": "text", "text": "\x1b[32mPASSED\x1b[0m tests/test_parser.py é ü\n" * 50}]}})
    assert b"\\u001b" in line and keywords_in(line) == ()
    assert keywords_in(b'{"t": "api_\\u004Bey"}') and keywords_in(b'{"t": "api_\\u212Aey"}')


def test_key_names_of_the_agents_entries_do_not_count_as_keywords() -> None:
    # Every assistant message carries "totalTokens" in its usage: a key name, never searched, so the line is known
    # to hold no keyword (and is not parsed by the secret scan); the same word in a value still counts.
    usage = {"input": 10, "output": 5, "totalTokens": 15, "cost": {"total": 0.01}}
    line = orjson.dumps({"type": "message", "id": "a1", "message": {"role": "assistant", "usage": usage,
                                                                     "content": [{"type": "text", "text": "done"}]}})
    assert keywords_in(line) == ()
    assert keywords_in(orjson.dumps({"usage": usage, "text": "my token"})) == ("token",)
    assert keywords_in(orjson.dumps({"text": '"totalTokens": is how the field is written'})) == ("token",)
    assert keywords_in('"totalTokens": 15') == ("token",)  # text, not JSON: every word counts
