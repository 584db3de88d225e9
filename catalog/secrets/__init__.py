"""Find credentials in session text and redact them before the text leaves the machine.

The rules follow the token shapes published in the gitleaks default rule table (a maintained, public list of
vendor token formats): each vendor prefix with its documented length and alphabet. They are kept here as Python
regular expressions so every output that leaves the machine — exported pages, a shared catalog, answers to other
programs — calls the same `redact(text)`. Rules are anchored on vendor prefixes or on explicit syntax (PEM armour,
`user:pass@`, `Authorization:` headers, `api_key = "..."`), so ordinary prose, code and hex digests (git SHAs,
sha256 sums) are not matched.

Each rule also names keywords that every match contains. Text holding none of them cannot hold a secret, and most
session text holds none, so the cost of a scan is the cost of `keywords_in`: one pass of a compiled multi-literal
matcher (Hyperscan) over the raw bytes, before anything is parsed. Many keywords are common words ("token",
"secret", "key"): the rules that use them also say, as byte expressions over raw JSON, what must follow the word
in a match, and `secret_places` finds the few places in a file's raw lines where a rule may match at all.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(slots=True, frozen=True)
class SecretMatch:
    """One detected secret: the character span [start, end) of `text` and the rule's kind name."""

    start: int
    end: int
    kind: str


@dataclass(slots=True, frozen=True)
class _Rule:
    """One detector rule.

    `keywords` are lower-case literals one of which every match contains (as in gitleaks' rule table): the rule's
    regular expression only runs on text holding one, which keeps the scan of ordinary text to a few substring
    searches. `group` names the part of the match that is the secret itself (0 = whole match), so that `password=`
    or `Bearer ` stays readable around the redaction marker. `lead`, when set, bounds how far into a match its
    keyword starts: the expression is then tried only at the few places that close to a keyword, not at every
    position of the text (what a case-insensitive alternation costs on long tool output). `line_start`: every match
    starts a line and holds no newline, so it is tried only at the start of each line holding a keyword.
    `offsets`, when set, says more exactly than `lead` where a match starts: every match holds one of the keywords
    this many characters from its start (one of the offsets listed for that keyword). `follows`, when set, says what
    every match holds right after each keyword (an expression matched where the keyword ends, with the rule's own
    flags): an occurrence of a keyword not followed so is not a place a match can hold it, and is not tried. Most
    occurrences of common words ("token_refresh", "keyboard") end there, at one cheap test instead of one try of
    the rule per offset. `raw`, when set, is an expression (Hyperscan's syntax over bytes, the rule's own case
    rule) matching in the raw JSON of a session line wherever a match of the rule can be in any string of it,
    however the JSON writer escaped it (built from the _RAW_ pieces below); without it, the keywords are.
    """

    kind: str
    keywords: tuple[str, ...]
    pattern: re.Pattern[str]
    group: int
    lead: int | None = None
    line_start: bool = False
    offsets: dict[str, tuple[int, ...]] | None = None
    follows: dict[str, re.Pattern[str]] | None = None
    raw: bytes | None = None

    def back(self, keyword: str) -> Sequence[int]:
        """How far before an occurrence of `keyword` a match may start (with `lead` or `offsets` set)."""
        if self.offsets is not None:
            return self.offsets.get(keyword, ())
        assert self.lead is not None
        return range(self.lead + 1)


