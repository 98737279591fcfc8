"""README.md's guided tour pastes: its shell blocks, from "A first workspace" to the next
section, run as they are, in order, in one ``bash`` (``set -euo pipefail``) against a fresh stack,
and each answers what the README says it does.

The shell gets what a reader's has after ``./dev up``: ``CLIPYARD_HTTP_PORT`` (the stack's port),
``CLIPYARD_ADMIN_KEY``, ``CLIPYARD_HOME`` and a ``HOME`` of its own (where ``~/src/clipyard-demo`` is
made), in the checkout's root. ``curl`` is wrapped to fail on an HTTP error (``--fail-with-body``,
which ``set -e`` turns into the end of the script) and to write each request's status to stderr as
``HTTP <code> <method> <url>``; each block is preceded by a marker line on both streams, so that
each block's answers (the JSON lines it printed) and statuses are checked on their own.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.gitutil import git

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
TOUR = "## A first workspace"
"""The heading of the README's guided tour; its shell blocks run up to the next ``## ``."""

PRELUDE = r"""set -euo pipefail
curl() {
  command curl -S --fail-with-body -w '\n%{stderr}HTTP %{http_code} %{method} %{url_effective}\n' "$@"
}
"""
"""What the test adds before the blocks: strict mode and the ``curl`` wrapper."""

MARK = "@@ README block {} @@"


def tour_blocks(readme: str) -> list[str]:
    """The ``sh`` blocks of the guided tour, in order (at least one, asserted)."""
    start = readme.index(f"\n{TOUR}\n")
    end = readme.index("\n## ", start + len(TOUR))
    blocks = re.findall(r"^```sh\n(.*?)^```$", readme[start:end], re.S | re.M)
    assert blocks, f"no sh block under {TOUR!r}"
    return list(blocks)


@dataclass
class Block:
    """What one block printed: its JSON answers (one a line) and its requests' statuses."""

    text: str
    answers: list[Any]
    statuses: list[tuple[int, str, str]]
    """(code, method, URL) of each request, in order."""

    def status(self, method: str, path: str) -> int:
        """The status of the one request ``method`` whose URL's path ends with ``path``."""
        codes = [c for c, m, url in self.statuses if m == method and _path(url).endswith(path)]
        assert len(codes) == 1, f"{method} ...{path}: {codes} in {self.statuses}"
        return codes[0]

    def answer(self, **fields: Any) -> dict[str, Any]:
        """The last JSON object answered with these field values (asserted present)."""
        found = [
            a
            for a in self.answers
            if isinstance(a, dict) and all(a.get(k) == v for k, v in fields.items())
        ]
        assert found, f"no answer with {fields} among {self.answers}"
        return found[-1]  # type: ignore[no-any-return]

    def find(self, key: str) -> dict[str, Any]:
        """The last JSON object answered with ``key`` (asserted present)."""
        found = [a for a in self.answers if isinstance(a, dict) and key in a]
        assert found, f"no answer with {key!r} among {self.answers}"
        return found[-1]  # type: ignore[no-any-return]


def _path(url: str) -> str:
    return httpx.URL(url).path


def _split(stream: str, count: int) -> list[str]:
    """The stream's text after each block's marker, block by block."""
    parts = re.split(r"^@@ README block (\d+) @@$", stream, flags=re.M)
    found = {int(parts[i]): parts[i + 1] for i in range(1, len(parts), 2)}
    return [found.get(i, "") for i in range(count)]


def _json_lines(text: str) -> list[Any]:
    found = []
    for line in text.splitlines():
        if line.startswith(("{", "[")):
            try:
                found.append(json.loads(line))
            except ValueError:
                continue
    return found


def _statuses(text: str) -> list[tuple[int, str, str]]:
    return [
        (int(m["code"]), m["method"], m["url"])
        for m in re.finditer(r"^HTTP (?P<code>\d+) (?P<method>\S+) (?P<url>\S+)$", text, re.M)
    ]


