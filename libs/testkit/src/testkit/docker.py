"""Whether a Docker engine answers (then testcontainers is used, else local binaries).

``CLIPYARD_TESTKIT_DOCKER`` overrides the detection: ``auto`` (default), ``never`` (always the
local binaries) or ``always`` (fail when no engine answers).
"""

from __future__ import annotations

import functools
import gc
import os
import warnings
from pathlib import Path

__all__ = ["DOCKER_MODE_VAR", "docker_available"]

DOCKER_MODE_VAR = "CLIPYARD_TESTKIT_DOCKER"
_DEFAULT_SOCKET = Path("/var/run/docker.sock")


def _mode() -> str:
    mode = os.environ.get(DOCKER_MODE_VAR, "auto").strip().lower() or "auto"
    if mode not in {"auto", "never", "always"}:
        msg = f"{DOCKER_MODE_VAR} must be auto, never or always, not {mode!r}"
        raise ValueError(msg)
    return mode


@functools.cache
def docker_available() -> bool:
    """Tell whether a Docker engine answers a ping (checked once per test session).

    ``docker.from_env()`` only looks at ``DOCKER_HOST`` and the default socket, so when neither
    exists the (slow) import and ping are skipped.

    Returns:
        True when the engine answered.

    Raises:
        RuntimeError: ``CLIPYARD_TESTKIT_DOCKER=always`` and no engine answered.
    """
    mode = _mode()
    if mode == "never":
        return False
    if mode == "auto" and not os.environ.get("DOCKER_HOST") and not _DEFAULT_SOCKET.exists():
        return False
    with warnings.catch_warnings():
        # docker-py leaks its socket when the engine does not answer: once the failed client is
        # unreachable (after _ping returns), collect it here, where the ResourceWarning is ignored
        warnings.simplefilter("ignore", ResourceWarning)
        answered, failure = _ping()
        gc.collect()
    if not answered and mode == "always":
        msg = f"{DOCKER_MODE_VAR}=always but no Docker engine answered: {failure}"
        raise RuntimeError(msg)
    return answered


def _ping() -> tuple[bool, str | None]:
    try:
        import docker

        client = docker.from_env(timeout=2)
        try:
            return bool(client.ping()), None
        finally:
            client.close()
    except Exception as error:
        return False, str(error)