# Pieces of the rules' `raw` expressions: one character of a class of the text, as the raw JSON of a string may
# spell it. JSON writes `"` and `\` escaped, may write `/` as `\/`, writes control characters as `\n`, `\t`, ...
# or `\u00XX`, and other characters as themselves (UTF-8 bytes) or as `\uXXXX`. A class of ASCII letters, digits
# and punctuation needs neither the bytes outside ASCII nor `\u` escapes: the only characters outside ASCII that a
# case-insensitive class of ASCII letters matches are those of _FOLDS_TO_ASCII, and a `\u` escape of a printable
# ASCII character is one of _HIDING; a line holding either is searched whole (see secret_places). A raw piece is
# at least one byte for each character of the text, so a count of characters is a lower bound on the pieces, and
# no piece holds a newline: what the expressions find lies within one line.
_RAW_ESCAPED = rb"\\u[0-9A-Fa-f]{4}"
_RAW_SPACE = rb"(?:[ \x80-\xff]|\\[tnrf]|" + _RAW_ESCAPED + rb")"  # \s
_RAW_BLANK = rb"(?: |\\t|\\u0009)"  # [ \t]
_RAW_QUOTE = rb"(?:\\\"|')"  # ["']
_RAW_VALUE = rb"(?:[!#-&(-\[\]-\x7f\x80-\xff]|\\[\\/b]|" + _RAW_ESCAPED + rb")"  # [^"'\s]
_RAW_ENV_VALUE = rb"(?:[!$-&(-\[\]-\x7f\x80-\xff]|\\[\\/b]|" + _RAW_ESCAPED + rb")"  # [^\s"'#]
_RAW_USER = rb"(?:[!#-&(-.0-9;=?A-\[\]-\x7f\x80-\xff]|\\[\\b]|" + _RAW_ESCAPED + rb")"  # [^\s:/@"'<>]
_RAW_PASSWORD = rb"(?:[!#-&(-.0-;=?A-\[\]-\x7f\x80-\xff]|\\[\\b]|" + _RAW_ESCAPED + rb")"  # [^\s@/"'<>]
_RAW_SLASH = rb"(?:/|\\/)"

