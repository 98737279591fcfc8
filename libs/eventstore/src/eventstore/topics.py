"""Old topics of moved classes stay readable.

The store names each event's class, and a snapshot's aggregate, by topic (``module:QualName``,
eventsourcing's ``get_topic``). When a module holding aggregates moves (a service reshaped into the
skeleton of docs/design/service-shape.md), the events already stored still carry the old module
path; :func:`keep_old_topics` makes the old path resolve to the module that now holds the classes,
so a store written before the move replays unchanged. New events carry the new topic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventsourcing.utils import register_topic

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["keep_old_topics"]


def keep_old_topics(old_module: str, module: ModuleType) -> None:
    """Resolve every topic of ``old_module`` (``old.path:Class.Event``) in ``module``.

    Call it at the foot of the module the classes moved to, with ``sys.modules[__name__]``.

    Raises:
        eventsourcing.utils.TopicError: ``old_module`` already resolves to another module.
    """
    register_topic(old_module, module)
