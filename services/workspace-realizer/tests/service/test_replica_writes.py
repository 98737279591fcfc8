"""Two replicas of the company-wide part on one store, each deciding on its own read models: an
issue identifier claimed through one is never given again through the other, whether the other
has followed the claim yet or not (issue 17: "writes from any replica are safe together")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from eventsourcing.persistence import Tracking

from contracts.base import Actor
from eventstore import Cause, StoreSettings, acting, build_application
from servicekit.access import Access, ActorKind
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.domain.errors import IdentifierTakenError

COMPANY = "c-acme"
BOARD = Access(kind=ActorKind.BOARD_KEY, company_id=COMPANY, actor_id="board-key")


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[tuple[WorkspaceRealizerApplication, ...]]:
    settings = StoreSettings(kind="sqlite", home=tmp_path)
    apps = tuple(
        build_application(WorkspaceRealizerApplication, service="realizer", settings=settings)
        for _ in range(2)
    )
    with acting(Cause(actor=Actor(type="board", id="board-key"), reason="test")):
        yield apps
    for app in apps:
        app.close()


def _issue(app: WorkspaceRealizerApplication, project: str, identifier: str | None) -> str:
    fields = {"project_id": project, "title": "t"} | (
        {"identifier": identifier} if identifier else {}
    )
    return app.create_issue(BOARD, COMPANY, fields).identifier  # type: ignore[arg-type]


@pytest.mark.parametrize("first", ["ACME-1", "OTHER-7", None])
def test_an_identifier_claimed_on_one_replica_is_never_given_on_the_other(
    replicas: tuple[WorkspaceRealizerApplication, ...], first: str | None
) -> None:
    a, b = replicas
    a.register_company(COMPANY, "Acme", "ACME", Tracking("gateway", 1))
    project = str(a.create_project(BOARD, COMPANY, "Web", None).id)
    while b.follow_store():
        pass
    # A saves an issue; B has not followed it yet and is asked for the same identifier (or
    # for an automatic one, which must not be the number A just took).
    given = _issue(a, project, first)
    if first:
        with pytest.raises(IdentifierTakenError):
            _issue(b, project, given)
    else:
        assert _issue(b, project, None) == "ACME-2"
    while b.follow_store():
        pass
    identifiers = [i.identifier for i in b.issues.values()]
    assert len(identifiers) == len(set(identifiers)), identifiers