async def run_tour(stack: Any, home: Path, readme: str) -> list[Block]:
    """Run the tour's blocks of ``readme`` in one bash with the stack's settings; each block's
    output (asserted: bash exited 0, within 150 s)."""
    blocks = tour_blocks(readme)
    script = PRELUDE + "".join(
        f"printf '\\n{MARK.format(i)}\\n'; printf '\\n{MARK.format(i)}\\n' >&2\n{block}"
        for i, block in enumerate(blocks)
    )
    # The admin key is read as a reader's shell reads it: from $CLIPYARD_HOME/admin.key.
    key_file = Path(stack.home) / "admin.key"
    if not key_file.exists():
        key_file.write_text(stack.admin_key + "\n")
    assert key_file.read_text().strip() == stack.admin_key
    env = {
        **os.environ,
        "HOME": str(home),
        "CLIPYARD_HOME": str(stack.home),
        "CLIPYARD_HTTP_PORT": str(httpx.URL(stack.api).port),
    }
    for name in (
        "CLIPYARD_API_URL",
        "CLIPYARD_API_KEY",
        "CLIPYARD_COMPANY_ID",
        "CLIPYARD_ADMIN_KEY",
    ):
        env.pop(name, None)
    shell = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        script,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = await asyncio.wait_for(shell.communicate(), 150)
    except TimeoutError:
        os.killpg(shell.pid, signal.SIGKILL)  # bash and what it runs (a follow that never ends)
        await shell.wait()
        raise AssertionError("the README's blocks ran for more than 150 s") from None
    stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
    outs, errs = _split(stdout, len(blocks)), _split(stderr, len(blocks))
    reached = max((i for i in range(len(blocks)) if MARK.format(i) in stdout), default=0)
    assert shell.returncode == 0, (
        f"README block {reached} failed (exit {shell.returncode}):\n{blocks[reached]}\n"
        f"--- its stdout:\n{outs[reached][-3000:]}\n--- its stderr:\n{errs[reached][-3000:]}"
    )
    return [
        Block(text=o, answers=_json_lines(o), statuses=_statuses(e))
        for o, e in zip(outs, errs, strict=True)
    ]


async def test_the_readme_tour_runs_as_pasted_and_answers_as_it_says(
    stack: Any, tmp_path: Path, reaper: None
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    first, runtime, agents = await run_tour(stack, home, (ROOT / "README.md").read_text())
    repo = _first_workspace(first, home)
    _runtime_services_and_jobs(runtime)
    _agents_and_runs(agents, repo)


def _first_workspace(block: Block, home: Path) -> Path:
    """A company, its host access and board key, the project, its workspace on the repository
    the block made, an issue and its realized worktree, read with its delivery state; the
    repository."""
    for method, path, code in (
        ("POST", "/api/companies", 201),
        ("PUT", "/host-access", 200),
        ("POST", "/api-keys", 201),
        ("POST", "/projects", 201),
        ("POST", "/workspaces", 201),
        ("POST", "/issues", 201),
        ("POST", "/execution-workspace", 201),
    ):
        assert block.status(method, path) == code, (method, path)
    repo = home / "src" / "clipyard-demo"
    assert git(repo, "log", "--format=%s", "main") == "First commit"
    workspace = block.answer(branchName="ACME-1-add-worktree-support")
    assert workspace["status"] == "active", workspace
    assert (workspace["deliveryState"], workspace["commitsAhead"]) == ("merged_by_ancestry", 0), (
        workspace
    )
    assert (Path(workspace["cwd"]) / "README.md").read_text() == "# Robot\n"
    return repo


def _runtime_services_and_jobs(block: Block) -> None:
    """The project workspace's runtime config saved, its web service running (and serving),
    the job run to success with the workspace's files in its output."""
    assert block.status("PATCH", "/workspaces/" + block.answer(name="checkout")["id"]) == 200
    assert block.status("POST", "/runtime-services/start") == 200
    (web,) = block.find("operation")["workspace"]["runtimeServices"]
    shown = (web["serviceName"], web["status"], web["healthStatus"])
    assert shown == ("web", "running", "healthy"), web
    assert httpx.get(web["url"], timeout=10).status_code == 200
    assert block.status("POST", "/runtime-commands/run") == 200
    job = block.find("stdoutExcerpt")
    assert (job["command"], job["status"], job["exitCode"]) == (
        "ls -l && wc -l README.md",
        "succeeded",
        0,
    ), job
    assert "1 README.md" in job["stdoutExcerpt"], job


def _agents_and_runs(block: Block, repo: Path) -> None:
    """The echo agent created, woken for the issue, followed to its end: the run succeeded with
    the agent's result, its commit is on the workspace's branch and the workspace counts it."""
    assert block.status("POST", "/agents") == 201
    assert block.status("POST", "/wakeup") == 202
    assert "issue ACME-1: Add worktree support" in block.text, block.text
    assert "committed ECHO.md" in block.text, block.text
    assert ": HTTP 200" in block.text, block.text  # it reached the workspace's web service
    run = block.find("stages")
    assert (run["status"], run["exitCode"]) == ("succeeded", 0), run
    assert [s["stage"] for s in run["stages"]][-1] == "cleanup", run
    branch = "ACME-1-add-worktree-support"
    assert run["result"] == {
        "summary": "wrote ECHO.md and committed it",
        "file": "ECHO.md",
        "commit": git(repo, "rev-parse", branch),
        "branch": branch,
        "issue": "ACME-1",
    }, run
    assert git(repo, "log", "-1", "--format=%s", branch) == f"Echo agent: run {run['id'][:8]}"
    note = git(repo, "show", f"{branch}:ECHO.md")
    assert "- woken for: say hello" in note, note
    assert "- service web: http://127.0.0.1:" in note, note
    workspace = block.answer(branchName=branch)
    assert (workspace["deliveryState"], workspace["commitsAhead"]) == ("unmerged", 1), workspace
    listed = [a for a in block.answers if isinstance(a, list)][-1]
    assert [r["id"] for r in listed] == [run["id"]], listed
