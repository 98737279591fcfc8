"""What a running service says about its own health beyond its ping: its read models.

Every service answers micro's ``$SRV.STATS.<name>``; :func:`health_stats` fills the ``data`` of
its ``replay_verify`` endpoint (:data:`contracts.service.READ_MODEL_HEALTH_ENDPOINT`) with
:class:`contracts.service.ReadModelHealth`: how many stored events failed to project into the
read models since they were last rebuilt (``ServiceApplication.projection_failures``), and how far
they are projected, and which instance it is and whether it holds the service's lease
(:mod:`servicekit.leadership`). ``clipyard status`` asks for it and shows it per instance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from contracts.service import READ_MODEL_HEALTH_ENDPOINT, ReadModelHealth

if TYPE_CHECKING:
    from collections.abc import Sequence

    from eventstore import ServiceApplication
    from servicekit.leadership import Leadership

__all__ = ["health_stats", "read_model_health"]


def read_model_health(
    app: ServiceApplication,
    leadership: Leadership | None = None,
    others: Sequence[Leadership] = (),
) -> ReadModelHealth:
    """How ``app``'s read models stand now (plain counters: safe to read off the store thread),
    this instance's part in the service's lease, and the ``others`` leases it holds now."""
    return ReadModelHealth(
        other_leases={
            other.lease: other.fence.token for other in others if other.fence is not None
        },
        projection_failures=app.projection_failures,
        notifications_projected=app.notifications_projected,
        projected_upto=app.projected_upto,
        instance="" if leadership is None else leadership.holder,
        role="" if leadership is None else leadership.role,
        leader=None if leadership is None else leadership.leader,
        lease_token=None
        if leadership is None or leadership.fence is None
        else leadership.fence.token,
    )


def health_stats(
    app: ServiceApplication,
    endpoint: str,
    leadership: Leadership | None = None,
    others: Sequence[Leadership] = (),
) -> object:
    """The ``$SRV.STATS`` ``data`` of ``endpoint``: the read models' health (and the instance's
    lease role) on :data:`~contracts.service.READ_MODEL_HEALTH_ENDPOINT`, none on the others."""
    if endpoint != READ_MODEL_HEALTH_ENDPOINT:
        return None
    return msgspec.to_builtins(read_model_health(app, leadership, others))
