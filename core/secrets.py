"""Find credentials in session text and redact them before the text leaves the machine.

The rules follow the token shapes published in the gitleaks default rule table (a maintained, public list of
vendor token formats): each vendor prefix with its documented length and alphabet. They are kept here as plain
regular expressions (stdlib only) so every output that leaves the machine — exported pages, a shared catalog, answers
to other programs — calls the same `redact(text)`. Rules are anchored on vendor prefixes or on explicit syntax
(PEM armour, `user:pass@`, `Authorization:` headers, `api_key = "..."`), so ordinary prose, code and hex digests
(git SHAs, sha256 sums) are not matched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(slots=True, frozen=True)
class SecretMatch:
    """One detected secret: the character span [start, end) of `text` and the rule's kind name."""

    start: int
    end: int
    kind: str


# (kind, keywords, pattern, group). `keywords` are lower-case literals one of which every match contains (as in
# gitleaks' rule table): a rule's regular expression only runs on text holding one, which keeps the scan of ordinary
# text to a few substring searches. `group` names the part of the match that is the secret itself (0 = whole
# match), so that `password=` or `Bearer ` stays readable around the redaction marker.
_RULES: tuple[tuple[str, tuple[str, ...], re.Pattern[str], int], ...] = (
    ("private-key", ("private key",), re.compile(
        r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]{1,16384}?-----END[ A-Z0-9]{0,40}PRIVATE KEY"
        r"(?: BLOCK)?-----"), 0),
    ("aws-access-key", ("akia", "asia", "abia", "acca", "a3t"),
     re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"), 0),
    ("aws-secret-key", ("secret",), re.compile(
        r"(?i)\baws_?secret_?(?:access_?)?key\b[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"), 1),
    ("github-token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
     re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b"), 0),
    ("github-token", ("github_pat_",), re.compile(r"\bgithub_pat_[A-Za-z0-9_]{82}\b"), 0),
    ("gitlab-token", ("glpat-",), re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b"), 0),
    ("anthropic-key", ("sk-ant-",), re.compile(r"\bsk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_-]{80,}"), 0),
    ("openai-key", ("t3blbkfj",),
     re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}"), 0),
    ("openai-key", ("sk-proj-", "sk-svcacct-", "sk-admin-"),
     re.compile(r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}"), 0),
    ("openai-key", ("sk-",), re.compile(r"\bsk-[A-Za-z0-9]{48}\b"), 0),
    ("slack-token", ("xox",), re.compile(r"\bxox[baprse]-[A-Za-z0-9-]{10,250}"), 0),
    ("slack-webhook", ("hooks.slack.com",),
     re.compile(r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/]{20,}"), 0),
    ("google-api-key", ("aiza",), re.compile(r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"), 0),
    ("gcp-service-account", ("private_key_id",), re.compile(r"\"private_key_id\"\s*:\s*\"([a-f0-9]{40})\""), 1),
    ("azure-storage-key", ("accountkey=",), re.compile(r"AccountKey=([A-Za-z0-9+/]{86}==)"), 1),
    ("azure-client-secret", ("q~",),
     re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])"), 0),
    ("stripe-key", ("_live_", "_test_"), re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,99}\b"), 0),
    ("jwt", ("eyj",), re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), 0),
    ("url-password", ("@",),
     re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@\"'<>]{1,128}:([^\s@/\"'<>]{1,256})@"), 1),
    ("auth-header", ("bearer", "basic", "token"),
     re.compile(r"(?i)\b(?:bearer|basic|token)\s+([A-Za-z0-9._~+/-]{16,}=*)"), 1),
    ("secret-assignment", ("key", "secret", "passw", "pwd", "token"), re.compile(
        r"(?i)(?:api[_-]?key|apikey|secret[_-]?key|client[_-]?secret|access[_-]?token"
        r"|auth[_-]?token|secret|passwd|password|pwd|token)\b[\"']?\s*(?::=|=>|[:=])\s*"
        r"[\"']([^\"'\s]{8,256})[\"']"), 1),
    ("secret-assignment", ("key", "secret", "passw", "token"), re.compile(
        r"(?m)^[ \t]*(?:export[ \t]+)?[A-Z0-9_]{0,40}(?:API_KEY|APIKEY|SECRET_KEY|CLIENT_SECRET|ACCESS_TOKEN|AUTH_TOKEN"
        r"|SECRET|PASSWORD|PASSWD|TOKEN)[ \t]*=[ \t]*([^\s\"'#]{8,256})"), 1),
)

# Every rule's keyword, for the pre-check. Python's `re` tries each alternative of a keyword alternation at every
# position (about twenty times slower than this on prose), so the pre-check is plain substring searches of the
# lower-cased text instead.
_KEYWORDS = tuple(sorted({keyword for _, keywords, _, _ in _RULES for keyword in keywords}))


def might_hold_secret(text: str) -> bool:
    """False when `text` holds no rule's keyword, so no rule can match it (a quick pre-check for large scans)."""
    lower = text.lower()
    return any(keyword in lower for keyword in _KEYWORDS)


# The pre-check of raw lines looks for a smaller set of keywords: those that hold no other keyword ("key" stands for
# "private key", "accountkey=" and "private_key_id"). Each keyword is tried when one of the ones it holds is found.
_MINIMAL = tuple(keyword for keyword in _KEYWORDS if not any(other != keyword and other in keyword for other in _KEYWORDS))
_MINIMAL_BYTES = tuple(keyword.encode("ascii") for keyword in _MINIMAL)
_COVERS = tuple((keyword, frozenset(small for small in _MINIMAL if small in keyword)) for keyword in _KEYWORDS)
# Raw JSON in which a keyword could hide from a byte search: a `\u` escape can spell any character, and the Kelvin
# sign (U+212A, UTF-8 e2 84 aa) lower-cases to an ASCII "k" (the only character outside ASCII whose lower case
# completes an ASCII keyword).
_HIDING = (b"\\u", "\u212a".encode("utf-8"))
# Lower-cases ASCII letters and turns every byte that neither a minimal keyword nor a hiding sequence holds into a
# space, in one pass: each occurrence of one of them then lies inside one space-separated word.
_KEPT = frozenset(b"".join((*_MINIMAL_BYTES, *_HIDING)))
_WORDS = bytes((byte | 0x20 if 65 <= byte <= 90 else byte) if (byte | 0x20 if 65 <= byte <= 90 else byte) in _KEPT
               else 0x20 for byte in range(256))
_SEARCHED = (*_MINIMAL_BYTES, *_HIDING)
# Whether any of them occurs in a short line, in one call (there the overhead of a call per keyword is what costs;
# on long text an alternation is slow wherever a keyword's first letter is frequent, as in `xxxx`).
_ANY_WORD = re.compile(b"|".join(re.escape(word) for word in sorted(_SEARCHED, key=len, reverse=True)))
# Lines longer than this are searched in their distinct words only: long tool output repeats its words a lot, and
# a search per keyword over every byte would cost many times the parse of the line.
_DISTINCT_WORDS_FROM = 2048


def keywords_in_json(raw: bytes) -> tuple[str, ...]:
    """The rules' keywords that may occur in any string of the JSON value `raw` is the text of (a superset: key
    names, numbers and escapes count too); () when none can, so the value needs no redaction at all.

    This is the pre-check of whole session lines, run on the raw bytes before (or instead of) parsing: one pass maps
    the line to its lower-cased words, and only the few minimal keywords are searched for there. A line with an
    escape that could spell a keyword gets every keyword, to be decided string by string.
    """
    words = raw.translate(_WORDS)
    if len(words) > _DISTINCT_WORDS_FROM:
        words = b" ".join(set(words.split()))
        if not any(word in words for word in _SEARCHED):
            return ()
    elif _ANY_WORD.search(words) is None:
        return ()
    if any(hiding in words for hiding in _HIDING):
        return _KEYWORDS
    found = frozenset(keyword for keyword, encoded in zip(_MINIMAL, _MINIMAL_BYTES) if encoded in words)
    return tuple(keyword for keyword, covers in _COVERS if not covers.isdisjoint(found))


# Values that assignment-style rules would match but which are placeholders, not secrets.
_PLACEHOLDER = re.compile(r"(?i)^(?:\$\{?[A-Z_]+\}?|<[^>]*>|x{6,}|\*{6,}|\.{3,}|changeme|your[_-].*|example.*"
                          r"|\[REDACTED:[a-z-]+\])$")


def _keywords_in(lower: str) -> tuple[str, ...]:
    """The rules' keywords that occur in `lower` (lower-cased text)."""
    return tuple(keyword for keyword in _KEYWORDS if keyword in lower)


def find_secrets(text: str, keywords: tuple[str, ...] | None = None) -> list[SecretMatch]:
    """Every secret found in `text`, sorted by position, overlapping findings merged (the earlier rule's kind kept).

    `keywords`, when given, are the keywords known to occur in a larger text holding `text`: only they are tried.
    """
    lower = text.lower()
    present = _keywords_in(lower) if keywords is None else tuple(keyword for keyword in keywords if keyword in lower)
    if not present:
        return []
    found: list[SecretMatch] = []
    for kind, rule_keywords, pattern, group in _RULES:
        if not any(keyword in present for keyword in rule_keywords):
            continue
        for match in pattern.finditer(text):
            start, end = match.span(group)
            if group and _PLACEHOLDER.match(match.group(group)):
                continue
            found.append(SecretMatch(start, end, kind))
    found.sort(key=lambda item: (item.start, -item.end))
    merged: list[SecretMatch] = []
    for item in found:
        if merged and item.start < merged[-1].end:
            last = merged[-1]
            if item.end > last.end:
                merged[-1] = SecretMatch(last.start, item.end, last.kind)
            continue
        merged.append(item)
    return merged


def redact(text: str, keywords: tuple[str, ...] | None = None) -> str:
    """`text` with each detected secret replaced by `[REDACTED:<kind>]`; text without secrets is returned unchanged."""
    matches = find_secrets(text, keywords)
    if not matches:
        return text
    parts: list[str] = []
    position = 0
    for item in matches:
        parts.append(text[position:item.start])
        parts.append(f"[REDACTED:{item.kind}]")
        position = item.end
    parts.append(text[position:])
    return "".join(parts)


def redact_value(value: Any, keywords: tuple[str, ...] | None = None) -> Any:
    """`value` (parsed JSON) with every string inside it redacted; containers holding a secret are copied, never
    changed in place, and a value in which no rule's keyword occurs is returned as it is.

    The keyword pre-check runs once on the whole value serialized (fast, in C); the strings inside are then only
    searched for the keywords found there. `keywords`, when given, are those known to be the only ones that can
    occur in `value` (say, from `keywords_in_json` on the line it was parsed from): the serialization is skipped.
    """
    if isinstance(value, str):
        return redact(value, keywords)
    if not isinstance(value, (dict, list)):
        return value
    if keywords is not None:
        return _redact_within(value, keywords) if keywords else value
    try:
        serialized = orjson.dumps(value).decode("utf-8")
    except (TypeError, orjson.JSONEncodeError):
        keywords = _KEYWORDS  # not plain JSON (say, an int beyond 64 bits): try every keyword
    else:
        keywords = _keywords_in(serialized.lower())
        if not keywords:
            return value
    return _redact_within(value, keywords)


def _redact_within(value: Any, keywords: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return redact(value, keywords)
    if isinstance(value, dict):
        return {key: _redact_within(item, keywords) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact_within(item, keywords) for item in value]
    return value
