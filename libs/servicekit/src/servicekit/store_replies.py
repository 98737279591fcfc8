"""The error mapper of every service's bus endpoints: store failures answer 503 or 409.

``natsbus.default_error_mapper`` answers a coded exception with its code and anything else with a
500. A failure of the store is not a bug of the service: :func:`service_error_mapper` first asks
:func:`eventstore.store_errors.store_failure` (the database unreachable or failing over: 503
"retry"; another replica saved the aggregate first: 409; a lease that moved on: 503), logs it as a
warning, and leaves every other exception to the default.
"""

from __future__ import annotations

import logging

from contracts.base import ErrorReply
from eventstore.store_errors import store_failure
from natsbus.errors import default_error_mapper, error_reply

__all__ = ["service_error_mapper"]

log = logging.getLogger(__name__)


def service_error_mapper(exc: Exception) -> ErrorReply:
    """The reply for what a handler raised (see the module's docstring)."""
    failure = store_failure(exc)
    if failure is None:
        return default_error_mapper(exc)
    log.warning(
        "request failed on the store",
        extra={"code": failure.code, "error_type": type(exc).__name__, "error": str(exc)[:300]},
    )
    return error_reply(failure.code, failure.message, status=failure.status)
