"""Replay verification: do read models rebuilt from the store equal the live ones?

The rebuild can take a while, and the live application's store thread serves every request of the
service, so the work is split: :func:`snapshot_read_models` is the only step on the store thread (a
plain copy of the live read models and their position); :func:`replay_to` (the fresh instance
catching up to exactly that position) and :func:`compare_read_models` run on any other thread.

Reports never show secret material (ARCHITECTURE §2): values of private fields and keys that are
secrets (hashes) are shown as ``<redacted>``, per the live application's privacy policy
(:mod:`eventstore.privacy`); a difference is located by its path and aggregate ids.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
from eventsourcing.popo import POPOApplicationRecorder

from contracts.service import ReplayReport
from eventstore.privacy import REDACTED, PrivacyPolicy, looks_like_digest, privacy_of

if TYPE_CHECKING:
    from eventsourcing.persistence import ApplicationRecorder

    from eventstore.application import ServiceApplication

__all__ = [
    "MAX_DIFFERENCES",
    "LiveSnapshot",
    "compare_read_models",
    "diff_plain",
    "replay_to",
    "snapshot_read_models",
    "verify_replay",
]

MAX_DIFFERENCES = 50
"""At most this many differences are listed (then a count of the rest)."""

_PRIVATE_VALUE = "(private value)"


def _plain(value: Any) -> Any:
    return msgspec.to_builtins(value, enc_hook=repr, order="deterministic")


def _show(value: Any, policy: PrivacyPolicy) -> str:
    if looks_like_digest(value):
        return REDACTED
    text = repr(policy.redact(value))
    return text if len(text) <= 120 else text[:117] + "..."


def diff_plain(
    path: str,
    live: Any,
    fresh: Any,
    out: list[str],
    privacy: PrivacyPolicy | None = None,
    *,
    private_keys: bool = False,
) -> None:
    """Append a readable line to ``out`` for every place where ``live`` and ``fresh`` differ.

    Args:
        path: Where these values sit (``workspaces['w1'].status``).
        live: The live value (plain data).
        fresh: The rebuilt value (plain data).
        out: Collects the differences.
        privacy: Which fields are private (the defaults when None): their values are never shown.
        private_keys: The keys of this dictionary are secrets (``keys_by_hash``): never shown.
    """
    policy = privacy or PrivacyPolicy()
    if isinstance(live, dict) and isinstance(fresh, dict):
        for key in sorted(set(live) | set(fresh), key=repr):
            hidden = private_keys or looks_like_digest(key)
            where = f"{path}[{REDACTED}]" if hidden else f"{path}[{key!r}]"
            if policy.is_private(key):
                if key not in fresh:
                    out.append(f"{where}: only in live {_PRIVATE_VALUE}")
                elif key not in live:
                    out.append(f"{where}: only in rebuilt {_PRIVATE_VALUE}")
                elif live[key] != fresh[key]:
                    out.append(f"{where}: live and rebuilt differ {_PRIVATE_VALUE}")
            elif key not in fresh:
                out.append(f"{where}: only in live: {_show(live[key], policy)}")
            elif key not in live:
                out.append(f"{where}: only in rebuilt: {_show(fresh[key], policy)}")
            else:
                diff_plain(where, live[key], fresh[key], out, policy)
        return
    if isinstance(live, list) and isinstance(fresh, list):
        if len(live) != len(fresh):
            out.append(f"{path}: live has {len(live)} items, rebuilt has {len(fresh)}")
        for index, (a, b) in enumerate(zip(live, fresh, strict=False)):
            diff_plain(f"{path}[{index}]", a, b, out, policy)
        return
    if live != fresh:
        out.append(f"{path}: live={_show(live, policy)} rebuilt={_show(fresh, policy)}")


@dataclass(frozen=True)
class LiveSnapshot:
    """The live read models as plain data, and the notification they are projected up to."""

    service: str
    projected_upto: int
    read_models: dict[str, object]
    privacy: PrivacyPolicy


def snapshot_read_models(live_app: ServiceApplication) -> LiveSnapshot:
    """Copy the live read models (run this on the store thread: it is quick).

    Args:
        live_app: The running instance.

    Returns:
        A plain copy, its position and the application's privacy policy.
    """
    return LiveSnapshot(
        service=live_app.service or live_app.name,
        projected_upto=live_app.projected_upto,
        read_models=_plain(live_app.read_models()),
        privacy=privacy_of(live_app),
    )


def replay_to(
    fresh_app: ServiceApplication, upto: int, source: ApplicationRecorder | None = None
) -> float:
    """Project into ``fresh_app`` the notifications after its position, up to ``upto`` included.

    Args:
        fresh_app: A new instance (its read models rebuilt from its store at construction).
        upto: The live instance's position: stop there, so both describe the same log.
        source: Where to read (the live instance's in-memory recorder); its own store by default.

    Returns:
        Milliseconds spent.
    """
    started = time.perf_counter()
    recorder = source or fresh_app.recorder
    while fresh_app.projected_upto < upto:
        notifications = recorder.select_notifications(
            start=fresh_app.projected_upto,
            limit=fresh_app.projection_batch_size,
            stop=upto,
            inclusive_of_start=False,
        )
        if not notifications:
            break
        for notification in notifications:
            domain_event = fresh_app.mapper.to_domain_event(notification)
            fresh_app._project_one(domain_event, notification.id)
    return (time.perf_counter() - started) * 1000


def compare_read_models(
    live: LiveSnapshot, fresh_app: ServiceApplication, *, extra_ms: float = 0.0
) -> ReplayReport:
    """Compare a snapshot of the live read models with a fresh instance's (any thread).

    Args:
        live: The live snapshot.
        fresh_app: The fresh instance, replayed up to the snapshot's position.
        extra_ms: Time already spent replaying, added to the report's duration.

    Returns:
        The report; ``differences`` lists every mismatch readably, model by model, without
        secret values.
    """
    started = time.perf_counter()
    fresh = _plain(fresh_app.read_models())
    policy = live.privacy
    differences: list[str] = []
    if live.projected_upto != fresh_app.projected_upto:
        differences.append(
            f"positions differ: live projected up to notification {live.projected_upto}, "
            f"rebuilt up to {fresh_app.projected_upto}"
        )
    if fresh_app.projection_failures:
        differences.append(f"{fresh_app.projection_failures} events failed to project on rebuild")
    models = live.read_models
    for name in sorted(set(models) | set(fresh)):
        if name not in fresh:
            differences.append(f"{name}: read model missing from the rebuilt instance")
        elif name not in models:
            differences.append(f"{name}: read model missing from the live instance")
        else:
            diff_plain(
                name,
                models[name],
                fresh[name],
                differences,
                policy,
                private_keys=policy.has_private_keys(name),
            )
    if len(differences) > MAX_DIFFERENCES:
        rest = len(differences) - MAX_DIFFERENCES
        differences = [*differences[:MAX_DIFFERENCES], f"... and {rest} more differences"]
    return ReplayReport(
        service=live.service,
        ok=not differences,
        notifications_replayed=fresh_app.notifications_projected,
        read_models=sorted(set(models) | set(fresh)),
        differences=differences,
        duration_ms=round(
            fresh_app.rebuild_duration_ms + extra_ms + (time.perf_counter() - started) * 1000, 3
        ),
    )


def verify_replay(fresh_app: ServiceApplication, live_app: ServiceApplication) -> ReplayReport:
    """Compare the read models of a freshly built application with the live one's, in one call.

    ``fresh_app`` was built on the same store (its read models rebuilt at construction). With
    in-memory storage a fresh instance has a store of its own, so it replays the live one's log.
    Services split this into steps so that only the snapshot runs on the store thread
    (``servicekit``); this one-call form is for tests and tools holding both instances.

    Args:
        fresh_app: A new instance over the same store.
        live_app: The running instance.

    Returns:
        The report; ``differences`` lists every mismatch readably, model by model.
    """
    source: ApplicationRecorder | None = None
    if isinstance(fresh_app.recorder, POPOApplicationRecorder) and (
        fresh_app.recorder is not live_app.recorder
    ):
        fresh_app.rebuild_read_models(live_app.recorder)
        source = live_app.recorder
    live = snapshot_read_models(live_app)
    spent = replay_to(fresh_app, live.projected_upto, source)
    return compare_read_models(live, fresh_app, extra_ms=spent)
