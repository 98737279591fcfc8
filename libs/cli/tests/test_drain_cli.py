"""``clipyard nodes drain`` and ``undrain``: a node nobody serves is said plainly (exit 1, no
traceback), and the report shows each workspace with what happened to it."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from clipyard_cli.drain import format_report, run_drain, run_undrain
from contracts.drains import DrainReport, MovedWorkspace, UnmovedWorkspace, WaitingWorkspace


@pytest.mark.integration
async def test_a_node_nobody_serves_is_said_plainly(
    nats_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {
        "CLIPYARD_HOME": str(tmp_path),
        "CLIPYARD_NATS_URL": nats_server.url,
        "CLIPYARD_NATS_EXTERNAL": "1",
    }
    out = io.StringIO()
    assert await run_drain(env, "nodeb", out=out) == 1
    assert await run_undrain(env, "nodeb", out=out) == 1
    assert out.getvalue() == ""
    err = capsys.readouterr().err
    assert "node nodeb did not drain" in err
    assert "clipyard nodes undrain:" in err
    assert "Traceback" not in err


def test_the_report_names_what_moved_waits_and_stays_with_why() -> None:
    report = DrainReport(
        node_id="nodeb",
        moved=[
            MovedWorkspace(
                workspace_id="w1",
                project_workspace_id="p1",
                to_node="local",
                cwd="/home/a/worktrees/p1/x",
                rescue_ref="refs/clipyard/moves/w1",
                file_count=2,
                services_restarted=["service:web"],
            )
        ],
        waiting=[WaitingWorkspace(workspace_id="w2", project_workspace_id="p2", run_ids=["r9"])],
        not_moved=[
            UnmovedWorkspace(
                workspace_id="w3",
                project_workspace_id="p3",
                reason="local_checkout",
                message="Its project workspace is the local checkout /src on this host.",
            )
        ],
        remaining=2,
    )
    text = format_report(report)
    assert "moved    w1 -> local at /home/a/worktrees/p1/x, 2 uncommitted files" in text
    assert "restarted service:web" in text
    assert "waiting  w2: held by runs r9" in text
    assert "stays    w3 (local_checkout): Its project workspace is the local checkout" in text
    assert text.endswith("2 workspaces remain on node nodeb")
