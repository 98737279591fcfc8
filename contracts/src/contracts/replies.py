"""The reply union every command and query answers with (ARCHITECTURE §2)."""

from __future__ import annotations

from contracts.base import Accepted, ErrorReply, Ok

__all__ = ["AnyReply"]

AnyReply = Ok | ErrorReply | Accepted
