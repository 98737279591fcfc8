"""Low-trust containment (ARCHITECTURE §6, DECISIONS 11) with a hostile agent script.

An untrusted agent, on its own isolated workspace, tries to read Clipyard's stores, the
credentials master key and vault, the spans and service logs, another workspace's worktree and a
service's environment; to list ``$CLIPYARD_HOME``; and to plant git hooks (and ``core.hooksPath``,
``core.fsmonitor``) in the repository's common git directory and in the server's own empty hooks
folder. Each attempt is reported by the agent and asserted failed; writes are checked on the host
(inside the sandbox a path under the private ``/tmp`` may be writable and vanish with it). Then the
server runs git in that repository (it realizes another issue's worktree, reads a close
readiness) and the planted hook must not have run.

A trusted agent runs unconfined by design, so its hooks *are* planted (checked, and shown to work
for a user's own git): the server's git must still not run them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.gitutil import git
from tests.e2e.heartbeatutil import brief as _brief
from tests.e2e.heartbeatutil import create_agent, wait_run, wake
from tests.e2e.runtimeutil import Board, runtime_board, status_of
from tests.e2e.test_heartbeat_flow import new_issue

pytestmark = pytest.mark.e2e

HOOKS = ("post-checkout", "reference-transaction", "post-index-change", "pre-commit")


async def _secret(board: Board) -> None:
    """A company secret, so the credentials vault and its master key exist on disk."""
    answer = await board.http.post(
        f"/api/companies/{board.company['id']}/secrets",
        json={"name": "GITHUB_TOKEN", "value": "ghp_e2e-containment-0000000000"},
    )
    assert answer.status_code == 201, status_of(answer)


async def _server_runs_git(board: Board, hostile_ws_id: str) -> None:
    """The realizer runs git in the repository: a new worktree (checkout, a branch created) and a
    close readiness of the hostile agent's workspace (status in its worktree)."""
    _, fresh = await board.realize("After the agent")
    assert Path(fresh["cwd"], "README.md").is_file(), fresh
    readiness = await board.http.get(f"/api/execution-workspaces/{hostile_ws_id}/close-readiness")
    assert readiness.status_code == 200, status_of(readiness)


async def test_untrusted_agent_cannot_read_our_files_or_plant_hooks(
    stack: Any, tmp_path: Path, reaper: None
) -> None:
    home = stack.home
    marker = tmp_path / "hook-ran"
    async with runtime_board(stack, tmp_path) as board:
        await _secret(board)
        _, sibling = await board.realize("A sibling's work")
        sibling_secret = Path(sibling["cwd"], "uncommitted-secret.txt")
        sibling_secret.write_text("sibling's private notes\n")
        reads = [
            *sorted(str(p) for p in (home / "data").glob("*.sqlite")),
            str(home / "credentials" / "master.key"),
            str(home / "credentials" / "vault.db"),
            str(home / "telemetry" / "spans.jsonl"),
            *sorted(str(p) for p in (tmp_path / "service-logs").glob("*.log")),
            str(sibling_secret),
            str(Path(sibling["cwd"], "README.md")),
            f"/proc/{stack.processes['heartbeat_controller'].pid}/environ",
            f"/proc/{stack.processes['api_gateway'].pid}/environ",
        ]
        reads += sorted(str(p) for p in (home / "nats").glob("*") if p.is_file())
        for path in reads:
            assert Path(path).is_file(), f"{path} is not there to be read"
        assert len([p for p in reads if p.endswith(".sqlite")]) == 5, reads
        no_hooks = home / "run" / "git-no-hooks"
        listed = [str(home), str(home / "data"), str(home / "credentials"), sibling["cwd"]]
        writes = [str(no_hooks / "post-checkout"), str(Path(sibling["cwd"], "planted.txt"))]
        common = board.repo / ".git"
        config_before = (common / "config").read_bytes()
        hooks_before = sorted(p.name for p in (common / "hooks").iterdir())
        issue = await new_issue(board, "Be nosy")
        agent = await create_agent(
            board,
            "hostile",
            AGENT_TARGETS=json.dumps({"read": reads, "list": listed, "write": writes}),
            AGENT_HOOK_MARKER=str(marker),
        )
        run = await wait_run(
            board.http, (await wake(board.http, agent["id"], issueId=issue["id"]))["runId"]
        )
        assert run["status"] == "succeeded", _brief(run)
        result = run["result"]
        attempts = result["attempts"]
        assert len(attempts) == len(reads) + len(listed) + len(writes) + len(HOOKS) + 3, attempts
        # Nothing of ours could be read or listed: a folder on the way to its own worktree
        # shows only the next step of that way (bwrap's mount points in its private /tmp).
        opened = [a for a in attempts if a["action"] == "read" and a["ok"]]
        assert opened == [], opened
        own = Path(run_worktree := (await board.detail(run["executionWorkspaceId"])).json()["cwd"])
        for listing in (a for a in attempts if a["action"] == "list" and a["ok"]):
            folder = Path(listing["path"])
            assert folder in own.parents, listing
            step = own.relative_to(folder).parts[0]
            assert listing["detail"] == step, (listing, run_worktree)
        # Nothing was written where the host would see it.
        assert not (no_hooks / "post-checkout").exists()
        assert no_hooks.is_dir(), no_hooks
        assert list(no_hooks.iterdir()) == []
        assert not Path(sibling["cwd"], "planted.txt").exists()
        assert Path(result["commonDir"]).resolve() == common.resolve(), result["commonDir"]
        planted = [a for a in attempts if a["action"] == "hook" and a["ok"]]
        assert planted == [], planted
        assert sorted(p.name for p in (common / "hooks").iterdir()) == hooks_before
        configured = [a for a in attempts if a["action"] in ("config", "git-config") and a["ok"]]
        assert configured == [], configured
        assert (common / "config").read_bytes() == config_before
        # The sandbox shows none of the host's processes.
        assert result["visiblePids"] < 10, result["visiblePids"]
        # The server's git in that repository runs no hook of the agent's.
        await _server_runs_git(board, run["executionWorkspaceId"])
        assert not marker.exists(), marker.read_text()
        assert sibling_secret.read_text() == "sibling's private notes\n"


async def test_hooks_a_trusted_agent_plants_are_never_run_by_the_server(
    stack: Any, tmp_path: Path, reaper: None
) -> None:
    marker = tmp_path / "hook-ran"
    async with runtime_board(stack, tmp_path) as board:
        issue = await new_issue(board, "Plant hooks")
        agent = await create_agent(
            board, "hostile", trust="trusted", AGENT_HOOK_MARKER=str(marker), AGENT_HOOKSPATH="0"
        )
        run = await wait_run(
            board.http, (await wake(board.http, agent["id"], issueId=issue["id"]))["runId"]
        )
        assert run["status"] == "succeeded", _brief(run)
        common = board.repo / ".git"
        for hook in HOOKS:
            assert (common / "hooks" / hook).is_file(), f"the trusted agent did not plant {hook}"
        # They work: a user's own git in the repository runs them.
        git(board.repo, "checkout", "-q", "-b", "probe")
        git(board.repo, "checkout", "-q", "main")
        assert marker.exists(), "the planted post-checkout hook did not run for a user's git"
        marker.unlink()
        # The server's git does not.
        await _server_runs_git(board, run["executionWorkspaceId"])
        assert not marker.exists(), f"the server ran a planted hook: {marker.read_text()}"
