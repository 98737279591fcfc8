"""The little DNS a namespace's gate speaks (docs/design/isolation.md): it reads one question
from a query and answers it with IPv4 addresses, no data, or a refusal. Pure functions."""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "AAAA",
    "NOERROR",
    "NXDOMAIN",
    "REFUSED",
    "SERVFAIL",
    "A",
    "Question",
    "answer",
    "question",
]

A: Final = 1
AAAA: Final = 28
NOERROR: Final = 0
SERVFAIL: Final = 2
NXDOMAIN: Final = 3
REFUSED: Final = 5
_TTL: Final = 30
_HEADER: Final = struct.Struct("!HHHHHH")


@dataclass(frozen=True)
class Question:
    """A query's id, flags, its first question's name and type, and the question's bytes."""

    ident: int
    flags: int
    name: str
    qtype: int
    raw: bytes


def question(data: bytes) -> Question | None:
    """The question of a query (None: not a query this gate answers)."""
    if len(data) < _HEADER.size:
        return None
    ident, flags, qdcount, _an, _ns, _ar = _HEADER.unpack_from(data)
    if flags & 0x8000 or qdcount < 1:  # a response, or no question
        return None
    labels: list[str] = []
    at = _HEADER.size
    while True:
        if at >= len(data):
            return None
        size = data[at]
        at += 1
        if size == 0:
            break
        if size & 0xC0 or at + size > len(data):  # no compression in a question
            return None
        try:
            labels.append(data[at : at + size].decode("ascii"))
        except UnicodeDecodeError:
            return None
        at += size
    if at + 4 > len(data):
        return None
    qtype, _qclass = struct.unpack_from("!HH", data, at)
    raw = data[_HEADER.size : at + 4]
    return Question(ident=ident, flags=flags, name=".".join(labels), qtype=qtype, raw=raw)


def answer(q: Question, addresses: Sequence[str] = (), rcode: int = NOERROR) -> bytes:
    """The response to ``q``: ``addresses`` as A records (for an A question), else none."""
    records = [a for a in addresses if q.qtype == A]
    flags = 0x8000 | (q.flags & 0x0100) | 0x0080 | (rcode & 0xF)  # QR, RD as asked, RA
    out = bytearray(_HEADER.pack(q.ident, flags, 1, len(records), 0, 0))
    out += q.raw
    for address in records:
        out += struct.pack("!HHHIH", 0xC00C, A, 1, _TTL, 4) + socket.inet_aton(address)
    return bytes(out)
