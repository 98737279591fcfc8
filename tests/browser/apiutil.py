"""Setting up what the browser tests look at, through the JSON API: a company, its board key (the
one the operator types into the page), a project and its primary project workspace on a real git
repository (``tests/e2e/runtimeutil.py``'s :class:`Board`), issues and realized workspaces."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.gitutil import make_repo
from tests.e2e.hostfacts import wait_until
from tests.e2e.runtimeutil import ISOLATED, ApiStack, Board, status_of

__all__ = ["Operator", "create_process_agent", "operator_board", "wait_supervisor_knows"]


@dataclass
class Operator:
    """A board (client, company, project, project workspace) and the clear board key."""

    board: Board
    key: str

    @property
    def company_id(self) -> str:
        """The company's id."""
        return str(self.board.company["id"])


@contextlib.asynccontextmanager
async def operator_board(
    stack: ApiStack,
    tmp_path: Path,
    *,
    policy: Mapping[str, Any] = ISOLATED,
    runtime_config: Mapping[str, Any] | None = None,
    name: str = "Acme",
) -> AsyncIterator[Operator]:
    """A company with a board key, a project with ``policy`` and its primary project workspace
    ("main checkout") on a new repository under ``tmp_path`` (with ``runtimeConfig``)."""
    repo = make_repo(tmp_path / f"repo-{uuid.uuid4().hex[:8]}")
    async with stack.admin as admin:
        company = await admin.post("/api/companies", json={"name": name})
        assert company.status_code == 201, status_of(company)
        created = await admin.post(
            f"/api/companies/{company.json()['id']}/api-keys", json={"name": "b", "kind": "board"}
        )
        assert created.status_code == 201, status_of(created)
        key = str(created.json()["key"])
    async with stack.client(key) as http:
        http.timeout = httpx.Timeout(60)
        project = await http.post(
            f"/api/companies/{company.json()['id']}/projects",
            json={"name": "Robot", "executionWorkspacePolicy": dict(policy)},
        )
        assert project.status_code == 201, status_of(project)
        body: dict[str, Any] = {"name": "main checkout", "cwd": str(repo), "isPrimary": True}
        if runtime_config is not None:
            body["runtimeConfig"] = dict(runtime_config)
        workspace = await http.post(f"/api/projects/{project.json()['id']}/workspaces", json=body)
        assert workspace.status_code == 201, status_of(workspace)
        board = Board(
            http=http,
            company=company.json(),
            project=project.json(),
            project_workspace=workspace.json(),
            repo=repo,
        )
        yield Operator(board=board, key=key)


async def create_process_agent(
    operator: Operator, name: str, adapter_config: Mapping[str, Any]
) -> dict[str, Any]:
    """A ``process`` agent of the operator's company (asserted 201; untrusted)."""
    made = await operator.board.http.post(
        f"/api/companies/{operator.company_id}/agents",
        json={"name": name, "adapterType": "process", "adapterConfig": dict(adapter_config)},
    )
    assert made.status_code == 201, status_of(made)
    agent: dict[str, Any] = made.json()
    return agent


async def wait_supervisor_knows(board: Board, workspace_id: str, command_id: str) -> None:
    """Wait until the runtime supervisor knows ``command_id`` of the workspace (it learns the
    configuration from the realizer's events, a moment after the API answered): its logs of a
    service or a harmless stop answer something else than 404/422."""

    async def known() -> bool | None:
        answer = await board.http.post(
            f"/api/execution-workspaces/{workspace_id}/runtime-services/stop",
            json={"workspaceCommandId": command_id},
        )
        return True if answer.status_code == 200 else None

    await wait_until(known, 20, f"the supervisor knowing {command_id} of {workspace_id}")
