"""Mapping a handler's exception to an error reply."""

from __future__ import annotations

from typing import Any

from contracts.errors import ErrorCode
from natsbus.errors import INTERNAL_MESSAGE, default_error_mapper, error_reply


class NotFoundError(Exception):
    code = ErrorCode.NOT_FOUND
    status = 404

    def __init__(self, what: str) -> None:
        self.details = {"id": what}
        super().__init__(f"no issue {what}")


class ConflictError(Exception):
    """Has a code but no status: the code's default status applies."""

    code = "state_conflict"


class OddError(Exception):
    code = "quota_exceeded"
    status = "429"  # not an int: ignored
    details: Any = ["not", "a", "mapping"]


def test_coded_exceptions_keep_code_status_and_details() -> None:
    reply = default_error_mapper(NotFoundError("i-1"))
    assert (reply.code, reply.status, reply.message) == ("not_found", 404, "no issue i-1")
    assert reply.details == {"id": "i-1"}


def test_a_missing_status_comes_from_the_code() -> None:
    reply = default_error_mapper(ConflictError("busy"))
    assert (reply.code, reply.status, reply.message) == ("state_conflict", 409, "busy")


def test_unknown_codes_and_odd_attributes_fall_back_to_500() -> None:
    reply = default_error_mapper(OddError())
    assert (reply.code, reply.status, reply.message, reply.details) == (
        "quota_exceeded",
        500,
        "quota_exceeded",
        {},
    )


def test_anything_else_is_internal_without_its_insides() -> None:
    secret = "password=hunter2 in /srv/file.py line 3"
    reply = default_error_mapper(RuntimeError(secret))
    assert (reply.code, reply.status) == ("internal", 500)
    assert reply.message == INTERNAL_MESSAGE
    assert "hunter2" not in reply.message
    assert "Traceback" not in reply.message
    # An int code (as in nats' own API errors) is not a Clipyard error code.
    api_error = RuntimeError("x")
    api_error.code = 10058  # type: ignore[attr-defined]
    assert default_error_mapper(api_error).code == "internal"


def test_error_reply_defaults_the_status() -> None:
    assert error_reply(ErrorCode.TIMEOUT, "late").status == 504
    assert error_reply("custom", "odd").status == 500
    assert error_reply("custom", "odd", status=418, details={"a": 1}).details == {"a": 1}
