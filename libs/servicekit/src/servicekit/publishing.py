"""The envelope every published event carries (re-exported from :mod:`eventstore.envelope`).

Services map their stored events to contracts in their own ``publishing.py`` with
:func:`envelope`; it lives in ``eventstore`` so that the event store's own public events (inbox
rejections) are built the same way.
"""

from __future__ import annotations

from eventstore.envelope import EVENT_ID_NAMESPACE, Envelope, envelope

__all__ = ["EVENT_ID_NAMESPACE", "Envelope", "envelope"]