_RULES: tuple[_Rule, ...] = (
    _Rule("private-key", ("private key",), re.compile(
        r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]{1,16384}?-----END[ A-Z0-9]{0,40}PRIVATE KEY"
        r"(?: BLOCK)?-----"), 0, lead=50),
    _Rule("aws-access-key", ("akia", "asia", "abia", "acca", "a3t"),
     re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"), 0, lead=0),
    _Rule("aws-secret-key", ("secret",), re.compile(
        r"(?i)\baws_?secret_?(?:access_?)?key\b[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"), 1, lead=4,
          offsets={"secret": (3, 4)},  # aws_secret, awssecret
          follows={"secret": re.compile(r"(?i)_?(?:access_?)?key\b[\"']?\s*[:=]")},
          raw=rb"secret_?(?:access_?)?key" + _RAW_QUOTE + rb"?" + _RAW_SPACE + rb"*[:=]" + _RAW_SPACE + rb"*"
          + _RAW_QUOTE + rb"?(?:[A-Za-z0-9/+]|\\/){40}"),
    _Rule("github-token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
     re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b"), 0, lead=0),
    _Rule("github-token", ("github_pat_",), re.compile(r"\bgithub_pat_[A-Za-z0-9_]{82}\b"), 0, lead=0),
    _Rule("gitlab-token", ("glpat-",), re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b"), 0, lead=0),
    _Rule("anthropic-key", ("sk-ant-",), re.compile(r"\bsk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_-]{80,}"), 0, lead=0),
    _Rule("openai-key", ("t3blbkfj",),
     re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}"), 0),
    _Rule("openai-key", ("sk-proj-", "sk-svcacct-", "sk-admin-"),
     re.compile(r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}"), 0, lead=0),
    _Rule("openai-key", ("sk-",), re.compile(r"\bsk-[A-Za-z0-9]{48}\b"), 0, lead=0, raw=rb"sk-[A-Za-z0-9]{48}"),
    _Rule("slack-token", ("xox",), re.compile(r"\bxox[baprse]-[A-Za-z0-9-]{10,250}"), 0, lead=0),
    _Rule("slack-webhook", ("hooks.slack.com",),
     re.compile(r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/]{20,}"), 0, lead=8),
    _Rule("google-api-key", ("aiza",), re.compile(r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"), 0, lead=0),
    _Rule("gcp-service-account", ("private_key_id",), re.compile(r"\"private_key_id\"\s*:\s*\"([a-f0-9]{40})\""), 1, lead=1),
    _Rule("azure-storage-key", ("accountkey=",), re.compile(r"AccountKey=([A-Za-z0-9+/]{86}==)"), 1, lead=0),
    _Rule("azure-client-secret", ("q~",),
     re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])"), 0, lead=4),
    _Rule("stripe-key", ("_live_", "_test_"), re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,99}\b"), 0, lead=2),
    _Rule("jwt", ("eyj",), re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), 0, lead=0),
    _Rule("url-password", ("@",),
     re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@\"'<>]{1,128}:([^\s@/\"'<>]{1,256})@"), 1,
          raw=rb":" + _RAW_SLASH + _RAW_SLASH + _RAW_USER + rb"+:" + _RAW_PASSWORD + rb"+@"),
    _Rule("auth-header", ("bearer", "basic", "token"),
     re.compile(r"(?i)\b(?:bearer|basic|token)\s+([A-Za-z0-9._~+/-]{16,}=*)"), 1, lead=0,
          raw=rb"(?:bearer|basic|token)" + _RAW_SPACE + rb"+(?:[A-Za-z0-9._~+/\-]|\\/){16}"),
    _Rule("secret-assignment", ("key", "secret", "passw", "pwd", "token"), re.compile(
        r"(?i)(?:api[_-]?key|apikey|secret[_-]?key|client[_-]?secret|access[_-]?token"
        r"|auth[_-]?token|secret|passwd|password|pwd|token)\b[\"']?\s*(?::=|=>|[:=])\s*"
        r"[\"']([^\"'\s]{8,256})[\"']"), 1, lead=7,
          # apikey/api_key; secret..., clientsecret/client_secret; token, authtoken/auth_token, accesstoken/access_token
          offsets={"key": (3, 4), "secret": (0, 6, 7), "token": (0, 4, 5, 6, 7), "passw": (0,), "pwd": (0,)},
          # Each keyword ends the name (secret may go on as secret_key, passw as passwd/password), then the separator.
          follows={keyword: re.compile(r"(?i)" + rest + r"\b[\"']?\s*(?::=|=>|[:=])") for keyword, rest in
                   (("key", ""), ("secret", r"(?:[_-]?key)?"), ("token", ""), ("passw", "(?:d|ord)"), ("pwd", ""))},
          raw=rb"(?:key|secret|token|passw(?:d|ord)|pwd)" + _RAW_QUOTE + rb"?" + _RAW_SPACE + rb"*[:=][=>]?"
          + _RAW_SPACE + rb"*" + _RAW_QUOTE + _RAW_VALUE + rb"{8}"),
    _Rule("secret-assignment", ("key", "secret", "passw", "token"), re.compile(
        r"(?m)^[ \t]*(?:export[ \t]+)?[A-Z0-9_]{0,40}(?:API_KEY|APIKEY|SECRET_KEY|CLIENT_SECRET|ACCESS_TOKEN|AUTH_TOKEN"
        r"|SECRET|PASSWORD|PASSWD|TOKEN)[ \t]*=[ \t]*([^\s\"'#]{8,256})"), 1, line_start=True,
          # The keyword of the name's last word (SECRET may go on as SECRET_KEY, PASSW as PASSWD/PASSWORD), then "=".
          follows={keyword: re.compile(rest + r"[ \t]*=") for keyword, rest in
                   (("key", ""), ("secret", "(?:_KEY)?"), ("token", ""), ("passw", "(?:ORD|D)"))},
          raw=rb"(?:KEY|SECRET|TOKEN|PASSW(?:ORD|D))" + _RAW_BLANK + rb"*=" + _RAW_BLANK + rb"*" + _RAW_ENV_VALUE
          + rb"{8}"),
)

# Every rule's keyword, for the pre-check.
_KEYWORDS = tuple(sorted({keyword for rule in _RULES for keyword in rule.keywords}))
# Text in which a keyword could hide from a byte search, as expressions: in raw JSON a `\u` escape of a printable
# ASCII character or of the Kelvin sign (U+212A, which lower-cases to an ASCII "k"), and the Kelvin sign itself
# (UTF-8 e2 84 aa). No other character lower-cases to text that could complete an ASCII keyword (U+0130 becomes "i"
# followed by a combining dot, and no keyword ends in "i"); escapes of control characters (ANSI colours in tool
# output) spell none. Finding one of these makes every keyword count.
_HIDING = (rb"\\u00[2-7][0-9A-Fa-f]", rb"\\u212[Aa]", re.escape("\u212a".encode("utf-8")))


# Characters outside ASCII that a case-insensitive expression matches to an ASCII letter (dotted and dotless i, the
# Kelvin sign, the long s): in text holding one, a match may spell its keyword with it, where a search of the
# lower-cased text does not find the keyword.
_FOLDS_TO_ASCII = ("\u0130", "\u0131", "\u212a", "\u017f")

# Key names of the agent's entries that hold a keyword ("token"): on nearly every assistant message (its usage) and
# compaction. Key names are never searched (only string values are session text), and these three, quote to colon,
# can only be key names in raw JSON (in a string value their quotes would be escaped), so a line's keywords are
# counted without them.
_KEY_NAMES = (b'"totalTokens":', b'"tokensBefore":', b'"tokensAfter":')


class _KeywordMatcher:
    """Every keyword, hiding sequence and key name compiled into one Hyperscan database (ASCII case ignored, each
    reported at most once): a single pass over the bytes at several hundred MB/s to GB/s, where Python's own
    searches cost one pass per keyword (or, as one alternation, a try of every keyword at every position). A second
    database reports every occurrence of each keyword, for the places the rules are tried at.

    Hyperscan needs a scratch space per concurrent scan (it releases the GIL while scanning), so each thread gets
    its own; the database itself is shared.
    """

    def __init__(self) -> None:
        import hyperscan  # here, not at import time: most commands never look for secrets

        self._hyperscan = hyperscan
        patterns = (*(re.escape(keyword.encode("ascii")) for keyword in _KEYWORDS), *_HIDING,
                    *(re.escape(name) for name in _KEY_NAMES))
        self._database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._database.compile(expressions=list(patterns), ids=list(range(len(patterns))),
                               flags=hyperscan.HS_FLAG_CASELESS | hyperscan.HS_FLAG_SINGLEMATCH)
        # Every occurrence of each keyword (ASCII case ignored), for where the rules may match, and of each
        # character of _FOLDS_TO_ASCII (in UTF-8: bytes the ignoring of ASCII case leaves alone).
        occurring = (*(re.escape(keyword.encode("ascii")) for keyword in _KEYWORDS),
                     *(re.escape(char.encode("utf-8")) for char in _FOLDS_TO_ASCII))
        self._occurrences = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._occurrences.compile(expressions=list(occurring), ids=list(range(len(occurring))),
                                  flags=hyperscan.HS_FLAG_CASELESS)
        # Where in raw JSON lines a rule may match: each rule's `raw` expression (or its keywords), and every sequence
        # through which text may escape those expressions (_HIDING, the characters of _FOLDS_TO_ASCII as UTF-8 and
        # as `\u` escapes).
        places = [(rule.raw, bool(rule.pattern.flags & re.IGNORECASE)) if rule.raw is not None
                  else (b"|".join(re.escape(keyword.encode("ascii")) for keyword in rule.keywords), True)
                  for rule in _RULES]
        places += [(hiding, True) for hiding in _HIDING]
        places += [(re.escape(char.encode("utf-8")), False) for char in _FOLDS_TO_ASCII]
        places += [(b"\\\\u%04x" % ord(char), True) for char in _FOLDS_TO_ASCII]
        self._places = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._places.compile(expressions=[expression for expression, _ in places], ids=list(range(len(places))),
                             flags=[hyperscan.HS_FLAG_CASELESS if caseless else 0 for _, caseless in places])
        self._local = threading.local()

    def _scan(self, database: Any, data: bytes, found: list[Any], handler: Any) -> None:
        scratches = getattr(self._local, "scratches", None)
        if scratches is None:
            scratches = self._local.scratches = {}
        scratch = scratches.get(id(database))
        if scratch is None:
            scratch = scratches[id(database)] = self._hyperscan.Scratch(database)
        database.scan(data, scratch=scratch, match_event_handler=handler, context=found)

    def found(self, data: bytes) -> list[int]:
        """The ids (indexes into _KEYWORDS, then _HIDING, then _KEY_NAMES) of the patterns occurring in `data`."""
        found: list[int] = []
        self._scan(self._database, data, found, _note_match)
        return found

    def occurrences(self, data: bytes) -> list[tuple[int, int]]:
        """(pattern index, end offset) of every occurrence of a keyword in `data` (ASCII case ignored), then of
        the characters of _FOLDS_TO_ASCII (indexes from len(_KEYWORDS) on)."""
        found: list[tuple[int, int]] = []
        self._scan(self._occurrences, data, found, _note_occurrence)
        return found

    def places(self, data: bytes) -> list[int]:
        """The end offsets of the places in `data` (raw JSON lines) where a rule may match (see secret_places)."""
        found: list[int] = []
        self._scan(self._places, data, found, _note_end)
        return found


def _note_match(pattern: int, _start: int, _end: int, _flags: int, found: object) -> None:
    assert isinstance(found, list)
    found.append(pattern)


def _note_occurrence(pattern: int, _start: int, end: int, _flags: int, found: object) -> None:
    assert isinstance(found, list)
    found.append((pattern, end))


def _note_end(_pattern: int, _start: int, end: int, _flags: int, found: object) -> None:
    assert isinstance(found, list)
    found.append(end)


@functools.cache
def _matcher() -> _KeywordMatcher:
    return _KeywordMatcher()


def keywords_in(data: bytes | str) -> tuple[str, ...]:
    """The rules' keywords that may occur in `data` (a superset): () when none can, so nothing in it needs redaction.

    `data` is text, or the raw bytes of a JSON value (a session line): then the answer covers every string inside
    it (key names, numbers and escapes count too), and the line need not even be parsed when it is (). This is the
    one pre-check of every caller: the exported pages, the secret scan, the catalog's `--redact`, the web pages and
    the MCP answers.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if not raw:
        return ()
    found = _matcher().found(raw)
    if isinstance(data, bytes) and any(pattern >= len(_KEYWORDS) + len(_HIDING) for pattern in found):
        for name in _KEY_NAMES:
            raw = raw.replace(name, b'"":')
        found = _matcher().found(raw)
    if any(len(_KEYWORDS) <= pattern < len(_KEYWORDS) + len(_HIDING) for pattern in found):
        return _KEYWORDS
    return tuple(_KEYWORDS[pattern] for pattern in sorted(found) if pattern < len(_KEYWORDS))


def secret_places(data: bytes) -> list[int]:
    """Where in `data`, whole lines of a session file (raw JSONL), a secret may be: the sorted end offsets of the
    places a rule's expression may match in a string of a line, whatever escapes its JSON writer chose. A line
    holding none holds no secret in any of its strings (so it need not be parsed), and each place lies within one
    line. A line where text may escape the byte expressions (a `\\u` escape of a printable character, a character
    that a case-insensitive match folds to ASCII) is one such place.

    Most lines holding a keyword hold it as a word ("token", "keyboard", "secret") and not as a rule's match needs
    it (an assignment, a header, a token's shape): the scan parses only the lines a rule may match in.
    """
    if not data:
        return []
    return sorted(_matcher().places(data))


# Values that assignment-style rules would match but which are placeholders, not secrets.
_PLACEHOLDER = re.compile(r"(?i)^(?:\$\{?[A-Z_]+\}?|<[^>]*>|x{6,}|\*{6,}|\.{3,}|changeme|your[_-].*|example.*"
                          r"|\[REDACTED:[a-z-]+\])$")





def _rule_matches(rule: _Rule, text: str, places: dict[str, list[int]] | None) -> Iterator[re.Match[str]]:
    """What `rule.pattern.finditer(text)` yields. `places`: where each of the rule's keywords that `text` holds
    occurs in it (None when unknown). With them and what the rule says of where a match starts (`lead`, `offsets`
    or `line_start`), the expression is tried only there, each place in order and none inside a match already
    found, so the matches are the same ones."""
    if places is None or (rule.lead is None and not rule.line_start):
        yield from rule.pattern.finditer(text)
        return
    starts: set[int] = set()
    for keyword, occurrences in places.items():
        follows = rule.follows.get(keyword) if rule.follows is not None else None
        if follows is not None:
            size = len(keyword)
            occurrences = [at for at in occurrences if follows.match(text, at + size)]
        if rule.line_start:
            starts.update(text.rfind("\n", 0, at) + 1 for at in occurrences)
            continue
        for back in rule.back(keyword):
            starts.update(at - back for at in occurrences if at >= back)
    done = 0
    for start in sorted(starts):
        if start < done:
            continue
        match = rule.pattern.match(text, start)
        if match is not None:
            yield match
            done = max(match.end(), start + 1)


# Up to this many characters, ASCII text is searched for each keyword by Python (faster than a call of the matcher
# when the text is short); longer or non-ASCII text in one pass of the matcher.
_SEARCHED_ONE_BY_ONE = 2048


def _keyword_places(text: str, keywords: tuple[str, ...]) -> dict[str, list[int] | None]:
    """Those of `keywords` that occur in `text.lower()`, each with the indexes in `text` where it starts — or with
    None when `text` holds a character of _FOLDS_TO_ASCII (its lower-cased form may then be shorter or longer, and
    a case-insensitive expression may match it where its keyword is spelled otherwise)."""
    if len(text) <= _SEARCHED_ONE_BY_ONE and text.isascii():
        lower = text.lower()
        places: dict[str, list[int] | None] = {}
        for keyword in keywords:
            at = lower.find(keyword)
            if at >= 0:
                found = places[keyword] = []
                while at >= 0:
                    found.append(at)
                    at = lower.find(keyword, at + 1)
        return places
    # Without those characters, a keyword occurs in the lower-cased text exactly where it occurs in the text with
    # ASCII case ignored, and so in its UTF-8 bytes, where the matcher finds it; a keyword's byte offset becomes an
    # index of the text by counting the characters before it (decoding from the previous one's).
    data = text.encode("utf-8", "surrogatepass")
    occurrences = _matcher().occurrences(data)
    if any(pattern >= len(_KEYWORDS) for pattern, _end in occurrences):  # a character of _FOLDS_TO_ASCII
        lower = text.lower()
        return {keyword: None for keyword in keywords if keyword in lower}
    one_byte_each = len(data) == len(text)
    wanted = set(keywords)
    every: dict[str, list[int] | None] = {}
    byte_at = char_at = 0
    for pattern, end in sorted(occurrences, key=lambda found: found[1] - len(_KEYWORDS[found[0]])):
        keyword = _KEYWORDS[pattern]
        if keyword not in wanted:
            continue
        start = end - len(keyword)
        if one_byte_each:
            char_at = start
        elif start > byte_at:
            char_at += len(data[byte_at:start].decode("utf-8", "surrogatepass"))
            byte_at = start
        places_of = every.setdefault(keyword, [])
        assert places_of is not None
        places_of.append(char_at)
    return every


def find_secrets(text: str, keywords: tuple[str, ...] | None = None) -> list[SecretMatch]:
    """Every secret found in `text`, sorted by position, overlapping findings merged (the earlier rule's kind kept).

    `keywords`, when given, are the keywords known to occur in a larger text holding `text`: only they are tried.
    """
    if keywords is None:
        keywords = keywords_in(text)
    if not keywords:
        return []
    if len(text) <= _SEARCHED_ONE_BY_ONE and text.isascii():
        lower = text.lower()  # (most strings of an entry are short and hold none: said at once)
        if not any(keyword in lower for keyword in keywords):
            return []
    present = _keyword_places(text, keywords)
    if not present:
        return []
    found: list[SecretMatch] = []
    for rule in _RULES:
        keywords_here = [keyword for keyword in rule.keywords if keyword in present]
        if not keywords_here:
            continue
        places = {keyword: present[keyword] for keyword in keywords_here}
        known = {keyword: where for keyword, where in places.items() if where is not None}
        for match in _rule_matches(rule, text, known if len(known) == len(places) else None):
            start, end = match.span(rule.group)
            if rule.group and _PLACEHOLDER.match(match.group(rule.group)):
                continue
            found.append(SecretMatch(start, end, rule.kind))
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


class RedactedText(str):
    """Text already redacted (the head `redact_head` gives, say): `redact_value` keeps it as it is, since searching
    it again could find a match that only its cut made (a token cut short to a rule's length)."""


# How far past a cut `redact_head` searches: longer than any match of a rule that can hold whitespace (a private
# key's armour and body, at most about 16,550 characters; an assignment or URL password, a few hundred). A match
# holding no whitespace ends before the next whitespace character, where the search always ends too.
_REACH = 17_000
_WHITESPACE = re.compile(r"\s")


def redact_head(text: str, limit: int, keywords: tuple[str, ...] | None = None) -> str:
    """The first `limit` characters of `text`, redacted as `redact(text)` redacts them, for a cut that shows only
    those: a secret that starts before the cut is replaced whole (its marker then ends the head), so no part of it
    shows. Only the head and a bounded window past the cut are searched, however long `text` is.

    The window runs `_REACH` characters past the cut and then on to the next whitespace character: every match that
    starts before the cut ends inside it (a match longer than `_REACH` spans whitespace only where a rule allows a
    run of spaces before the secret, and then the secret itself lies past the cut), and the window never ends inside
    a token, so each such match is the one found in the whole text."""
    if len(text) <= limit:
        return redact(text, keywords)
    end = limit + _REACH
    space = _WHITESPACE.search(text, end)
    window = text[:space.start() if space is not None else len(text)] if end < len(text) else text
    parts: list[str] = []
    position = 0
    for item in find_secrets(window, keywords):
        if item.start >= limit:
            break
        parts.append(text[position:item.start])
        parts.append(f"[REDACTED:{item.kind}]")
        position = item.end
    if position < limit:
        parts.append(text[position:limit])
    return "".join(parts)


def redact_value(value: Any, keywords: tuple[str, ...] | None = None) -> Any:
    """`value` (parsed JSON) with every string inside it redacted; containers holding a secret are copied, never
    changed in place, and a value in which no rule's keyword occurs is returned as it is.

    The keyword pre-check runs once on the whole value serialized (fast, in C); the strings inside are then only
    searched for the keywords found there. `keywords`, when given, are those known to be the only ones that can
    occur in `value` (say, from `keywords_in` on the line it was parsed from): the serialization is skipped.
    A `RedactedText` inside is kept as it is.
    """
    if isinstance(value, str):
        return value if isinstance(value, RedactedText) else redact(value, keywords)
    if not isinstance(value, (dict, list)):
        return value
    if keywords is not None:
        return _redact_within(value, keywords) if keywords else value
    try:
        serialized = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        keywords = _KEYWORDS  # not plain JSON (say, an int beyond 64 bits): try every keyword
    else:
        keywords = keywords_in(serialized)
        if not keywords:
            return value
    return _redact_within(value, keywords)


def _redact_within(value: Any, keywords: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return value if isinstance(value, RedactedText) else redact(value, keywords)
    if isinstance(value, dict):
        return {key: _redact_within(item, keywords) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact_within(item, keywords) for item in value]
    return value
