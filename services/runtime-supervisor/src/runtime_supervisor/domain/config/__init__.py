"""A workspace's runtime config as the supervisor uses it (pure, no I/O).

:mod:`runtime_supervisor.domain.config.effective` picks the effective config (the execution workspace's own,
else its project workspace's) and gives every command its id and service index;
:mod:`runtime_supervisor.domain.config.templates` renders the ``{{...}}`` templates of commands.
"""

from __future__ import annotations

__all__: list[str] = []
