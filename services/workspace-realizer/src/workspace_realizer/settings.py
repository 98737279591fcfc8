"""Settings of the workspace-realizer, read once at start (ARCHITECTURE §8)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from servicekit import ServiceSettings, SettingsError

__all__ = [
    "PARTS",
    "SERVICE_NAME",
    "RealizerSettings",
    "load_realizer_settings",
    "load_settings",
    "parse_duration",
]

SERVICE_NAME = "workspace-realizer"

PARTS = ("both", "company", "host")
"""What a realizer process serves (``CLIPYARD_REALIZER_PART``, docs/scale-out.md): ``both`` (one
process, the single-node stack), ``company`` (the company-wide part: any number of replicas) or
``host`` (the host part: one per node)."""

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(name: str, raw: str | None, default: timedelta) -> timedelta:
    """A duration from ``604800``, ``90s``, ``30m``, ``12h``, ``7d`` or ``1w``.

    Raises:
        SettingsError: Naming the variable and the accepted forms.
    """
    if raw is None or not raw.strip():
        return default
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", raw)
    if match is None:
        raise SettingsError(
            f"{name}={raw!r} is not a duration; use seconds or a number with s, m, h, d or w "
            "(for example 7d)"
        )
    return timedelta(seconds=float(match[1]) * _UNITS.get(match[2] or "s", 1))


@dataclass(frozen=True, kw_only=True)
class RealizerSettings:
    """The common service settings plus the realizer's own."""

    service: ServiceSettings
    reaper_cooldown: timedelta = timedelta(days=7)
    """``CLIPYARD_REAPER_COOLDOWN``: how long a source issue stays terminal before the reaper may
    archive its delivered, clean workspace (default 7 days)."""
    reaper_interval: float = 300.0
    """``CLIPYARD_REAPER_INTERVAL``: seconds between reaper rounds (default 300)."""
    command_timeout: float = 600.0
    """``CLIPYARD_COMMAND_TIMEOUT``: seconds a provision, cleanup or teardown command may run."""
    part: str = "both"
    """``CLIPYARD_REALIZER_PART``: one of :data:`PARTS` (default ``both``)."""
    pool_size: int = 0
    """``CLIPYARD_WORKTREE_POOL_SIZE``: pre-warmed worktrees per project workspace (default 0,
    no pool: each costs a full checkout of disk)."""
    pool_refresh: float = 60.0
    """``CLIPYARD_WORKTREE_POOL_REFRESH``: seconds between the pool's checks that a base moved."""
    pool_min_free_mb: int = 2048
    """``CLIPYARD_WORKTREE_POOL_MIN_FREE_MB``: the pool makes no worktree on a filesystem with
    less free space (default 2048)."""

    def __post_init__(self) -> None:
        if self.part not in PARTS:
            raise SettingsError(
                f"CLIPYARD_REALIZER_PART={self.part!r} is not a part of the realizer; use both "
                "(one process, the default), company (the company-wide part, any number of "
                "replicas) or host (the host part, one per node)"
            )

    @property
    def serves_company(self) -> bool:
        """Whether this process serves the company-wide part."""
        return self.part in ("both", "company")

    @property
    def serves_host(self) -> bool:
        """Whether this process serves the host part of its node."""
        return self.part in ("both", "host")


def load_settings(env: Mapping[str, str] | None = None) -> ServiceSettings:
    """The service's settings from ``env`` (default: the process environment)."""
    return ServiceSettings.from_env(SERVICE_NAME, env)


def load_realizer_settings(env: Mapping[str, str] | None = None) -> RealizerSettings:
    """All of the realizer's settings from ``env`` (default: the process environment)."""
    source = os.environ if env is None else env
    interval = parse_duration(
        "CLIPYARD_REAPER_INTERVAL", source.get("CLIPYARD_REAPER_INTERVAL"), timedelta(seconds=300)
    )
    timeout = parse_duration(
        "CLIPYARD_COMMAND_TIMEOUT", source.get("CLIPYARD_COMMAND_TIMEOUT"), timedelta(seconds=600)
    )
    part = (source.get("CLIPYARD_REALIZER_PART") or "both").strip().lower()
    return RealizerSettings(
        service=load_settings(env),
        part=part,
        reaper_cooldown=parse_duration(
            "CLIPYARD_REAPER_COOLDOWN", source.get("CLIPYARD_REAPER_COOLDOWN"), timedelta(days=7)
        ),
        reaper_interval=max(interval.total_seconds(), 1.0),
        command_timeout=max(timeout.total_seconds(), 1.0),
        pool_size=_count("CLIPYARD_WORKTREE_POOL_SIZE", source, 0),
        pool_refresh=parse_duration(
            "CLIPYARD_WORKTREE_POOL_REFRESH",
            source.get("CLIPYARD_WORKTREE_POOL_REFRESH"),
            timedelta(seconds=60),
        ).total_seconds(),
        pool_min_free_mb=_count("CLIPYARD_WORKTREE_POOL_MIN_FREE_MB", source, 2048),
    )


def _count(name: str, source: Mapping[str, str], default: int) -> int:
    """A whole number of at least 0 from ``source[name]`` (``default`` when unset)."""
    raw = (source.get(name) or "").strip()
    if not raw:
        return default
    if not raw.isdigit():
        raise SettingsError(f"{name}={raw!r} is not a whole number; use 0 or more (for example 2)")
    return int(raw)
