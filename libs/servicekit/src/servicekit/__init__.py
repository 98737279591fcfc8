"""Service settings and the uniform service lifecycle."""

from servicekit.endpoints import NotFoundError, register_common_endpoints
from servicekit.lifecycle import run_service, start_service
from servicekit.settings import NatsSettings, ServiceSettings, SettingsError
from servicekit.spec import InboxHandler, ServiceRuntime, ServiceSpec

__all__ = [
    "InboxHandler",
    "NatsSettings",
    "NotFoundError",
    "ServiceRuntime",
    "ServiceSettings",
    "ServiceSpec",
    "SettingsError",
    "register_common_endpoints",
    "run_service",
    "start_service",
]
