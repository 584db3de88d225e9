"""The picker's preview pane: the selected session's matching lines (for a query) and last messages.

Kept apart from the list's drawing and filtering: the messages are read from the session file in a worker thread,
after the selection has rested on a row for a moment, and kept for the files seen last; drawing only reads that
cache, so keystrokes never wait for a file.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

from sessdex.catalog.queries.preview import PreviewMessage, load_messages, matching_lines
from sessdex.catalog.queries.source import content_terms
from sessdex.catalog.tui.picker_model import PickerModel
from sessdex.catalog.tui.picker_screen import LOADING, NOTHING_SELECTED, Fragments, preview_heading, preview_safe

PREVIEW_DELAY_S = 0.08  # how long the selection rests on a row before its file is read
PREVIEW_CACHE_FILES = 64
LAST_MESSAGES = 6
ROLE_LABELS = {"user": "you", "assistant": "xcsh"}


class PreviewPane:
    """State and drawing of the preview pane (Ctrl+/ toggles it)."""

    def __init__(self, app: Any, model: PickerModel, screen: Any) -> None:
        self.app = app
        self.model = model
        self.screen = screen
        self.visible = False
        self._messages: OrderedDict[str, list[PreviewMessage]] = OrderedDict()
        self._pending: set[str] = set()

    def toggle(self) -> None:
        """Show or hide the pane."""
        self.visible = not self.visible

    def messages(self, path: str) -> list[PreviewMessage] | None:
        """The cached messages of `path`, None until read (asking for them then)."""
        found = self._messages.get(path)
        if found is None:
            self._request(path)
            return None
        self._messages.move_to_end(path)
        return found

    def _request(self, path: str) -> None:
        if path not in self._pending:
            self._pending.add(path)
            self.app.create_background_task(self._load(path))

    async def _load(self, path: str) -> None:
        try:
            await asyncio.sleep(PREVIEW_DELAY_S)
            selected = self.model.selected_row()
            if selected is None or selected.path != path or not self.visible:
                return  # moved on: read it if the selection comes back
            messages = await asyncio.get_running_loop().run_in_executor(None, load_messages, path)
            self._messages[path] = messages
            while len(self._messages) > PREVIEW_CACHE_FILES:
                self._messages.popitem(last=False)
            self.app.invalidate()
        finally:
            self._pending.discard(path)

    def fragments(self, width: int, height: int) -> Fragments:
        """The pane's text for the selected row, made terminal-safe (session text may hold control characters)."""
        return preview_safe(self._raw_fragments(width, height))

    def _raw_fragments(self, width: int, height: int) -> Fragments:
        """Name, facts, matching lines, then the newest messages first."""
        row = self.model.selected_row()
        heading = preview_heading(self.model)
        if row is None or heading is None:
            return list(NOTHING_SELECTED)
        fragments: Fragments = list(heading)
        messages = self.messages(row.path)
        if messages is None:
            return [*fragments, LOADING]
        room = max(width - 2, 10) * 3  # about three lines per message
        terms = content_terms(self.model.needle)
        matches = matching_lines(messages, terms) if terms else []
        if matches:
            fragments.append(("class:columns", "\n matching lines\n"))
            for excerpt, spans in matches:
                excerpt = excerpt[:room]
                position = 0
                fragments.append(("", " "))
                for start, end in spans:
                    if start >= len(excerpt) or start < position:
                        continue
                    fragments += [("", excerpt[position:start]), ("class:match", excerpt[start:end])]
                    position = end
                fragments.append(("", excerpt[position:] + "\n"))
        fragments.append(("class:columns", "\n last messages, newest first\n"))
        for message in reversed(messages[-LAST_MESSAGES:]):
            text = message.text if len(message.text) <= room else message.text[:room - 1] + "…"
            fragments += [("class:prompt", f" {ROLE_LABELS.get(message.role, message.role)}: "), ("", text + "\n")]
        if not messages:
            fragments.append(("class:dim", " (no messages)\n"))
        return fragments
