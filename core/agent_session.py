"""AgentSession: a live agent bound to a SessionManager, switchable to another session file in place.

An agent embedding sessdex implements the small `Agent` protocol below and hands it, with a model
registry, to `AgentSession`. The session restores the agent's state from the session file once at
start-up (`open`, `continue_recent`, `resume`, or the constructor with any SessionManager) and again
on every `switch_session(path)`, by the same code: messages, default model, thinking level and mode.
The agent forgets the mode after an in-session switch; sessdex restores it there too.

Contracts an embedder implements:
- `Agent`: event subscription, abort, the three message queues, and setters for messages, session
  id, model and thinking level; `model` is the current model (or None).
- `Model`: `provider`, `id` and `reasoning` (can it think at all); optionally `max_thinking_level`,
  the highest level of `THINKING_LEVELS` it supports (None or absent: every level).
- `ModelRegistry.find(provider, model_id)`: the model, or None when the registry does not have it.
- `ModeHandler.restore_mode(mode, mode_data)`: re-enter a persisted mode ("none", "plan", ...).

Agent events are dicts with a `"type"`; a `message_end` event's `"message"` is appended to the
session, and every event is passed on to `AgentSession.subscribe` listeners.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from sessdex.core.paths import absolute_path
from sessdex.core.runtime import SessionRuntime
from sessdex.core.session_manager import SessionManager

log = logging.getLogger(__name__)

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")
SWITCH_REASON = "resume"

AgentEvent = dict[str, Any]
AgentListener = Callable[[AgentEvent], None]


class Model(Protocol):
    """A model as the registry describes it; `max_thinking_level` is read with getattr and may be absent."""

    @property
    def provider(self) -> str: ...

    @property
    def id(self) -> str: ...

    @property
    def reasoning(self) -> bool: ...


class ModelRegistry(Protocol):
    """The models an agent can use."""

    def find(self, provider: str, model_id: str) -> Model | None: ...


class Agent(Protocol):
    """What AgentSession needs from the agent it drives."""

    @property
    def model(self) -> Model | None: ...

    def subscribe(self, listener: AgentListener) -> None: ...

    def unsubscribe(self, listener: AgentListener) -> None: ...

    def abort(self) -> None: ...

    def clear_steering_queue(self) -> None: ...

    def clear_follow_up_queue(self) -> None: ...

    def clear_next_turn_messages(self) -> None: ...

    def replace_messages(self, messages: list[dict[str, Any]]) -> None: ...

    def set_session_id(self, session_id: str) -> None: ...

    def set_model(self, model: Model) -> None: ...

    def set_thinking_level(self, level: str) -> None: ...


class ModeHandler(Protocol):
    """Re-enters a persisted mode; called at start-up and after every switch with the session's mode."""

    def restore_mode(self, mode: str, mode_data: Any | None) -> None: ...


@dataclass(frozen=True)
class ModelSpec:
    """A plain Model: enough for registries that are lists of known models."""

    provider: str
    id: str
    reasoning: bool = True
    max_thinking_level: str | None = None


class StaticModelRegistry:
    """A registry holding a fixed list of models, looked up by provider and id."""

    def __init__(self, models: list[Model]) -> None:
        self._models = {(model.provider, model.id): model for model in models}

    def find(self, provider: str, model_id: str) -> Model | None:
        """The model named `provider/model_id`, or None."""
        return self._models.get((provider, model_id))


def split_model_name(name: str) -> tuple[str, str] | None:
    """`"provider/model"` -> (provider, model); the model part may hold further slashes. None if malformed."""
    provider, slash, model_id = name.partition("/")
    return (provider, model_id) if slash and provider and model_id else None


def clamp_thinking_level(level: str, model: Model | None) -> str:
    """`level` limited to what `model` supports: "off" without reasoning, else at most its max level.

    Without a model nothing is known about its capability and the level is kept.
    """
    if model is None:
        return level
    if not model.reasoning:
        return "off"
    ceiling = getattr(model, "max_thinking_level", None)
    if isinstance(ceiling, str) and ceiling in THINKING_LEVELS and \
            THINKING_LEVELS.index(level) > THINKING_LEVELS.index(ceiling):
        return ceiling
    return level


# -- hooks -----------------------------------------------------------------------------------------

