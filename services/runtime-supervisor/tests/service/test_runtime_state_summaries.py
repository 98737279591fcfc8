"""``ListRuntimeSummaries`` over the bus: running / total of many workspaces at once, the same
numbers as each one's ``GetRuntimeState``, without another company's or unknown workspaces."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from bus_world import Sup, Upstream, http_service, runtime

from contracts.base import Actor, ErrorReply, Principal
from contracts.runtime_commands import ListRuntimeSummaries
from contracts.runtime_subjects import RUNTIME_SUMMARIES

pytestmark = pytest.mark.integration

SLEEPER = "exec sleep 300"


async def test_summaries_answer_many_workspaces_as_their_states_show_them(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    config = runtime(
        http_service("a", command=SLEEPER, port=None, readiness=None),
        http_service("b", command=SLEEPER, port=None, readiness=None),
    )
    pw = await upstream.project_workspace(str(workdir), config)
    busy = await upstream.workspace(str(workdir), pw=pw)
    idle = await upstream.workspace(str(workdir / "idle"), pw=pw, branch="ACME-2")
    await sup.known(busy)
    await sup.known(idle)
    await sup.ok_control("start", busy, service_index=0)

    unknown = str(uuid.uuid4())
    found = await sup.summaries(idle, unknown, busy)
    got = [(one.workspace_id, one.running, one.total) for one in found.items]
    assert got == [(idle, 0, 0), (busy, 1, 1)]
    state = await sup.state(busy)
    assert [row.status for row in state.runtime_services] == ["running"]

    await sup.ok_control("stop", busy)
    (after,) = (await sup.summaries(busy)).items
    assert (after.running, after.total) == (0, 1)  # the ended instance is still shown

    other = Principal(company_id="c-other", actor=Actor(type="board", id="b"))
    assert (await sup.summaries(busy, idle, principal=other)).items == []
    nobody = Principal(company_id=None, actor=Actor(type="agent", id="a"))
    reply = await sup.request(
        RUNTIME_SUMMARIES, ListRuntimeSummaries(principal=nobody, workspace_ids=[busy])
    )
    assert isinstance(reply, ErrorReply)
    assert reply.code == "forbidden"
