"""Replay of the agent's recorded conformance cases against sessdex's own API.

A case folder holds `case.json` (ops), `expected.json` (recorded results and the files left behind) and
`input/`/`files/` copies. Each op is run through `Replay.run_op`; its value is rendered to the recorded
JSON conventions and compared, after the normalizations of the conformance README, as parsed JSON.
The agent's camelCase names are mapped to sessdex's Python API once, in the tables below.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sessdex.core.jsonl import parse_jsonl
from sessdex.core.paths import AgentPaths
from sessdex.core.runtime import SessionRuntime
from sessdex.core.session_manager import SessionManager

RECORDED_ROOT = "/tmp/omp-oracle-root"
BASE_CLOCK = "2025-03-01T10:00:00.000Z"


class UndefinedType:
    """JS `undefined`: a result the recorded agent left unset (Python has only None)."""

    def __repr__(self) -> str:
        return "UNDEFINED"


UNDEFINED = UndefinedType()


def iso_to_ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def ms_to_iso(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


class CaseClock:
    """The frozen case clock: advanced by 1000 ms before each op (except tick/setNow)."""

    def __init__(self) -> None:
        self.ms = iso_to_ms(BASE_CLOCK)

    def now_ms(self) -> int:
        return self.ms


class ScriptedIds:
    """Entry ids and session ids handed out in the recorded order."""

    def __init__(self, uuids: list[str], session_ids: list[str]) -> None:
        self._entry_ids = [u.replace("-", "")[-8:] for u in uuids]
        self._session_ids = list(session_ids)

    def entry_id(self) -> str:
        return self._entry_ids.pop(0)

    def session_id(self) -> str:
        return self._session_ids.pop(0)


def camel_to_snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@dataclass
class Case:
    """One recorded case read from disk."""

    directory: Path
    definition: dict[str, Any]
    expected: dict[str, Any]
    ignored: dict[int, list[str]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.directory.name


def load_cases(root: Path, extra_ignores: dict[str, dict[int, list[str]]] | None = None) -> list[Case]:
    """Every case under `root/cases`, with the per-op ignore lists of `root/deviations.json` (plus extras)."""
    deviations_path = root / "deviations.json"
    deviations = json.loads(deviations_path.read_text()) if deviations_path.exists() else {}
    cases = []
    for directory in sorted((root / "cases").iterdir()):
        if not (directory / "case.json").exists():
            continue
        case = Case(directory, json.loads((directory / "case.json").read_text()),
                    json.loads((directory / "expected.json").read_text()))
        for item in deviations.get("cases", {}).get(case.name, []):
            case.ignored.setdefault(item["i"], []).extend(item["ignore"])
        for index, paths in (extra_ignores or {}).get(case.name, {}).items():
            case.ignored.setdefault(index, []).extend(paths)
        cases.append(case)
    return cases


def load_sessdex_deviations(path: Path) -> dict[str, dict[int, list[str]]]:
    """sessdex's own documented departures (spec over recording), merged into every case set."""
    if not path.exists():
        return {}
    merged: dict[str, dict[int, list[str]]] = {}
    for name, items in json.loads(path.read_text())["cases"].items():
        for item in items:
            merged.setdefault(name, {}).setdefault(item["i"], []).extend(item["ignore"])
    return merged


def ignored_keys_everywhere(root: Path) -> set[str]:
    path = root / "deviations.json"
    if not path.exists():
        return set()
    return set(json.loads(path.read_text()).get("ignore_everywhere", {}).get("keys", []))


def session_ids_used(expected: dict[str, Any]) -> list[str]:
    """Snowflake values that appear in the recording (others went to temp file names)."""
    text = json.dumps(expected.get("results", [])) + json.dumps(expected.get("files", []))
    return [value for value in expected["issued"].get("snowflake", []) if value in text]