@dataclass
class SessionBeforeSwitchEvent:
    """Emitted before a switch; a handler calls `cancel()` to keep the current session."""

    target_session_file: Path
    reason: str = SWITCH_REASON
    cancelled: bool = False
    type: Literal["session_before_switch"] = "session_before_switch"

    def cancel(self) -> None:
        """Stop the switch: switch_session returns False and changes nothing."""
        self.cancelled = True


@dataclass(frozen=True)
class SessionSwitchEvent:
    """Emitted once the session manager holds the new session, before the agent's messages are replaced."""

    previous_session_file: Path | None
    session_file: Path | None
    reason: str = SWITCH_REASON
    type: Literal["session_switch"] = "session_switch"


HookEvent = SessionBeforeSwitchEvent | SessionSwitchEvent
HookHandler = Callable[[Any], None]


@dataclass
class HookBus:
    """Handlers by event type, called in registration order.

    A handler that raises does not stop the others or the operation emitting the event: the error
    goes to `on_error` (default: logged). Emitting stops early once an event is cancelled.
    """

    on_error: Callable[[HookEvent, BaseException], None] | None = None
    _handlers: dict[str, list[HookHandler]] = field(default_factory=dict, init=False, repr=False)

    def on(self, event_type: str, handler: HookHandler) -> Callable[[], None]:
        """Register `handler` for `event_type`; returns a function that removes it again."""
        handlers = self._handlers.setdefault(event_type, [])
        handlers.append(handler)
        return lambda: handlers.remove(handler) if handler in handlers else None

    def emit(self, event: HookEvent) -> None:
        """Call every handler of `event.type` until one cancels the event."""
        for handler in list(self._handlers.get(event.type, ())):
            try:
                handler(event)
            except Exception as exc:  # a faulty extension must not break the session
                if self.on_error is not None:
                    self.on_error(event, exc)
                else:
                    log.exception("%s hook %r failed", event.type, handler)
            if getattr(event, "cancelled", False):
                return


# -- the session -----------------------------------------------------------------------------------

