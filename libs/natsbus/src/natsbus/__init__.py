"""NATS plumbing: connect, micro services with task handlers, typed requests, JetStream.

The public names are re-exported here; see ``docs/design/platform.md`` (natsbus) for how they fit.
"""

from __future__ import annotations

from natsbus.client import BusClient, BusRequestError, OperationAccepted
from natsbus.codec import decode, decode_reply, decoder, encode
from natsbus.connection import NatsConnectError, connect
from natsbus.consumer import OrderedConsumer, PoisonMessage
from natsbus.context import DEADLINE_HEADER, DEFAULT_REQUEST_TIMEOUT, RequestContext
from natsbus.errors import ErrorMapper, default_error_mapper, error_reply
from natsbus.jetstream import EventStreamUnavailableError, ensure_event_stream, publish
from natsbus.limits import MAX_MESSAGE_BYTES, MessageTooLargeError, check_size
from natsbus.service import BusService

__all__ = [
    "DEADLINE_HEADER",
    "DEFAULT_REQUEST_TIMEOUT",
    "MAX_MESSAGE_BYTES",
    "BusClient",
    "BusRequestError",
    "BusService",
    "ErrorMapper",
    "EventStreamUnavailableError",
    "MessageTooLargeError",
    "NatsConnectError",
    "OperationAccepted",
    "OrderedConsumer",
    "PoisonMessage",
    "RequestContext",
    "check_size",
    "connect",
    "decode",
    "decode_reply",
    "decoder",
    "default_error_mapper",
    "encode",
    "ensure_event_stream",
    "error_reply",
    "publish",
]
