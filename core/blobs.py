"""The content-addressed blob store: large images live in `<agent>/blobs/<sha256>`.

A reference is `blob:sha256:<64 lowercase hex>`; anything else is malformed and left alone, so a
reference can never name a path outside the blob directory.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from pathlib import Path
from typing import Any

from sessdex.core.storage import FileSessionStorage, SessionStorage

BLOB_PREFIX = "blob:sha256:"
MIN_EXTERNALIZED_BASE64 = 1024
_REFERENCE = re.compile(r"^blob:sha256:([0-9a-f]{64})$")


def parse_reference(value: Any) -> str | None:
    """The sha256 hex of a well-formed blob reference, else None."""
    if not isinstance(value, str):
        return None
    match = _REFERENCE.match(value)
    return match.group(1) if match else None


def is_data_url(value: Any) -> bool:
    """An inline `data:<mime>;base64,...` URL, which the agent also moves to the blob store."""
    return isinstance(value, str) and value.startswith("data:") and ";base64," in value[:200]


class BlobStore:
    """Reads and writes blobs by content hash; writes are atomic and idempotent."""

    def __init__(self, directory: Path, storage: SessionStorage | None = None) -> None:
        self.directory = Path(directory)
        self.storage = storage or FileSessionStorage()

    def path_for(self, digest: str) -> Path:
        if not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise ValueError(f"not a sha256 digest: {digest!r}")
        return self.directory / digest

    def put(self, data: bytes) -> str:
        """Store `data` (if not already there) and return its reference."""
        digest = hashlib.sha256(data).hexdigest()
        target = self.path_for(digest)
        if not self.storage.exists_sync(target):
            self.storage.ensure_dir_sync(self.directory)
            self.storage.write_atomic(target, data)
        return BLOB_PREFIX + digest

    def get(self, reference: str) -> bytes | None:
        """The bytes behind a reference, or None when malformed, missing or unreadable.

        Only a regular file inside the blob folder counts: a symlink there is never followed (it could
        lead anywhere), nor is anything that is not a regular file read.
        """
        digest = parse_reference(reference)
        if digest is None:
            return None
        try:
            return self.storage.read_bytes(self.path_for(digest), follow_symlinks=False)
        except OSError:
            return None


def externalize_images(entry: dict[str, Any], store: BlobStore) -> dict[str, Any]:
    """A copy of a message/custom_message entry whose large images are blob references."""
    if entry.get("type") == "message" and isinstance(entry.get("message"), dict):
        return {**entry, "message": _externalize_in(entry["message"], store)}
    if entry.get("type") == "custom_message":
        return _externalize_in(entry, store)
    return entry


def _externalize_in(holder: dict[str, Any], store: BlobStore) -> dict[str, Any]:
    result = dict(holder)
    content = holder.get("content")
    if isinstance(content, list):
        result["content"] = [_externalize_block(block, store) for block in content]
    details = holder.get("details")
    if isinstance(details, dict):
        result["details"] = _externalize_data_urls(details, store)
    return result


def _externalize_block(block: Any, store: BlobStore) -> Any:
    if not (isinstance(block, dict) and block.get("type") == "image"):
        return block
    data = block.get("data")
    if not isinstance(data, str) or len(data) < MIN_EXTERNALIZED_BASE64 or parse_reference(data):
        return block
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return block
    return {**block, "data": store.put(raw)}


def _externalize_data_urls(node: Any, store: BlobStore) -> Any:
    if is_data_url(node):
        return store.put(node.encode("utf-8"))
    if isinstance(node, dict):
        return {key: _externalize_data_urls(value, store) for key, value in node.items()}
    if isinstance(node, list):
        return [_externalize_data_urls(item, store) for item in node]
    return node


def resolve_blob_references(entry: Any, store: BlobStore) -> Any:
    """Inverse of externalize_images on load; missing blobs and malformed references stay as they are."""
    if not isinstance(entry, dict):
        return entry
    if entry.get("type") == "message" and isinstance(entry.get("message"), dict):
        resolved = _resolve_in(entry["message"], store)
        return entry if resolved is entry["message"] else {**entry, "message": resolved}
    if entry.get("type") == "custom_message":
        return _resolve_in(entry, store)
    return entry


def _resolve_in(holder: dict[str, Any], store: BlobStore) -> dict[str, Any]:
    result = holder
    content = holder.get("content")
    if isinstance(content, list) and any(isinstance(b, dict) and parse_reference(b.get("data")) for b in content):
        result = dict(holder)
        result["content"] = [_resolve_block(block, store) for block in content]
    details = holder.get("details")
    if isinstance(details, dict):
        resolved_details = _resolve_data_urls(details, store)
        if resolved_details is not details:
            result = dict(result) if result is holder else result
            result["details"] = resolved_details
    return result


def _resolve_block(block: Any, store: BlobStore) -> Any:
    if not (isinstance(block, dict) and block.get("type") == "image" and parse_reference(block.get("data"))):
        return block
    raw = store.get(block["data"])
    if raw is None:
        return block
    return {**block, "data": base64.b64encode(raw).decode("ascii")}


def _resolve_data_urls(node: Any, store: BlobStore) -> Any:
    if parse_reference(node):
        raw = store.get(node)
        if raw is None:
            return node
        text = raw.decode("utf-8", "replace")
        return text if is_data_url(text) else node
    if isinstance(node, dict):
        resolved = {key: _resolve_data_urls(value, store) for key, value in node.items()}
        return node if all(resolved[k] is node[k] for k in node) else resolved
    if isinstance(node, list):
        resolved_list = [_resolve_data_urls(item, store) for item in node]
        return node if all(a is b for a, b in zip(resolved_list, node)) else resolved_list
    return node
