"""References an issue's body makes to other things must stay inside the issue's company
(ARCHITECTURE §5.1): ``projectId``, ``projectWorkspaceId``, ``parentId`` and
``executionWorkspaceSettings.executionWorkspaceId`` name the realizer's own records and are
checked by the use cases (``usecases/issues.py``); ``assigneeAgentId`` names an agent of the
heartbeat-controller and is checked here, before the use case runs.

An agent is looked up in the realizer's copy of the controller's agents (fed by
``agent.created.v1`` / ``agent.deleted.v1``). The copy lags the controller both ways:

- a creation: a board that creates an agent and at once assigns it must not be told the agent
  does not exist. So a miss asks the controller itself (:class:`AgentDirectory`), and only its
  "no such agent" answers 404; when it does not answer, the request is refused with 503
  ``service_unavailable`` and nothing is saved.
- a deletion: an agent the copy knows as live is taken as live, without asking. Its company
  never changes, so a foreign agent is always refused; but an agent deleted a moment ago, whose
  ``agent.deleted.v1`` has not reached the copy yet, can still be assigned. The issue is then as
  one whose assignee was deleted after the assignment: the controller wakes no deleted agent,
  and a board reassigns it. Once the deletion is in the copy, the agent is refused (404).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from workspace_realizer.domain.errors import NotFoundError, RequestUnansweredError

if TYPE_CHECKING:
    from workspace_realizer.readmodels import RealizerReadModels
    from workspace_realizer.usecases.ports import Store

__all__ = ["AgentDirectory", "NoAgentDirectory", "check_assignee", "reference_error"]


class AgentDirectory(Protocol):
    """Which company an agent belongs to, asked of the agents' owner (the heartbeat-controller)."""

    async def company_of(self, agent_id: str) -> str | None:
        """The company of the live agent ``agent_id``; None when there is no such agent (or it
        was deleted).

        Raises:
            RequestUnansweredError: The owner did not answer; the caller may retry.
        """
        ...


class NoAgentDirectory:
    """No agents' owner to ask (tools and tests that run the realizer alone): every agent the
    copy does not know is refused as unanswered."""

    async def company_of(self, agent_id: str) -> str | None:
        """Always raises ``RequestUnansweredError``."""
        raise RequestUnansweredError(
            f"The agent {agent_id} is not known to the workspace-realizer yet and no "
            "heartbeat-controller is wired to ask; retry once the agent's event has arrived.",
            assigneeAgentId=agent_id,
        )


def reference_error(
    field: str, ident: str, what: str, where: str = "this company"
) -> NotFoundError:
    """The 404 of a reference that names nothing of ``where``: the message and ``details.field``
    name the body's field (camelCase; a nested one dotted)."""
    key = field.rsplit(".", 1)[-1]
    details: dict[str, str] = {"field": field, key: ident}
    return NotFoundError(
        f"{field} {ident} is not {what} of {where}; give the id of one that is.", **details
    )


async def check_assignee(
    store: Store, app: RealizerReadModels, agents: AgentDirectory, company_id: str, agent_id: str
) -> None:
    """Refuse an ``assigneeAgentId`` that is not a live agent of ``company_id``: one the copy
    knows as live is accepted without asking (a deletion not in the copy yet is not seen);
    one it does not know is asked of the controller.

    Args:
        store: Runs a call on the store's thread (where the copy is read).
        app: The realizer's application (its ``agent_copy``).
        agents: Asked when the copy does not know the agent.
        company_id: The issue's company.
        agent_id: The agent named.

    Raises:
        NotFoundError: Unknown, deleted, or of another company (``details.field`` is
            ``assigneeAgentId``).
        RequestUnansweredError: The copy does not know the agent and the controller did not
            answer (503: retry).
    """
    copy = await store(app.agent_copy, agent_id)
    if copy is not None:
        company = None if copy.deleted else copy.company_id
    else:
        company = await agents.company_of(agent_id)
    if company != company_id:
        raise reference_error("assigneeAgentId", agent_id, "a live agent")
