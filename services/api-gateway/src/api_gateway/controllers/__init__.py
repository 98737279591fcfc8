"""One controller per resource; handlers of a few lines, each with an operation id and a docstring."""

from __future__ import annotations

from api_gateway.controllers.agents import AgentController
from api_gateway.controllers.api_keys import ApiKeyController
from api_gateway.controllers.companies import CompanyController
from api_gateway.controllers.events import EventStreamController
from api_gateway.controllers.execution_workspaces import ExecutionWorkspaceController
from api_gateway.controllers.health import HealthController
from api_gateway.controllers.heartbeat_context import HeartbeatContextController
from api_gateway.controllers.issues import IssueController
from api_gateway.controllers.nodes import NodeController
from api_gateway.controllers.operations import OperationController
from api_gateway.controllers.project_workspaces import ProjectWorkspaceController
from api_gateway.controllers.projects import ProjectController
from api_gateway.controllers.runs import RunController
from api_gateway.controllers.runtime_services import RuntimeServiceController
from api_gateway.controllers.secrets import SecretController
from api_gateway.controllers.sessions import SessionController
from api_gateway.controllers.workspace_audit import WorkspaceAuditController
from api_gateway.controllers.workspace_diff import WorkspaceDiffController

__all__ = ["CONTROLLERS"]

CONTROLLERS = (
    HealthController,
    CompanyController,
    ApiKeyController,
    SessionController,
    OperationController,
    EventStreamController,
    ProjectController,
    ProjectWorkspaceController,
    IssueController,
    ExecutionWorkspaceController,
    WorkspaceAuditController,
    WorkspaceDiffController,
    RuntimeServiceController,
    SecretController,
    AgentController,
    RunController,
    HeartbeatContextController,
    NodeController,
)
