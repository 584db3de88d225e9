"""AgentSession: start-up restore and the 15 steps of switch_session, with a recording fake agent."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessdex.core.agent_session import (
    AgentSession,
    HookBus,
    ModelSpec,
    SessionBeforeSwitchEvent,
    SessionSwitchEvent,
    StaticModelRegistry,
    clamp_thinking_level,
    split_model_name,
)
from sessdex.core.breadcrumbs import breadcrumb_path
from sessdex.core.errors import PersistenceError, SessionFileError
from sessdex.core.paths import AgentPaths
from sessdex.core.runtime import SessionRuntime
from sessdex.core.session_manager import SessionManager

BASE_MS = 1_740_823_200_000  # 2025-03-01T10:00:00Z

CLAUDE = ModelSpec("anthropic", "claude-x", reasoning=True)
MEDIUM_CAP = ModelSpec("openai", "gpt-capped", reasoning=True, max_thinking_level="medium")
NO_REASONING = ModelSpec("openai", "gpt-plain", reasoning=False)
REGISTRY = StaticModelRegistry([CLAUDE, MEDIUM_CAP, NO_REASONING])


class StepClock:
    """A clock that advances one second per reading."""

    def __init__(self) -> None:
        self.ms = BASE_MS

    def now_ms(self) -> int:
        self.ms += 1000
        return self.ms


class CountingIds:
    """Entry and session ids from one counter: distinct and reproducible."""

    def __init__(self) -> None:
        self.count = 0

    def entry_id(self) -> str:
        self.count += 1
        return f"{self.count:08x}"

    def session_id(self) -> str:
        self.count += 1
        return f"{self.count:016x}"


class RecordingAgent:
    """A fake agent that records every call into a shared log and can emit events to its listeners."""

    def __init__(self, log: list[str], model: ModelSpec | None = None) -> None:
        self.log = log
        self.model = model
        self.listeners: list[Any] = []
        self.messages: list[dict[str, Any]] = []
        self.session_id: str | None = None
        self.thinking_level: str | None = None
        self.events_during_abort: list[dict[str, Any]] = []
        self.fail_on: str | None = None

    def _record(self, name: str) -> None:
        self.log.append(f"agent.{name}")
        if self.fail_on == name:
            raise RuntimeError(f"{name} failed")

    def emit(self, event: dict[str, Any]) -> None:
        for listener in list(self.listeners):
            listener(event)

    def subscribe(self, listener: Any) -> None:
        self._record("subscribe")
        self.listeners.append(listener)

    def unsubscribe(self, listener: Any) -> None:
        self._record("unsubscribe")
        if listener in self.listeners:
            self.listeners.remove(listener)

    def abort(self) -> None:
        self._record("abort")
        for event in self.events_during_abort:
            self.emit(event)

    def clear_steering_queue(self) -> None:
        self._record("clear_steering_queue")

    def clear_follow_up_queue(self) -> None:
        self._record("clear_follow_up_queue")

    def clear_next_turn_messages(self) -> None:
        self._record("clear_next_turn_messages")

    def replace_messages(self, messages: list[dict[str, Any]]) -> None:
        self._record("replace_messages")
        self.messages = list(messages)

    def set_session_id(self, session_id: str) -> None:
        self._record("set_session_id")
        self.session_id = session_id

    def set_model(self, model: ModelSpec) -> None:
        self._record("set_model")
        self.model = model

    def set_thinking_level(self, level: str) -> None:
        self._record("set_thinking_level")
        self.thinking_level = level


class RecordingModeHandler:
    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.calls: list[tuple[str, Any]] = []

    def restore_mode(self, mode: str, mode_data: Any | None) -> None:
        self.log.append("mode.restore")
        self.calls.append((mode, mode_data))


class RecordingSessionManager(SessionManager):
    """A real SessionManager that also logs the calls switch_session makes on it."""

    log: list[str] | None = None  # set after open(), so that opening itself is not logged
    fail_flush = False

    def _record(self, name: str) -> None:
        if self.log is not None:
            self.log.append(f"manager.{name}")

    def flush(self) -> None:
        self._record("flush")
        if self.fail_flush:
            raise PersistenceError("disk full")
        super().flush()

    def set_session_file(self, path: Any) -> None:
        self._record("set_session_file")
        super().set_session_file(path)

    def build_session_context(self, leaf_id: Any = ...) -> dict[str, Any]:
        self._record("build_session_context")
        return super().build_session_context(leaf_id)


class Env:
    """A sandbox agent dir with a deterministic runtime, and builders for session files."""

    def __init__(self, root: Path, environ: dict[str, str] | None = None) -> None:
        for name in ("home", "tmp", "agent"):
            (root / name).mkdir(parents=True, exist_ok=True)
        self.root = root
        self.project = root / "home" / "proj"
        self.project.mkdir()
        self.paths = AgentPaths(agent_dir=root / "agent", home=root / "home", tmp_dir=root / "tmp")
        self.runtime = SessionRuntime(paths=self.paths, clock=StepClock(), ids=CountingIds(),
                                      environ=environ or {}, tty_path=lambda: None)
        self.log: list[str] = []
        self.started: list[AgentSession] = []

    def session(self, text: str, *, model: str | None = "anthropic/claude-x", thinking: str | None = None,
                mode: str | None = None, mode_data: Any = None) -> Path:
        """A session file: a user question, an answer from `model`, then the optional changes, flushed."""
        manager = SessionManager.create(str(self.project), runtime=self.runtime)
        manager.append_message({"role": "user", "content": text, "timestamp": BASE_MS})
        if model is not None:
            manager.append_model_change(model)
        manager.append_message({"role": "assistant", "content": [{"type": "text", "text": f"re: {text}"}],
                                "timestamp": BASE_MS})
        if thinking is not None:
            manager.append_thinking_level_change(thinking)
        if mode is not None:
            manager.append_mode_change(mode, mode_data)
        manager.ensure_on_disk()
        manager.close()
        path = manager.get_session_file()
        assert path is not None and path.is_file()
        return path

    def close(self) -> None:
        for session in self.started:
            session.close()

    def manager(self, path: Path) -> RecordingSessionManager:
        manager = RecordingSessionManager.open(path, runtime=self.runtime)
        assert isinstance(manager, RecordingSessionManager)
        manager.log = self.log
        return manager

    def start(self, path: Path, *, agent_model: ModelSpec | None = None, default_thinking_level: str = "off",
              hooks: HookBus | None = None) -> tuple[AgentSession, RecordingAgent, RecordingModeHandler]:
        agent = RecordingAgent(self.log, agent_model)
        modes = RecordingModeHandler(self.log)
        session = AgentSession(self.manager(path), agent, REGISTRY, hooks=hooks,
                               default_thinking_level=default_thinking_level, mode_handler=modes)
        self.started.append(session)
        self.log.clear()
        return session, agent, modes


def file_entries(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()[1:]]


def texts(messages: list[dict[str, Any]]) -> list[Any]:
    return [message.get("content") if message["role"] == "user" else message["content"][0]["text"]
            for message in messages]


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    sandbox = Env(tmp_path)
    yield sandbox
    sandbox.close()


# -- the documented order --------------------------------------------------------------------------

SWITCH_ORDER = [
    "hook.session_before_switch",
    "agent.unsubscribe",
    "agent.abort",
    "agent.clear_steering_queue",
    "agent.clear_follow_up_queue",
    "agent.clear_next_turn_messages",
    "manager.flush",
    "manager.set_session_file",
    "agent.set_session_id",
    "manager.build_session_context",
    "hook.session_switch",
    "agent.replace_messages",
    "agent.set_model",
    "agent.set_thinking_level",
    "agent.subscribe",
    "mode.restore",
]


def recording_hooks(log: list[str]) -> tuple[HookBus, list[Any]]:
    hooks, events = HookBus(), []
    for name in ("session_before_switch", "session_switch"):
        hooks.on(name, lambda event, name=name: (log.append(f"hook.{name}"), events.append(event)))
    return hooks, events


def test_switch_runs_the_documented_steps_in_order(env: Env) -> None:
    first, second = env.session("first", thinking="low"), env.session("second", thinking="high")
    hooks, _ = recording_hooks(env.log)
    session, _, _ = env.start(first, hooks=hooks)
    assert session.switch_session(second) is True
    assert env.log == SWITCH_ORDER


def test_start_up_restores_by_the_same_code_and_builds_the_context_once(env: Env) -> None:
    path = env.session("first", thinking="low", mode="plan", mode_data={"planFile": "p.md"})
    agent, modes = RecordingAgent(env.log), RecordingModeHandler(env.log)
    manager = env.manager(path)
    env.log.clear()
    AgentSession(manager, agent, REGISTRY, mode_handler=modes)
    assert env.log == ["agent.set_session_id", "manager.build_session_context", "agent.replace_messages",
                       "agent.set_model", "agent.set_thinking_level", "mode.restore", "agent.subscribe"]
    assert (agent.session_id, agent.model, agent.thinking_level) == (manager.get_session_id(), CLAUDE, "low")
    assert texts(agent.messages) == ["first", "re: first"]
    assert modes.calls == [("plan", {"planFile": "p.md"})]


# -- steps 1-3: hooks and cancellation ------------------------------------------------------------

def test_a_cancelling_hook_makes_switch_return_false_and_change_nothing(env: Env) -> None:
    first, second = env.session("first", thinking="low"), env.session("second", thinking="high")
    seen: list[SessionBeforeSwitchEvent] = []
    hooks = HookBus()
    hooks.on("session_before_switch", lambda event: (seen.append(event), event.cancel()))
    hooks.on("session_before_switch", lambda event: seen.append(event))  # not reached after a cancel
    switched: list[Any] = []
    hooks.on("session_switch", switched.append)
    session, agent, _ = env.start(first, hooks=hooks)
    before_state = (agent.messages, agent.session_id, agent.thinking_level, agent.model)

    assert session.switch_session(second) is False
    assert env.log == [] and switched == []
    assert [(event.reason, event.target_session_file) for event in seen] == [("resume", second)]
    assert session.session_file == first
    assert (agent.messages, agent.session_id, agent.thinking_level, agent.model) == before_state
    agent.emit({"type": "message_end", "message": {"role": "user", "content": "still here", "timestamp": 1}})
    session.session_manager.flush()
    assert file_entries(first)[-1]["message"]["content"] == "still here"


def test_session_switch_hook_sees_the_previous_file_and_runs_before_the_messages_change(env: Env) -> None:
    first, second = env.session("first"), env.session("second")
    observed: list[tuple[SessionSwitchEvent, list[Any], Path | None]] = []
    hooks = HookBus()
    session, agent, _ = env.start(first, hooks=hooks)
    hooks.on("session_switch", lambda event: observed.append((event, texts(agent.messages), session.session_file)))
    session.switch_session(second)
    [(event, messages_at_hook, file_at_hook)] = observed
    assert (event.reason, event.previous_session_file, event.session_file) == ("resume", first, second)
    assert messages_at_hook == ["first", "re: first"] and file_at_hook == second


def test_a_failing_hook_is_reported_and_does_not_stop_the_switch(env: Env) -> None:
    first, second = env.session("first"), env.session("second")
    errors: list[tuple[str, str]] = []
    hooks = HookBus(on_error=lambda event, exc: errors.append((event.type, str(exc))))

    def broken(event: Any) -> None:
        raise ValueError("extension bug")

    hooks.on("session_before_switch", broken)
    hooks.on("session_switch", broken)
    session, agent, _ = env.start(first, hooks=hooks)
    assert session.switch_session(second) is True
    assert errors == [("session_before_switch", "extension bug"), ("session_switch", "extension bug")]
    assert texts(agent.messages) == ["second", "re: second"]


def test_removing_a_hook_handler(env: Env) -> None:
    first, second = env.session("first"), env.session("second")
    hooks = HookBus()
    remove = hooks.on("session_before_switch", lambda event: event.cancel())
    session, _, _ = env.start(first, hooks=hooks)
    remove()
    assert session.switch_session(second) is True


# -- steps 4, 5, 6 and 15: detach, abort, clear queues, reattach ----------------------------------

def test_events_emitted_while_aborting_are_dropped_and_later_ones_go_to_the_new_session(env: Env) -> None:
    first, second = env.session("first"), env.session("second")
    session, agent, _ = env.start(first)
    forwarded: list[str] = []
    session.subscribe(lambda event: forwarded.append(event["message"]["content"]))
    aborted = {"role": "assistant", "content": "half an answer", "timestamp": 2}
    agent.events_during_abort = [{"type": "message_end", "message": aborted}]
    session.session_manager.flush()
    first_before = first.read_bytes()

    session.switch_session(second)
    assert first.read_bytes() == first_before
    assert "half an answer" not in second.read_text()
    assert agent.listeners == [session._on_agent_event]

    agent.emit({"type": "message_end", "message": {"role": "user", "content": "next", "timestamp": 3}})
    session.session_manager.flush()
    assert [entry["message"]["content"] for entry in file_entries(second) if entry["type"] == "message"][-1] == "next"
    assert first.read_bytes() == first_before
    assert forwarded == ["next"]


def test_unsubscribing_a_session_listener(env: Env) -> None:
    session, agent, _ = env.start(env.session("first"))
    seen: list[Any] = []
    stop = session.subscribe(seen.append)
    agent.emit({"type": "turn_start"})
    stop()
    agent.emit({"type": "turn_end"})
    assert seen == [{"type": "turn_start"}]


# -- steps 7-10: flush, set_session_file, session id, context --------------------------------------

def test_switch_loads_the_target_updates_the_session_id_and_writes_the_breadcrumb(tmp_path: Path) -> None:
    env = Env(tmp_path, environ={"TMUX_PANE": "%7"})
    first, second = env.session("first"), env.session("second")
    session, agent, _ = env.start(first)
    crumb = breadcrumb_path(env.paths, "tmux-%7")
    assert crumb.read_text().splitlines()[1] == str(first)
    second_id = orjson.loads(second.read_bytes().splitlines()[0])["id"]

    session.switch_session(second)
    env.close()
    assert session.session_file == second
    assert agent.session_id == second_id == session.session_id
    assert texts(agent.messages) == ["second", "re: second"]
    assert crumb.read_text().splitlines() == [str(env.project), str(second)]


def test_switch_to_a_missing_file_starts_a_new_session_there(env: Env) -> None:
    first = env.session("first")
    session, agent, modes = env.start(first, agent_model=CLAUDE, default_thinking_level="high")
    target = first.parent / "brand-new.jsonl"
    assert session.switch_session(target) is True
    assert session.session_file == target and target.is_file()
    assert agent.messages == [] and agent.session_id == session.session_id
    assert agent.thinking_level == "high" and modes.calls[-1] == ("none", None)


def test_switch_context_follows_the_leaf_through_a_compaction(env: Env) -> None:
    path = env.session("old question")
    manager = SessionManager.open(path, runtime=env.runtime)
    kept = manager.append_message({"role": "user", "content": "kept", "timestamp": 5})
    manager.append_compaction("summary of before", None, kept, 1000)
    manager.close()
    session, agent, _ = env.start(env.session("first"))
    session.switch_session(path)
    assert [message["role"] for message in agent.messages] == ["compactionSummary", "user"]
    assert agent.messages[0]["summary"] == "summary of before"


# -- steps 13-14 and the mode: the restore matrix --------------------------------------------------

@pytest.mark.parametrize(("session_model", "agent_model", "expected"), [
    ("anthropic/claude-x", NO_REASONING, CLAUDE),         # in the registry: restored
    ("openai/gpt-capped", CLAUDE, MEDIUM_CAP),
    ("someone/unknown-model", CLAUDE, CLAUDE),            # not in the registry: the agent keeps its model
    (None, MEDIUM_CAP, MEDIUM_CAP),                       # no model in the session
])
def test_default_model_is_restored_only_when_the_registry_has_it(env: Env, session_model: str | None,
                                                                 agent_model: ModelSpec,
                                                                 expected: ModelSpec) -> None:
    first, second = env.session("first"), env.session("second", model=session_model, thinking="low")
    session, agent, _ = env.start(first)
    agent.model = agent_model
    session.switch_session(second)
    assert agent.model == expected
    assert ("agent.set_model" in env.log) is (expected is not agent_model)


def test_model_inferred_from_the_assistant_message_is_restored(env: Env) -> None:
    first = env.session("first")
    legacy = first.parent / "legacy.jsonl"
    manager = SessionManager.open(legacy, runtime=env.runtime)
    manager.append_message({"role": "user", "content": "q", "timestamp": 1})
    manager.append_message({"role": "assistant", "content": [{"type": "text", "text": "a"}], "provider": "openai",
                            "model": "gpt-capped", "timestamp": 2})
    manager.close()
    session, agent, _ = env.start(first)
    session.switch_session(legacy)
    assert agent.model == MEDIUM_CAP


@pytest.mark.parametrize(("session_model", "default_level", "expected"), [
    ("anthropic/claude-x", "high", "high"),
    ("anthropic/claude-x", "xhigh", "xhigh"),
    ("openai/gpt-capped", "xhigh", "medium"),    # capped at the model's max level
    ("openai/gpt-capped", "low", "low"),
    ("openai/gpt-plain", "high", "off"),         # no reasoning: only "off"
])
def test_without_a_saved_level_the_clamped_default_is_applied_and_recorded(
        env: Env, session_model: str, default_level: str, expected: str) -> None:
    first, second = env.session("first", thinking="minimal"), env.session("second", model=session_model)
    session, agent, _ = env.start(first, agent_model=NO_REASONING, default_thinking_level=default_level)
    session.switch_session(second)
    assert agent.thinking_level == expected
    session.session_manager.flush()
    last = file_entries(second)[-1]
    assert (last["type"], last["thinkingLevel"]) == ("thinking_level_change", expected)
    assert session.session_manager.build_session_context()["thinkingLevel"] == expected


def test_a_saved_level_on_the_branch_is_applied_and_nothing_is_recorded(env: Env) -> None:
    first, second = env.session("first"), env.session("second", model="openai/gpt-plain", thinking="high")
    session, agent, _ = env.start(first, default_thinking_level="low")
    before = second.read_bytes()
    session.switch_session(second)
    session.session_manager.flush()
    assert agent.thinking_level == "high"  # saved levels are applied as saved, not clamped
    assert second.read_bytes() == before


def test_a_saved_level_on_another_branch_does_not_count(env: Env) -> None:
    path = env.session("first")
    manager = SessionManager.open(path, runtime=env.runtime)
    fork_point = manager.get_leaf_id()
    manager.append_thinking_level_change("xhigh")
    assert fork_point is not None
    manager.branch(fork_point)
    manager.append_message({"role": "user", "content": "other branch", "timestamp": 9})
    manager.close()
    session, agent, _ = env.start(env.session("second", thinking="low"), default_thinking_level="medium")
    session.switch_session(path)
    assert agent.thinking_level == "medium"


@pytest.mark.parametrize(("start_mode", "target_mode", "target_data"), [
    ("plan", None, None),                         # leaving plan mode: the agent stays in plan, sessdex does not
    (None, "plan", {"planFile": "plan.md"}),
    ("plan", "plan_paused", {"planFile": "b.md"}),
    ("plan", "plan", {"planFile": "other.md"}),
])
def test_mode_is_restored_after_a_switch(env: Env, start_mode: str | None, target_mode: str | None,
                                         target_data: Any) -> None:
    first = env.session("first", mode=start_mode, mode_data={"planFile": "a.md"} if start_mode else None)
    second = env.session("second", mode=target_mode, mode_data=target_data)
    session, _, modes = env.start(first)
    session.switch_session(second)
    expected = (target_mode or "none", target_data)
    assert modes.calls[-1] == expected and (session.mode, session.mode_data) == expected


def test_a_mode_set_in_session_survives_switching_away_and_back(env: Env) -> None:
    first, second = env.session("first"), env.session("second")
    session, _, modes = env.start(first)
    session.set_mode("plan", {"planFile": "x.md"})
    session.switch_session(second)
    assert modes.calls[-1] == ("none", None)
    session.switch_session(first)
    assert modes.calls[-1] == ("plan", {"planFile": "x.md"})


@pytest.mark.parametrize("target", [
    {"model": "openai/gpt-capped", "thinking": None, "mode": "plan", "mode_data": {"planFile": "p.md"}},
    {"model": "anthropic/claude-x", "thinking": "minimal", "mode": "plan_paused", "mode_data": None},
    {"model": "someone/unknown", "thinking": None, "mode": None, "mode_data": None},
    {"model": None, "thinking": "low", "mode": None, "mode_data": None},
])
def test_a_switch_ends_in_exactly_the_state_of_a_start_up(env: Env, target: dict[str, Any]) -> None:
    original = env.session("target", **target)
    for_switch = original.with_name("switch-copy.jsonl")
    shutil.copyfile(original, for_switch)

    started, started_agent, started_modes = env.start(original, agent_model=CLAUDE, default_thinking_level="high")
    # The agent has the same model before both: a model the registry lacks leaves the agent's own in place.
    session, agent, modes = env.start(env.session("elsewhere", model="anthropic/claude-x", thinking="off",
                                                  mode="plan", mode_data={"planFile": "z.md"}),
                                      agent_model=CLAUDE, default_thinking_level="high")
    session.switch_session(for_switch)
    assert (agent.messages, agent.model, agent.thinking_level) == \
        (started_agent.messages, started_agent.model, started_agent.thinking_level)
    assert modes.calls[-1] == started_modes.calls[-1]
    assert (session.mode, session.mode_data) == (started.mode, started.mode_data)


# -- failures in the middle of a switch ------------------------------------------------------------

def test_a_hard_io_error_propagates_and_the_listener_is_reattached(env: Env) -> None:
    first = env.session("first")
    unreadable = first.parent / "a-directory.jsonl"
    unreadable.mkdir()
    hooks, events = recording_hooks(env.log)
    session, agent, modes = env.start(first, hooks=hooks)
    with pytest.raises(SessionFileError, match="not a regular file"):
        session.switch_session(unreadable)
    assert env.log[-2:] == ["manager.set_session_file", "agent.subscribe"]
    assert [event.type for event in events] == ["session_before_switch"]
    assert agent.listeners == [session._on_agent_event]
    assert session.session_file == first and texts(agent.messages) == ["first", "re: first"]
    assert len(modes.calls) == 1  # only the start-up restore
    agent.emit({"type": "message_end", "message": {"role": "user", "content": "after failure", "timestamp": 4}})
    session.session_manager.flush()
    assert file_entries(first)[-1]["message"]["content"] == "after failure"


def test_a_failing_flush_stops_the_switch_before_the_file_changes(env: Env) -> None:
    first, second = env.session("first"), env.session("second")
    session, agent, _ = env.start(first)
    assert isinstance(session.session_manager, RecordingSessionManager)
    session.session_manager.fail_flush = True
    with pytest.raises(PersistenceError):
        session.switch_session(second)
    session.session_manager.fail_flush = False
    assert env.log[-2:] == ["manager.flush", "agent.subscribe"]
    assert session.session_file == first and agent.listeners == [session._on_agent_event]


def test_an_agent_failure_after_the_file_changed_still_reattaches(env: Env) -> None:
    first, second = env.session("first"), env.session("second")
    session, agent, modes = env.start(first)
    agent.fail_on = "replace_messages"
    with pytest.raises(RuntimeError, match="replace_messages failed"):
        session.switch_session(second)
    assert env.log[-2:] == ["agent.replace_messages", "agent.subscribe"]
    assert agent.listeners == [session._on_agent_event]
    assert session.session_file == second and len(modes.calls) == 1


# -- start-up entry points -------------------------------------------------------------------------

def count_context_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = SessionManager.build_session_context

    def counting(self: SessionManager, leaf_id: Any = ...) -> dict[str, Any]:
        calls.append(1)
        return original(self, leaf_id)

    monkeypatch.setattr(SessionManager, "build_session_context", counting)
    return calls


def test_open_continue_and_resume_restore_the_same_state(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    path = env.session("the one", model="openai/gpt-capped", thinking="low", mode="plan", mode_data={"p": 1})
    session_id = orjson.loads(path.read_bytes().splitlines()[0])["id"]
    builds = count_context_builds(monkeypatch)
    starts = {
        "open": lambda agent, modes: AgentSession.open(path, agent, REGISTRY, runtime=env.runtime,
                                                       mode_handler=modes),
        "continue": lambda agent, modes: AgentSession.continue_recent(str(env.project), agent, REGISTRY,
                                                                      runtime=env.runtime, mode_handler=modes),
        "resume": lambda agent, modes: AgentSession.resume(session_id[:12], str(env.project), agent, REGISTRY,
                                                           confirm_fork=lambda info: False, runtime=env.runtime,
                                                           mode_handler=modes),
    }
    for name, start in starts.items():
        builds.clear()
        agent, modes = RecordingAgent([]), RecordingModeHandler([])
        session = start(agent, modes)
        assert builds == [1], name
        assert session.session_file == path, name
        assert (agent.session_id, agent.model, agent.thinking_level) == (session_id, MEDIUM_CAP, "low"), name
        assert texts(agent.messages) == ["the one", "re: the one"], name
        assert modes.calls == [("plan", {"p": 1})] and (session.mode, session.mode_data) == ("plan", {"p": 1})
        assert agent.listeners == [session._on_agent_event]
        session.close()
        assert agent.listeners == []


def test_start_up_records_the_clamped_default_like_a_switch(env: Env) -> None:
    path = env.session("no level", model="openai/gpt-capped")
    agent = RecordingAgent([])
    session = AgentSession.open(path, agent, REGISTRY, runtime=env.runtime, default_thinking_level="xhigh")
    session.close()
    assert agent.thinking_level == "medium"
    assert file_entries(path)[-1] == {**file_entries(path)[-1], "type": "thinking_level_change",
                                      "thinkingLevel": "medium"}


# -- changes while running and the helpers ---------------------------------------------------------

def test_setters_apply_to_the_agent_and_are_recorded(env: Env) -> None:
    session, agent, _ = env.start(env.session("first"))
    session.set_model(MEDIUM_CAP)
    session.set_thinking_level("high")
    context = session.session_manager.build_session_context()
    assert agent.model == MEDIUM_CAP and agent.thinking_level == "medium"
    assert (context["models"]["default"], context["thinkingLevel"]) == ("openai/gpt-capped", "medium")
    with pytest.raises(ValueError):
        session.set_thinking_level("ultra")


def test_an_unknown_default_thinking_level_is_rejected(env: Env) -> None:
    with pytest.raises(ValueError, match="unknown thinking level"):
        AgentSession(SessionManager.in_memory(str(env.project), runtime=env.runtime), RecordingAgent([]),
                     REGISTRY, default_thinking_level="max")


@pytest.mark.parametrize(("level", "model", "expected"), [
    ("high", None, "high"), ("high", NO_REASONING, "off"), ("off", NO_REASONING, "off"),
    ("high", MEDIUM_CAP, "medium"), ("minimal", MEDIUM_CAP, "minimal"), ("xhigh", CLAUDE, "xhigh"),
])
def test_clamp_thinking_level(level: str, model: ModelSpec | None, expected: str) -> None:
    assert clamp_thinking_level(level, model) == expected


@pytest.mark.parametrize(("name", "expected"), [
    ("anthropic/claude", ("anthropic", "claude")), ("openrouter/meta/llama", ("openrouter", "meta/llama")),
    ("no-slash", None), ("/model", None), ("provider/", None),
])
def test_split_model_name(name: str, expected: tuple[str, str] | None) -> None:
    assert split_model_name(name) == expected