class AgentSession:
    """An agent bound to a session file: persists its messages and switches sessions in place."""

    def __init__(self, session_manager: SessionManager, agent: Agent, models: ModelRegistry, *,
                 hooks: HookBus | None = None, default_thinking_level: str = "off",
                 mode_handler: ModeHandler | None = None) -> None:
        """Bind `agent` to `session_manager` and restore the agent's state from the session (start-up)."""
        if default_thinking_level not in THINKING_LEVELS:
            raise ValueError(f"unknown thinking level {default_thinking_level!r}; "
                             f"expected one of {', '.join(THINKING_LEVELS)}")
        self.session_manager = session_manager
        self.agent = agent
        self.models = models
        self.hooks = hooks if hooks is not None else HookBus()
        self.default_thinking_level = default_thinking_level
        self.mode_handler = mode_handler
        self.mode = "none"
        self.mode_data: Any | None = None
        self._listeners: list[AgentListener] = []
        self.agent.set_session_id(session_manager.get_session_id())
        self._restore_state(session_manager.build_session_context())
        self.agent.subscribe(self._on_agent_event)

    # -- start-up ---------------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str], agent: Agent, models: ModelRegistry, *,
             session_dir: str | os.PathLike[str] | None = None, runtime: SessionRuntime | None = None,
             **options: Any) -> AgentSession:
        """Start on the session file at `path` (a missing or invalid file starts a new session there)."""
        return cls(SessionManager.open(path, session_dir, runtime=runtime), agent, models, **options)

    @classmethod
    def continue_recent(cls, cwd: str, agent: Agent, models: ModelRegistry, *,
                        session_dir: str | os.PathLike[str] | None = None, runtime: SessionRuntime | None = None,
                        **options: Any) -> AgentSession:
        """Start on this terminal's last session of `cwd`, else its newest, else a new one."""
        return cls(SessionManager.continue_recent(cwd, session_dir, runtime=runtime), agent, models, **options)

    @classmethod
    def resume(cls, value: str, cwd: str, agent: Agent, models: ModelRegistry, *,
               confirm_fork: Callable[[Any], bool], session_dir: str | os.PathLike[str] | None = None,
               runtime: SessionRuntime | None = None, **options: Any) -> AgentSession:
        """Start on the session `value` (a path or an id prefix) names, as `--resume <value>` does."""
        from sessdex.core.resume import resolve_resume

        runtime = runtime or SessionRuntime.default()
        result = resolve_resume(value, cwd, session_dir, paths=runtime.paths, confirm_fork=confirm_fork)
        return cls.open(result.path, agent, models, session_dir=session_dir, runtime=runtime, **options)

    # -- switching --------------------------------------------------------------------------------

    def switch_session(self, session_path: str | os.PathLike[str]) -> bool:
        """Make `session_path` the live session in place; False when a hook cancelled it.

        Hard I/O errors propagate; the agent's listener is attached again in every case.
        """
        target = Path(absolute_path(session_path))
        previous_session_file = self.session_manager.get_session_file()             # 1
        before = SessionBeforeSwitchEvent(target_session_file=target)
        self.hooks.emit(before)                                                     # 2
        if before.cancelled:
            return False                                                            # 3
        self.agent.unsubscribe(self._on_agent_event)                                # 4
        try:
            self.agent.abort()                                                      # 5
            self.agent.clear_steering_queue()                                       # 6
            self.agent.clear_follow_up_queue()
            self.agent.clear_next_turn_messages()
            self.session_manager.flush()                                            # 7
            self.session_manager.set_session_file(target)                           # 8
            self.agent.set_session_id(self.session_manager.get_session_id())        # 9
            context = self.session_manager.build_session_context()                  # 10
            self.hooks.emit(SessionSwitchEvent(previous_session_file,               # 11
                                               self.session_manager.get_session_file()))
            self._restore_agent_state(context)                                      # 12-14
        finally:
            self.agent.subscribe(self._on_agent_event)                              # 15
        self._restore_mode(context)  # sessdex goes further: the mode, exactly as at start-up
        return True

    # -- state restore, shared by start-up and switch ---------------------------------------------

    def _restore_state(self, context: dict[str, Any]) -> None:
        self._restore_agent_state(context)
        self._restore_mode(context)

    def _restore_agent_state(self, context: dict[str, Any]) -> None:
        """Messages, default model (when the registry has it), then the thinking level for that model."""
        self.agent.replace_messages(context["messages"])
        default_model = context["models"].get("default")
        name = split_model_name(default_model) if isinstance(default_model, str) else None
        model = self.models.find(*name) if name else None
        if model is not None:
            self.agent.set_model(model)
        if self._branch_has_thinking_level():
            self.agent.set_thinking_level(context["thinkingLevel"])
        else:
            level = clamp_thinking_level(self.default_thinking_level, self.agent.model)
            self.agent.set_thinking_level(level)
            self.session_manager.append_thinking_level_change(level)

    def _branch_has_thinking_level(self) -> bool:
        return any(entry.get("type") == "thinking_level_change" for entry in self.session_manager.get_branch())

    def _restore_mode(self, context: dict[str, Any]) -> None:
        self.mode, self.mode_data = context["mode"], context.get("modeData")
        if self.mode_handler is not None:
            self.mode_handler.restore_mode(self.mode, self.mode_data)

    # -- changes made while running ---------------------------------------------------------------

    def set_model(self, model: Model) -> None:
        """Use `model` from now on and record it as the default model."""
        self.agent.set_model(model)
        self.session_manager.append_model_change(f"{model.provider}/{model.id}")

    def set_thinking_level(self, level: str) -> None:
        """Use `level` (clamped to the current model) from now on and record it."""
        if level not in THINKING_LEVELS:
            raise ValueError(f"unknown thinking level {level!r}")
        level = clamp_thinking_level(level, self.agent.model)
        self.agent.set_thinking_level(level)
        self.session_manager.append_thinking_level_change(level)

    def set_mode(self, mode: str, mode_data: Any | None = None) -> None:
        """Enter `mode` and record it, so that start-up and switches restore it."""
        self.session_manager.append_mode_change(mode, mode_data)
        self.mode, self.mode_data = mode, mode_data

    # -- events -----------------------------------------------------------------------------------

    def subscribe(self, listener: AgentListener) -> Callable[[], None]:
        """Receive every agent event while the agent is attached; returns the function that stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _on_agent_event(self, event: AgentEvent) -> None:
        if event.get("type") == "message_end" and isinstance(event.get("message"), dict):
            self.session_manager.append_message(event["message"])
        for listener in list(self._listeners):
            listener(event)

    # -- reading ----------------------------------------------------------------------------------

    @property
    def session_file(self) -> Path | None:
        return self.session_manager.get_session_file()

    @property
    def session_id(self) -> str:
        return self.session_manager.get_session_id()

    def close(self) -> None:
        """Detach from the agent and close the session file (pending appends are flushed)."""
        self.agent.unsubscribe(self._on_agent_event)
        self.session_manager.close()