class Replay:
    """Runs one case's ops in a sandbox directory and renders each result."""

    def __init__(self, case: Case, root: Path, *, real_mode: bool = False) -> None:
        self.case = case
        self.root = root
        self.home = root / "home"
        self.tmp = root / "tmp"
        self.agent_dir = self.home / ".xcsh" / "agent"
        self.sessions = self.agent_dir / "sessions"
        self.clock = CaseClock()
        self.ids = None if real_mode else ScriptedIds(case.expected["issued"].get("uuid4", []),
                                                      session_ids_used(case.expected))
        self.environ: dict[str, str] = {}
        self.managers: dict[str, SessionManager] = {}
        self.refs: dict[str, Any] = {}
        self.state: dict[str, Any] = {}
        self.home.mkdir(parents=True)
        self.tmp.mkdir()
        for relative in case.definition.get("dirs", []):
            (root / relative).mkdir(parents=True, exist_ok=True)
        self.paths = AgentPaths(agent_dir=self.agent_dir, home=self.home, tmp_dir=self.tmp, naming="agent")
        self.runtime = SessionRuntime(paths=self.paths, ids=self.ids, environ=self.environ, tty_path=lambda: None)
        if not real_mode:
            self.runtime.clock = self.clock

    # -- history_ops sandbox protocol -------------------------------------------------------------
    def now_ms(self) -> int:
        return self.clock.ms

    # -- argument resolution ----------------------------------------------------------------------
    def substitute(self, text: str) -> str:
        home_encoded = str(self.home).lstrip("/").replace("/", "-")
        for token, value in (("$HOMEENC", home_encoded), ("$SESSIONS", str(self.sessions)),
                             ("$AGENT", str(self.agent_dir)), ("$HOME", str(self.home)),
                             ("$TMP", str(self.tmp)), ("$ROOT", str(self.root))):
            text = text.replace(token, value)
        return text

    def resolve(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.substitute(value)
        if isinstance(value, list):
            return [self.resolve(item) for item in value]
        if isinstance(value, dict):
            if "$ref" in value:
                return self.refs[value["$ref"]]
            if "$repeat" in value:
                return value["$repeat"] * value["count"]
            if "$concat" in value:
                return "".join(_as_text(self.resolve(part)) for part in value["$concat"])
            if "$jsonl" in value:
                return "".join(js_json(self.resolve(item)) + "\n" for item in value["$jsonl"])
            if "$readFile" in value:
                return Path(self.resolve(value["$readFile"])).read_text()
            if "$call" in value:
                manager_name, method, *args = value["$call"]
                return self.call_method(self.managers[manager_name], method, self.resolve(args))
            return {key: self.resolve(item) for key, item in value.items()}
        return value

    # -- ops --------------------------------------------------------------------------------------
    def run_op(self, op: dict[str, Any]) -> Any:
        kind = op["op"]
        if kind not in ("tick", "setNow"):
            self.clock.ms += 1000
        handler: Callable[[dict[str, Any]], Any] = getattr(self, "op_" + kind)
        value = handler(op)
        if "as" in op:
            self.refs[op["as"]] = value if not isinstance(value, SessionManager) else value
        self.flush_all()
        return value

    def skip_op(self, op: dict[str, Any]) -> None:
        """An op the recorded agent did not support still took its tick of the clock."""
        if op["op"] not in ("tick", "setNow"):
            self.clock.ms += 1000

    def flush_all(self) -> None:
        for manager in self.managers.values():
            try:
                manager.flush()
            except Exception:  # noqa: BLE001 - a broken manager reports on its own ops
                pass

    def op_tick(self, op: dict[str, Any]) -> Any:
        self.clock.ms += op.get("ms", 1000)
        return ms_to_iso(self.clock.ms)

    def op_setNow(self, op: dict[str, Any]) -> Any:
        self.clock.ms = iso_to_ms(op["iso"])
        return op["iso"]

    def op_setEnv(self, op: dict[str, Any]) -> Any:
        if op.get("value") is None:
            self.environ.pop(op["name"], None)
        else:
            self.environ[op["name"]] = op["value"]
        return None

    def op_writeFile(self, op: dict[str, Any]) -> Any:
        """Write the bytes of the op's own `content` (as the agent writes a string: UTF-8, a lone surrogate
        as U+FFFD). `input/` keeps only the last write of each path: there it must hold the same bytes."""
        path = Path(self.resolve(op["path"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        index = op_index(self.case, op)
        recorded = self.case.expected["results"][index].get("value") or {}
        data = js_utf8(self.resolve(op.get("content", "")))
        path.write_bytes(data)
        if recorded.get("input") and is_last_write(self.case, index):
            expected = (self.case.directory / recorded["input"]).read_bytes()
            if data != expected.replace(RECORDED_ROOT.encode(), str(self.root).encode()):
                raise AssertionError(f"writeFile {op['path']}: the op's content differs from {recorded['input']}")
        result: dict[str, Any] = {"path": str(path)}
        if recorded.get("input"):
            result["input"] = normalize_expected_root(recorded["input"], self.root)
        # The size as recorded: our sandbox root is longer than the recording's.
        result["bytes"] = len(data.replace(str(self.root).encode(), RECORDED_ROOT.encode()))
        return result

    def op_readFile(self, op: dict[str, Any]) -> Any:
        path = Path(self.resolve(op["path"]))
        return {"path": str(path), "content": path.read_text() if path.exists() else None}

    def op_utimes(self, op: dict[str, Any]) -> Any:
        path = Path(self.resolve(op["path"]))
        seconds = iso_to_ms(op["mtime"]) / 1000
        os.utime(path, (seconds, seconds))
        return {"path": str(path), "mtime": op["mtime"]}

    def op_listDir(self, op: dict[str, Any]) -> Any:
        path = Path(self.resolve(op["path"]))
        return sorted(os.listdir(path)) if path.exists() else []

    def op_symlink(self, op: dict[str, Any]) -> Any:
        path, target = Path(self.resolve(op["path"])), Path(self.resolve(op["target"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target)
        return {"path": str(path), "target": str(target)}

    def op_static(self, op: dict[str, Any]) -> Any:
        method = op["method"]
        args = self.resolve(op.get("args", []))
        if method in STATIC_FUNCTIONS:
            return call_with_recorded_arguments(functools.partial(STATIC_FUNCTIONS[method], self), args)
        value = call_with_recorded_arguments(
            functools.partial(getattr(SessionManager, camel_to_snake(method)), runtime=self.runtime), args)
        if isinstance(value, SessionManager):
            self.managers[op.get("into", "m")] = value
            return ManagerRef(op.get("into", "m"), value)
        return value

    def op_call(self, op: dict[str, Any]) -> Any:
        manager = self.managers[op.get("mgr", "m")]
        return self.call_method(manager, op["method"], self.resolve(op.get("args", [])))

    def call_method(self, manager: SessionManager, method: str, args: list[Any]) -> Any:
        return call_with_recorded_arguments(getattr(manager, camel_to_snake(method)), args)

    def op_fn(self, op: dict[str, Any]) -> Any:
        args = self.resolve(op.get("args", []))
        name = op.get("name") or op.get("api")
        return call_with_recorded_arguments(functools.partial(FUNCTIONS[name], self), args)

    def op_snapshot(self, op: dict[str, Any]) -> Any:
        return snapshot(self.managers[op.get("mgr", "m")], op, self.root)

    def op_entrySummary(self, op: dict[str, Any]) -> Any:
        return [entry_summary(entry) for entry in self.managers[op.get("mgr", "m")].get_entries()]

    def op_history(self, op: dict[str, Any]) -> Any:
        from tests.conformance import history_ops
        return history_ops.run_history_op(op, self)

    def op_historyWait(self, op: dict[str, Any]) -> Any:
        from tests.conformance import history_ops
        return history_ops.run_history_wait(op, self)

    def op_sqliteDump(self, op: dict[str, Any]) -> Any:
        from tests.conformance import history_ops
        return history_ops.run_sqlite_dump(op, self)

    def close(self) -> None:
        if self.state:
            from tests.conformance import history_ops
            history_ops.close_history(self)
        for manager in self.managers.values():
            try:
                manager.close()
            except Exception:  # noqa: BLE001 - closing is best effort at the end of a case
                pass


@dataclass
class ManagerRef:
    """A manager returned by a static op, rendered as the recording renders it."""

    name: str
    manager: SessionManager


def op_index(case: Case, op: dict[str, Any]) -> int:
    return next(i for i, candidate in enumerate(case.definition["ops"]) if candidate is op)


def is_last_write(case: Case, index: int) -> bool:
    """True when op `index` is the case's last writeFile of its path (the one `input/` keeps)."""
    path = case.definition["ops"][index]["path"]
    return not any(op.get("op") == "writeFile" and op.get("path") == path
                   for op in case.definition["ops"][index + 1:])


def call_with_recorded_arguments(function: Callable[..., Any], args: list[Any]) -> Any:
    """Call `function` with a recorded call's arguments, positionally as the agent passes them.

    Trailing arguments the agent's API takes but ours has no parameter for (options objects, a title's
    trigger, an entry's "source") are left out: none of them changes what is recorded.
    """
    parameters = inspect.signature(function).parameters.values()
    if any(parameter.kind is inspect.Parameter.VAR_POSITIONAL for parameter in parameters):
        return function(*args)
    positional = [parameter for parameter in parameters
                  if parameter.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    return function(*args[:len(positional)])


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def js_utf8(content: Any) -> bytes:
    """A file's bytes as the agent writes a string: UTF-8, each lone surrogate as U+FFFD."""
    if isinstance(content, bytes):
        return content
    return _LONE_SURROGATE.sub("\ufffd", str(content)).encode("utf-8")


def _js_number(value: float) -> str:
    if not math.isfinite(value):
        return "null"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    return re.sub(r"e([+-])0*(\d)", r"e\1\2", text) if "e" in text else text


def js_json(value: Any) -> str:
    """`JSON.stringify(value)`: compact, lone surrogates escaped, numbers formatted as JavaScript does."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, ensure_ascii=False))
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return json.dumps(value)
    if isinstance(value, float):
        return str(value) if isinstance(value, int) else _js_number(value)
    if isinstance(value, dict):
        return "{" + ",".join(js_json(str(key)) + ":" + js_json(item) for key, item in value.items()) + "}"
    return "[" + ",".join(js_json(item) for item in value) + "]"


# -- adapters from the agent's API to sessdex's -----------------------------------------------------

def _parse_session_content(replay: Replay, text: str) -> Any:
    return parse_jsonl(text).values


def _load_entries_from_file(replay: Replay, path: str) -> Any:
    """The file's records (title line, header, entries) when its header is valid, else []."""
    from sessdex.core.records import split_session_records

    data = Path(path).read_bytes() if Path(path).is_file() else b""
    values = parse_jsonl(data).values
    return values if split_session_records(values) is not None else []


def _get_recent_sessions(replay: Replay, session_dir: str, limit: int | None = None) -> Any:
    from sessdex.core.discovery import get_recent_sessions
    return [item.to_agent_json() for item in get_recent_sessions(session_dir, limit, now_ms=replay.clock.ms)]


def _find_most_recent_session(replay: Replay, session_dir: str) -> Any:
    from sessdex.core.discovery import find_most_recent_session
    found = find_most_recent_session(session_dir)
    return str(found) if found is not None else None


def _list(replay: Replay, cwd: str, session_dir: str | None = None, *_: Any) -> Any:
    from sessdex.core.discovery import list_sessions
    return [info.to_agent_json() for info in list_sessions(cwd, session_dir, paths=replay.paths)]


def _list_all(replay: Replay, *_: Any) -> Any:
    from sessdex.core.discovery import list_all_sessions
    return [info.to_agent_json() for info in list_all_sessions(paths=replay.paths)]


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "parseSessionContent": _parse_session_content,
    "loadEntriesFromFile": _load_entries_from_file,
    "getRecentSessions": _get_recent_sessions,
    "findMostRecentSession": _find_most_recent_session,
}

STATIC_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "list": _list,
    "listAll": _list_all,
}


# -- snapshots ------------------------------------------------------------------------------------

def snapshot(manager: SessionManager, op: dict[str, Any], root: Path) -> dict[str, Any]:
    """The manager's observable state in the recording's shape."""
    session_file = manager.get_session_file()
    value: dict[str, Any] = {
        "sessionId": manager.get_session_id(),
        "sessionFile": str(session_file) if session_file else UNDEFINED,
        "sessionDir": str(manager.get_session_dir()),
        "cwd": manager.get_cwd(),
    }
    if manager.get_session_name() is not None:
        value["sessionName"] = manager.get_session_name()
    if manager.get_title_source() is not None:
        value["titleSource"] = manager.get_title_source()
    value.update({
        "leafId": manager.get_leaf_id(),
        "header": manager.get_header(),
        "branchIds": [entry["id"] for entry in manager.get_branch()],
        "tree": [tree_node(node) for node in manager.get_tree()],
        "usage": manager.get_usage_statistics(),
        "injectedTtsrRules": manager.get_injected_ttsr_rules(),
    })
    context = manager.build_session_context()
    if op.get("fileSummary"):
        messages = context.pop("messages")
        context["messageSummary"] = [{"type": "ctx", "role": m.get("role"), "stringLengths": long_string_lengths(m)}
                                     for m in messages]
        value["context"] = context
        value["entrySummary"] = [entry_summary(entry) for entry in manager.get_entries()]
        value.update(file_summary(session_file, root))
    else:
        value["context"] = context
    if not op.get("omitEntries"):
        value["entries"] = manager.get_entries()
    if not op.get("fileSummary"):
        value["fileContent"] = Path(session_file).read_text() if session_file and Path(session_file).exists() else None
    return value


def tree_node(node: Any) -> dict[str, Any]:
    rendered: dict[str, Any] = {"id": node.entry["id"], "type": node.entry["type"]}
    if node.label is not None:
        rendered["label"] = node.label
    rendered["children"] = [tree_node(child) for child in node.children]
    return rendered


def utf16_length(text: str) -> int:
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def long_string_lengths(value: Any, threshold: int = 1000) -> list[int]:
    """UTF-16 lengths of every string of at least `threshold` units inside `value`, depth first."""
    found: list[int] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            length = utf16_length(node)
            if length >= threshold:
                found.append(length)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            for item in node.values():
                walk(item)

    walk(value)
    return found


def entry_summary(entry: dict[str, Any]) -> dict[str, Any]:
    summary = {"id": entry.get("id"), "type": entry.get("type")}
    if entry.get("type") == "message":
        summary["role"] = entry["message"].get("role")
    summary["stringLengths"] = long_string_lengths(entry)
    return summary


def file_summary(session_file: Any, root: Path) -> dict[str, Any]:
    if not session_file or not Path(session_file).exists():
        return {"fileBytes": None, "fileLines": []}
    # Measured as the recording would be: with the recording's (shorter) sandbox root in the paths.
    data = Path(session_file).read_bytes().replace(str(root).encode(), RECORDED_ROOT.encode())
    lines = data.decode("utf-8").split("\n")
    return {"fileBytes": len(data),
            "fileLines": [{"chars": utf16_length(line), "head": line[:160].replace(RECORDED_ROOT, "$ROOT"),
                           "tail": line[-80:].replace(RECORDED_ROOT, "$ROOT")} for line in lines]}


# -- rendering and comparison ---------------------------------------------------------------------

def render(value: Any, root: Path) -> Any:
    """Turn a Python result into the recording's JSON conventions ($ROOT paths, $date, $manager)."""
    root_text = str(root)
    if isinstance(value, ManagerRef):
        session_file = value.manager.get_session_file()
        rendered: dict[str, Any] = {"$manager": value.name}
        if session_file:
            rendered["sessionFile"] = render(str(session_file), root)
        rendered["sessionId"] = value.manager.get_session_id()
        return rendered
    if value is UNDEFINED:
        return {"$undefined": True}
    if isinstance(value, datetime):
        return {"$date": ms_to_iso(int(value.timestamp() * 1000))}
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, str):
        return value.replace(root_text, "$ROOT")
    if isinstance(value, dict):
        return {key: render(item, root) for key, item in value.items() if item is not UNDEFINED}
    if isinstance(value, (list, tuple)):
        return [render(item, root) for item in value]
    if hasattr(value, "to_agent_json"):
        return render(value.to_agent_json(), root)
    return value


def normalize_expected_root(value: Any, root: Path) -> Any:
    """Recorded directory names embed the recording's root (`--tmp-omp-oracle-root-…--`): use ours."""
    recorded = RECORDED_ROOT.lstrip("/").replace("/", "-")
    ours = str(root).lstrip("/").replace("/", "-")
    if isinstance(value, str):
        return value.replace(recorded, ours)
    if isinstance(value, list):
        return [normalize_expected_root(item, root) for item in value]
    if isinstance(value, dict):
        return {key: normalize_expected_root(item, root) for key, item in value.items()}
    return value


SQLITE_TIME_KEYS = {"created_at", "updated_at"}


def normalize(node: Any, allowed_mtimes: set[str], ignored: set[str], key: str | None = None,
              in_sqlite: bool = False) -> Any:
    """The README's normalizations: unset mtimes, sqlite clock values, ties, ignored keys, undefined."""
    if isinstance(node, dict):
        if set(node) == {"$undefined"}:
            return None
        if key == "modified" and set(node) == {"$date"} and node["$date"] not in allowed_mtimes:
            return {"$date": "<mtime>"}
        out = {}
        for k, v in node.items():
            if k in ignored or (isinstance(v, dict) and "$unsupported" in v):
                continue
            if in_sqlite and k in SQLITE_TIME_KEYS and isinstance(v, int):
                out[k] = "<sqlite-now>"
            elif k == "mtime" and isinstance(v, (int, float)) and not isinstance(v, bool):
                out[k] = v if any(abs(v - iso_to_ms(t)) < 1 for t in allowed_mtimes) else "<mtime>"
            else:
                out[k] = normalize(v, allowed_mtimes, ignored, k, in_sqlite)
        return out
    if isinstance(node, list):
        return [normalize(item, allowed_mtimes, ignored, key, in_sqlite) for item in untie(node)]
    return node


def untie(items: list[Any]) -> list[Any]:
    """Order each run of items sharing a modified/mtime by path (the agent leaves ties unordered)."""
    def tie_key(item: Any) -> str | None:
        if not isinstance(item, dict) or "path" not in item:
            return None
        stamp = item.get("modified", item.get("mtime"))
        return json.dumps(stamp, sort_keys=True) if stamp is not None else None

    out, i = [], 0
    while i < len(items):
        j, key = i + 1, tie_key(items[i])
        while key is not None and j < len(items) and tie_key(items[j]) == key:
            j += 1
        run = items[i:j]
        out.extend(sorted(run, key=lambda x: str(x.get("path"))) if len(run) > 1 else run)
        i = j
    return out


def drop_paths(node: Any, paths: list[str]) -> Any:
    """Remove the deviation-listed field paths (`value.fileContent`) from a result."""
    for dotted in paths:
        parts = dotted.split(".")
        target = node
        for part in parts[:-1]:
            target = target.get(part) if isinstance(target, dict) else None
        if isinstance(target, dict):
            target.pop(parts[-1], None)
    return node


def first_difference(expected: Any, actual: Any, where: str = "$") -> str | None:
    """A readable description of the first place two JSON values differ."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual)):
            if key not in actual:
                return f"{where}.{key}: missing (expected {str(expected[key])[:300]!r})"
            if key not in expected:
                return f"{where}.{key}: unexpected {str(actual[key])[:300]!r}"
            found = first_difference(expected[key], actual[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return f"{where}: {len(expected)} items expected, got {len(actual)}: {str(actual)[:500]}"
        for index, (a, b) in enumerate(zip(expected, actual)):
            found = first_difference(a, b, f"{where}[{index}]")
            if found:
                return found
        return None
    if type(expected) is not type(actual) and not (
            isinstance(expected, (int, float)) and isinstance(actual, (int, float))
            and not isinstance(expected, bool) and not isinstance(actual, bool)):
        return f"{where}: expected {str(expected)[:300]!r}, got {str(actual)[:300]!r}"
    return None if expected == actual else f"{where}: expected {str(expected)[:300]!r}, got {str(actual)[:300]!r}"


# -- files left in the sandbox --------------------------------------------------------------------

def sandbox_files(root: Path) -> list[dict[str, Any]]:
    """Every file, directory and link under the sandbox, as the recording lists them."""
    found = []
    for directory, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            path = Path(directory) / name
            relative = str(path.relative_to(root))
            # The recording lists nothing at the top level of the sandbox nor under $TMPDIR, and the
            # agent makes a bare ~/.xcsh at start-up whatever the case does.
            if "/" not in relative or relative.startswith("tmp/") or relative == "home/.xcsh":
                continue
            if path.is_symlink():
                found.append({"path": relative, "kind": "symlink"})
            elif path.is_dir():
                found.append({"path": relative, "kind": "dir"})
            else:
                found.append({"path": relative, "kind": "file"})
    return sorted(found, key=lambda item: item["path"])


def compare_files(case: Case, root: Path) -> str | None:
    """Same paths and kinds as recorded; same parsed JSONL (or bytes) where the recording kept a copy."""
    # The recorded agent creates ~/.xcsh at start-up whatever the case does; a bare one is not compared.
    expected_files = [f for f in case.expected.get("files", [])
                      if not f["path"].startswith("tmp") and f["path"] != "home/.xcsh"]
    actual = {item["path"]: item for item in sandbox_files(root)}
    # SQLite's -wal/-shm files exist only while a connection is open: the recorded agent never closed
    # its history.db, sessdex does, so those side files may be absent.
    optional = {normalize_expected_root(f["path"], root) for f in expected_files
                if f.get("nondeterministic") and f["path"].endswith(("-wal", "-shm"))}
    expected_paths = sorted(normalize_expected_root(f["path"], root) for f in expected_files
                            if normalize_expected_root(f["path"], root) in actual
                            or normalize_expected_root(f["path"], root) not in optional)
    if expected_paths != sorted(actual):
        missing = sorted(set(expected_paths) - set(actual))
        extra = sorted(set(actual) - set(expected_paths))
        return f"files differ: missing {missing}, unexpected {extra}"
    for item in expected_files:
        path = root / normalize_expected_root(item["path"], root)
        if item.get("nondeterministic") or item["kind"] != "file":
            continue
        if item.get("copy"):
            recorded = (case.directory / item["copy"]).read_bytes().replace(RECORDED_ROOT.encode(), str(root).encode())
        else:
            continue
        ours = path.read_bytes()
        if path.suffix == ".jsonl" or path.parent.name == "terminal-sessions":
            if path.suffix == ".jsonl":
                difference = first_difference(parse_jsonl(recorded).values, parse_jsonl(ours).values, item["path"])
            else:
                difference = None if recorded == ours else f"{item['path']}: {recorded!r} != {ours!r}"
            if difference:
                return difference
        elif hashlib.sha256(ours).hexdigest() != hashlib.sha256(recorded).hexdigest():
            return f"{item['path']}: bytes differ"
    return None



def parsed_file_content(value: Any) -> Any:
    """Snapshots and readFile results carry raw file text: compare it as parsed JSONL, not key order."""
    if isinstance(value, dict) and isinstance(value.get("fileContent"), str):
        return {**value, "fileContent": parse_jsonl(value["fileContent"]).values}
    if isinstance(value, dict) and isinstance(value.get("content"), str) and "path" in value \
            and str(value["path"]).endswith(".jsonl"):
        return {**value, "content": parse_jsonl(value["content"]).values}
    return value


def _as_text(value: Any) -> str:
    """A `$concat` part as text, as JavaScript's string concatenation makes it (a `$ref` may name a path)."""
    if isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return str(value) if isinstance(value, int) else _js_number(value)
    return str(value)
