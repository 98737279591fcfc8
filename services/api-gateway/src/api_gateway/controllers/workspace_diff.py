"""What an execution workspace changed against its base: ``GET
/api/execution-workspaces/{id}/diff`` (contracts.workspace_diff), answered by the realizer on the
workspace's node, which runs git."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get
from litestar.di import NamedDependency
from litestar.params import FromPath, QueryParameter

from api_gateway.controllers.common import error_responses
from api_gateway.controllers.realizer import fetch
from api_gateway.http.dependencies import Gateway
from api_gateway.http.security import access
from contracts import workspace_subjects as subjects
from contracts.base import Principal
from contracts.workspace_diff import GetWorkspaceDiff, WorkspaceDiff
from servicekit.access import Action, Resource

__all__ = ["WorkspaceDiffController"]


class WorkspaceDiffController(Controller):
    """``/api/execution-workspaces/{id}/diff``."""

    path = "/api"
    tags = ["execution-workspaces"]

    @get(
        "/execution-workspaces/{workspace_id:str}/diff",
        operation_id="getWorkspaceDiff",
        opt=access(Resource.EXECUTION_WORKSPACE, Action.READ),
        responses=error_responses("forbidden", "not_found", "timeout", "service_unavailable"),
    )
    async def get_diff(
        self,
        workspace_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        path: Annotated[
            str | None,
            QueryParameter(
                min_length=1,
                max_length=4096,
                description="A changed or untracked file, as the diff lists it: its unified "
                "diff is added (``patch``), up to 256 KiB.",
            ),
        ] = None,
    ) -> WorkspaceDiff:
        """What the workspace changed against its base ref: the commits its branch has that the
        merge base does not (newest first, up to 200), the files that differ between the merge
        base and the worktree as it is now (committed, staged and unstaged; status and line
        counts; up to 1,000), its untracked files (up to 1,000), and with ``path`` that file's
        unified diff. A capped list says so (``...Truncated``, ``...Total``). A workspace with no
        worktree on disk answers ``available: false`` with the reason.

        Errors: 400; 401; 403; 404 (no such workspace, or ``path`` is not a file the diff
        lists); 503 (its node does not answer)."""
        query = GetWorkspaceDiff(principal=principal, workspace_id=workspace_id, path=path)
        return await fetch(gateway, subjects.WORKSPACE_DIFF, query, WorkspaceDiff)
