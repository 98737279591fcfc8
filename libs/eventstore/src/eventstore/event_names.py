"""The type a stored event is shown with (``contracts.event_types``): its public type when it is
published, else one derived from its aggregate and its name, never its class name.

The derived type is ``<aggregate>.<event>.v1`` in lower snake case: the event is its class name
(``Provisioned`` → ``provisioned``); the aggregate is the ``event_aggregate`` of the class the
event is declared in, when it sets one (``ExecutionWorkspace`` publishes as ``workspace``), else
that class's name (``WorkspaceOperation`` → ``workspace_operation``). A stored event's class and
topic stay as they are: only what is shown changes.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any

from contracts.event_types import event_label, snake_case

if TYPE_CHECKING:
    from eventstore.relay import ToContract

__all__ = ["aggregate_token", "event_label", "public_type", "recorded_type", "stored_type"]

log = logging.getLogger(__name__)


def _declaring_class(event_class: type[Any]) -> tuple[str, type[Any] | None]:
    """The name of the class ``event_class`` is declared in, and that class when it can be
    found (a class declared inside a function cannot)."""
    outer = event_class.__qualname__.rpartition(".")[0]
    if not outer:
        return "", None
    found: Any = sys.modules.get(event_class.__module__)
    for part in outer.split("."):
        found = getattr(found, part, None)
    return outer.rpartition(".")[2], found if isinstance(found, type) else None


def aggregate_token(event_class: type[Any]) -> str:
    """The aggregate an event of ``event_class`` is shown under (``workspace``,
    ``workspace_operation``)."""
    name, declaring = _declaring_class(event_class)
    declared = getattr(declaring, "event_aggregate", None)
    if isinstance(declared, str) and declared:
        return declared
    return snake_case(name) if name else "event"


def recorded_type(event_class: type[Any]) -> str:
    """The derived type of a stored event class: ``<aggregate>.<event>.v1``."""
    return f"{aggregate_token(event_class)}.{snake_case(event_class.__name__)}.v1"


def stored_type(domain_event: Any) -> str:
    """The stored class as its topic names it: ``ExecutionWorkspace.Provisioned``."""
    return str(type(domain_event).__qualname__)


def public_type(domain_event: Any, to_contract: ToContract | None = None) -> str:
    """The type ``domain_event`` is shown with: the tag of its public event (``to_contract``),
    else :func:`recorded_type` (also when mapping it fails: a trail still shows)."""
    if to_contract is not None:
        try:
            public = to_contract(domain_event)
        except Exception:  # an old event the mapper no longer reads: show it all the same
            log.warning("no public event for %s", stored_type(domain_event), exc_info=True)
            public = None
        if public is not None:
            tag = type(public).__struct_config__.tag
            if isinstance(tag, str):
                return tag
    return recorded_type(type(domain_event))
