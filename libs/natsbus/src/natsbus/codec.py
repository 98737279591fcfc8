"""One shared msgspec JSON encoder and one cached decoder per type (STYLE 9).

Decoders are built the first time a type is asked for and reused afterwards; building a decoder
compiles the type's schema, which is far more expensive than decoding one message.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

import msgspec

from contracts.base import Accepted, ErrorReply, Ok

__all__ = [
    "AnyReply",
    "decode",
    "decode_reply",
    "decoder",
    "encode",
]

T = TypeVar("T")

AnyReply = Ok | ErrorReply | Accepted
"""The reply union of ARCHITECTURE §2, tagged ``kind``."""

_ENCODER: Final = msgspec.json.Encoder()
_DECODERS: Final[dict[Any, msgspec.json.Decoder[Any]]] = {}


def encode(value: Any) -> bytes:
    """Encode a value (a Struct, usually) to JSON with the shared encoder.

    Args:
        value: Anything msgspec can encode.

    Returns:
        The JSON bytes.

    Raises:
        TypeError: A value msgspec cannot encode.
    """
    return _ENCODER.encode(value)


def decoder(type_: Any) -> msgspec.json.Decoder[Any]:
    """The decoder for ``type_``, built once and cached.

    Args:
        type_: A type msgspec understands (a Struct, a union of tagged Structs, builtins).

    Returns:
        A JSON decoder for that type.
    """
    found = _DECODERS.get(type_)
    if found is None:
        found = _DECODERS.setdefault(type_, msgspec.json.Decoder(type_))
    return found


def decode(data: bytes | memoryview, type_: type[T]) -> T:
    """Decode JSON ``data`` into ``type_`` with the cached decoder.

    Args:
        data: The JSON bytes.
        type_: The expected type.

    Returns:
        The decoded value.

    Raises:
        msgspec.ValidationError: The JSON does not match ``type_``.
        msgspec.DecodeError: The data is not JSON.
    """
    result: T = decoder(type_).decode(data)
    return result


def decode_reply(data: bytes | memoryview) -> Ok | ErrorReply | Accepted:
    """Decode a reply (``ok`` / ``error`` / ``accepted``).

    Args:
        data: The JSON bytes of a reply.

    Returns:
        The decoded reply.

    Raises:
        msgspec.DecodeError: The data is not a valid reply.
    """
    reply: Ok | ErrorReply | Accepted = decoder(AnyReply).decode(data)
    return reply
