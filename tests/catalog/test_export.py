"""`sessdex export` and `sessdex secrets` through the real executable, and the renderers' escaping byte by byte."""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from sessdex.core.blobs import BlobStore
from tests.core.sessiontree import BASE_MS, Tree, assistant, header, make_tree, message, user

SESSDEX = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "sessdex"
SESSION_ID = "ab12000000000001"
AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
HOSTILE = ("<script>window.pwned=1</script> </details> <img src=x onerror=\"window.pwned=2\"> "
           "[click](javascript:window.pwned=3) ![remote](http://example.invalid/x.png) \x1b[31mred\u202eevil")


def hostile_records(tree: Tree) -> list[dict[str, object]]:
    reference = BlobStore(tree.paths.blobs_dir).put(PNG)
    return [
        user(HOSTILE + " key " + AWS_KEY),
        {**assistant("```python\nprint('hi')\n```\nSee `code`."), "message": {
            **assistant("x")["message"],
            "content": [{"type": "thinking", "thinking": "secret plan"},
                        {"type": "text", "text": "```python\nprint('hi')\n```"},
                        {"type": "toolCall", "id": "t1", "name": "bash", "arguments": {"command": "echo " + GITHUB_TOKEN}}],
            "usage": {"input": 10, "output": 5, "cost": {"total": 0.25}}}},
        message("toolResult", [{"type": "text", "text": "x" * 30_000},
                               {"type": "image", "mimeType": "image/png", "data": reference}],
                "r0000001", "a0000001", toolCallId="t1", toolName="bash"),
        message("user", [{"type": "image", "mimeType": "image/png", "data": "not base64!!"}], "u0000002", "r0000001"),
        {"type": "compaction", "id": "c0000001", "parentId": "u0000002", "timestamp": "2025-01-01T00:00:01.000Z",
         "summary": "we did things", "firstKeptEntryId": "u0000002", "tokensBefore": 1234},
        {**user("other branch", "u0000009", "u0000001")},
    ]


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    tree = make_tree(tmp_path)
    proj = tree.project("proj")
    tree.session(proj, SESSION_ID, hostile_records(tree), mtime_ms=BASE_MS)
    return tree


def sessdex(tree: Tree, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "HOME": str(tree.home), "PI_CODING_AGENT_DIR": str(tree.paths.agent_dir)}
    return subprocess.run([str(SESSDEX), *args], cwd=tree.home / "proj", env=environment, capture_output=True,
                          text=True, timeout=60)


def test_html_export_escapes_hostile_text_and_redacts_secrets(tree: Tree) -> None:
    done = sessdex(tree, "export", "ab12", "--leaf", "c000")
    assert done.returncode == 0, done.stderr
    page = done.stdout
    assert page.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in page and "default-src 'none'" in page and "script-src" not in page
    assert "<script" not in page and "onerror=\"" not in page and 'href="javascript:' not in page
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in page
    assert "&lt;/details&gt;" in page and "http://example.invalid" in page and '<img src="http' not in page
    assert "\x1b" not in page and "\u202e" not in page
    assert AWS_KEY not in page and GITHUB_TOKEN not in page
    assert "[REDACTED:aws-access-key]" in page and "[REDACTED:github-token]" in page
    assert "<details><summary>Thinking</summary>" in page and "<details open" not in page
    assert "showing 20,000 of 30,000 characters" in page
    assert 'src="data:image/png;base64,' + base64.b64encode(PNG).decode() + '"' in page
    assert "its data is not valid base64" in page
    assert "Context compacted (1,234 tokens before)" in page
    assert 'class="hl-nb"' in page  # Pygments highlighted the fence
    assert "$0.2500" in page
    assert "other branch" not in page  # only the chosen path


def test_all_branches_shows_every_branch(tree: Tree) -> None:
    page = sessdex(tree, "export", "ab12", "--all-branches").stdout
    assert "other branch" in page and "we did things" in page and 'class="sx-branch"' in page


def test_markdown_and_json_exports(tree: Tree) -> None:
    markdown = sessdex(tree, "export", "ab12", "--format", "md", "--leaf", "c0000001").stdout
    assert "```python\nprint('hi')\n```" in markdown
    assert "<details><summary>Tool call: bash</summary>" in markdown
    assert AWS_KEY not in markdown and "[REDACTED:aws-access-key]" in markdown
    document = json.loads(sessdex(tree, "export", "ab12", "--format", "json", "--all-branches").stdout)
    assert [entry["id"] for entry in document["entries"]][-1] == "u0000009"
    result = next(entry for entry in document["entries"] if entry["id"] == "r0000001")
    assert result["message"]["content"][1]["data"] == base64.b64encode(PNG).decode()  # the blob resolved
    assert GITHUB_TOKEN not in json.dumps(document)


def test_no_redact_keeps_secrets_and_warns(tree: Tree) -> None:
    done = sessdex(tree, "export", "ab12", "--format", "json", "--no-redact")
    assert done.returncode == 0 and "warning" in done.stderr and AWS_KEY in done.stdout


def test_output_file_is_private_and_never_replaced_unasked(tree: Tree) -> None:
    target = tree.root / "out.html"
    assert sessdex(tree, "export", "ab12", "-o", str(target)).returncode == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and target.read_text().startswith("<!DOCTYPE html>")
    again = sessdex(tree, "export", "ab12", "-o", str(target))
    assert again.returncode != 0 and "--force" in again.stderr and "Traceback" not in again.stderr
    link = tree.root / "link.html"
    link.symlink_to(tree.root / "elsewhere.html")
    refused = sessdex(tree, "export", "ab12", "-o", str(link), "--force")
    assert refused.returncode != 0 and not (tree.root / "elsewhere.html").exists()
    assert sessdex(tree, "export", "ab12", "-o", str(tree.root / "t.md")).returncode == 0
    assert (tree.root / "t.md").read_text().startswith("# Session")


def test_bad_input_is_one_line_and_non_zero(tree: Tree) -> None:
    for args in (("export", "zz99"), ("export", "ab12", "--leaf", "nope"), ("secrets",)):
        done = sessdex(tree, *args)
        assert done.returncode != 0 and "Traceback" not in done.stderr and done.stderr.strip()


def test_secrets_lists_where_never_what(tree: Tree) -> None:
    done = sessdex(tree, "secrets", "--all", "--json")
    assert done.returncode == 1
    findings = json.loads(done.stdout)["findings"]
    assert {(f["entryId"], f["kind"]) for f in findings} == {("u0000001", "aws-access-key"),
                                                             ("a0000001", "github-token")}
    assert next(f for f in findings if f["kind"] == "github-token")["field"] == "message.content[2].arguments.command"
    assert AWS_KEY not in done.stdout and GITHUB_TOKEN not in done.stdout
    text = sessdex(tree, "secrets", "ab12")
    assert "aws-access-key" in text.stdout and AWS_KEY not in text.stdout + text.stderr


def test_secrets_exit_zero_when_clean(tmp_path: Path) -> None:
    tree = make_tree(tmp_path)
    proj = tree.project("proj")
    tree.session(proj, SESSION_ID, [user("nothing here"), assistant("sha 3f786850e387550fdab836ed7e6dc881de23001b")],
                 head=header(SESSION_ID, proj))
    done = sessdex(tree, "secrets", "--all")
    assert done.returncode == 0 and "0 secret(s)" in done.stderr
