"""Injectable clock, id source and environment, so that sessions are reproducible in tests."""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from sessdex.core.breadcrumbs import current_tty_path
from sessdex.core.paths import AgentPaths
from sessdex.core.storage import FileSessionStorage, SessionStorage

SNOWFLAKE_EPOCH_MS = 1420070400000  # 2015-01-01T00:00:00Z


class Clock(Protocol):
    """Source of the current time in epoch milliseconds."""

    def now_ms(self) -> int: ...


class IdSource(Protocol):
    """Source of entry ids (8 lowercase hex) and session ids (16 lowercase hex)."""

    def entry_id(self) -> str: ...

    def session_id(self) -> str: ...


class SystemClock:
    """The wall clock."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class RandomIds:
    """Random entry ids and Snowflake session ids (ms since 2015 << 22 | sequence), time-ordered."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._last_ms = -1
        self._sequence = 0

    def entry_id(self) -> str:
        return secrets.token_hex(4)

    def session_id(self) -> str:
        with self._lock:
            now = max(self._clock.now_ms(), self._last_ms)
            if now == self._last_ms:
                self._sequence = (self._sequence + 1) & 0x3FFFFF
                if self._sequence == 0:
                    now += 1
            else:
                self._sequence = secrets.randbelow(1 << 12)
            self._last_ms = now
            return f"{((now - SNOWFLAKE_EPOCH_MS) << 22 | self._sequence) & 0xFFFFFFFFFFFFFFFF:016x}"


def iso_from_ms(ms: int) -> str:
    """ISO-8601 UTC with milliseconds, as the agent writes timestamps."""
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def ms_from_iso(text: str) -> int | None:
    """Epoch milliseconds of an ISO timestamp, or None when it does not parse."""
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
    except (ValueError, AttributeError, TypeError):
        return None


@dataclass
class SessionRuntime:
    """Everything a SessionManager takes from its surroundings: paths, time, ids and the environment."""

    paths: AgentPaths
    clock: Clock = field(default_factory=SystemClock)
    # Left out, random ids from `clock` (set in __post_init__, so the field is never None after construction).
    ids: IdSource = None  # type: ignore[assignment]
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    tty_path: Callable[[], str | None] = current_tty_path
    # Where persistent sessions are read and written; None is the real file system. A viewer passes
    # an OverlaySessionStorage so that resuming a session never changes the user's files.
    storage: SessionStorage | None = None

    def __post_init__(self) -> None:
        if self.ids is None:
            self.ids = RandomIds(self.clock)

    @classmethod
    def default(cls, agent_dir: str | os.PathLike[str] | None = None) -> SessionRuntime:
        """The runtime for real use: the environment's agent dir, wall clock and random ids."""
        return cls(paths=AgentPaths.from_env(agent_dir))

    def file_storage(self) -> SessionStorage:
        """The storage persistent sessions use."""
        return self.storage if self.storage is not None else FileSessionStorage()

    def now_iso(self) -> str:
        return iso_from_ms(self.clock.now_ms())
