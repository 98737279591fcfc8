"""The slot pools (ARCHITECTURE §6): ``local_stdio``, bounded by ``CLIPYARD_SLOTS`` (default 4),
whose positions are numbered from 0 (position ``i`` runs untrusted adapters as
``clipyard-slot-<i>``), and ``remote_http``, unbounded. Pure: the held positions come from the
store."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

__all__ = ["free_index", "slot_type_of"]


def slot_type_of(adapter_type: str) -> Literal["local_stdio", "remote_http"]:
    """``process`` adapters run in ``local_stdio`` slots, ``http`` ones in ``remote_http``."""
    return "remote_http" if adapter_type == "http" else "local_stdio"


def free_index(capacity: int, held: Iterable[int | None]) -> int | None:
    """The lowest ``local_stdio`` position not held, or None when the pool is full."""
    taken = {index for index in held if index is not None}
    return next((i for i in range(capacity) if i not in taken), None)
