"""The workspace-realizer in two parts (issue 17, item 2): its company-wide part (projects, project
workspaces, issues) runs as two replicas, ``workspace-realizer-2`` and ``-3``; its host part
(creating and changing project workspaces, whose paths are checked and repositories cloned on a
host, and execution workspaces) runs once, ``workspace-realizer-1``. What one part saves, the
other finds at once; either company-wide replica may die without a write being lost; without the
host part, company-wide writes go on and host work answers 503 "retry"."""

from __future__ import annotations

import io
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from clipyard_cli.status import run_status
from tests.cluster.clusterutil import Cluster, bearer, board_key, new_company, retrying, until
from tests.e2e.gitutil import make_repo

pytestmark = pytest.mark.cluster

REALIZER = "workspace-realizer"


async def _issue(
    http: httpx.AsyncClient, company: str, project: str, board: Any, title: str
) -> int:
    answer = await retrying(
        lambda: http.post(
            f"/api/companies/{company}/issues",
            json={"title": title, "projectId": project},
            headers=board,
        )
    )
    return answer.status_code


async def test_company_wide_replicas_and_the_host_part_share_one_store(
    cluster: Cluster, tmp_path: Path
) -> None:
    a, b = cluster.gateways
    company = (await new_company(a, "Two Parts"))["id"]
    board = bearer((await board_key(a, company))["key"])
    source = make_repo(tmp_path / "src")
    granted = await a.put(
        f"/api/companies/{company}/host-access", json={"allowedRoots": [str(tmp_path)]}
    )
    assert granted.status_code == 200, granted.text

    async def knows_access() -> bool:
        project = await a.post(
            f"/api/companies/{company}/projects", json={"name": "probe"}, headers=board
        )
        assert project.status_code == 201, project.text
        made = await b.post(
            f"/api/projects/{project.json()['id']}/workspaces",
            json={"name": "probe", "cwd": str(source), "nodeId": "local"},
            headers=board,
        )
        assert made.status_code in (201, 403), made.text  # 403: the grant has not arrived
        return made.status_code == 201

    await until(knows_access, 15.0, "the realizer knows the company's host access")

    # A project made through one gateway (a company-wide replica) gets a project workspace
    # through the other at once (the host part), found at once by a company-wide replica and
    # listed within a second.
    for n in range(10):
        project = await a.post(
            f"/api/companies/{company}/projects", json={"name": f"p{n}"}, headers=board
        )
        assert project.status_code == 201, project.text
        path = f"/api/projects/{project.json()['id']}/workspaces"
        made = await b.post(
            path, json={"name": f"w{n}", "cwd": str(source), "nodeId": "local"}, headers=board
        )
        assert made.status_code == 201, made.text
        shown = await a.get(f"{path}/{made.json()['id']}", headers=board)
        assert shown.status_code == 200, shown.text

        async def listed(path: str = path, made: Any = made) -> bool:
            answer = await b.get(path, headers=board)
            return [w["id"] for w in answer.json()] == [made.json()["id"]]

        await until(listed, 1.0, "a company-wide replica lists the new project workspace")
    project_id = project.json()["id"]

    # clipyard status names the part's node lease and its holder, the host part.
    env = {
        "CLIPYARD_HOME": str(cluster.stack.home),
        "CLIPYARD_NATS_URL": ",".join(cluster.stack.nats_urls),
        "CLIPYARD_NATS_PASSWORD_CLI": cluster.stack.nats_passwords["cli"],
    }
    out = io.StringIO()
    assert await run_status(env, out) == 0, out.getvalue()
    rows = [line.split() for line in out.getvalue().splitlines()]
    assert [REALIZER, "host:local", f"{REALIZER}-1"] in [row[:3] for row in rows], out.getvalue()

    # Either company-wide replica may die: projects and issues are still written, through
    # both gateways, and none is lost.
    for index in (2, 3):
        cluster.stack.kill(REALIZER, index, signal.SIGKILL)
        for n, http in enumerate((a, b, a, b)):
            assert await _issue(http, company, project_id, board, f"down{index}-{n}") == 201
        await cluster.stack.restart(REALIZER, index)
    titles = {
        row["title"]
        for row in (await a.get(f"/api/companies/{company}/issues?limit=100", headers=board)).json()
    }
    assert {f"down{i}-{n}" for i in (2, 3) for n in range(4)} <= titles

    # Without the host part: company-wide writes go on; host work answers 503 "retry".
    cluster.stack.kill(REALIZER, 1, signal.SIGKILL)
    try:
        assert await _issue(b, company, project_id, board, "no host part") == 201
        made = await a.post(
            f"/api/projects/{project_id}/workspaces",
            json={"name": "later", "cwd": str(source), "nodeId": "local"},
            headers=board,
        )
        assert made.status_code == 503, made.text
        assert "retry" in made.text.lower(), made.text
    finally:
        await cluster.stack.restart(REALIZER, 1)
    made = await retrying(
        lambda: a.post(
            f"/api/projects/{project_id}/workspaces",
            json={"name": "later", "cwd": str(source), "nodeId": "local"},
            headers=board,
        )
    )
    assert made.status_code == 201, made.text
