"""Replay verification: do read models rebuilt from the store equal the live ones?"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import msgspec
from eventsourcing.popo import POPOApplicationRecorder

from contracts.service import ReplayReport

if TYPE_CHECKING:
    from eventstore.application import ServiceApplication

__all__ = ["MAX_DIFFERENCES", "diff_plain", "verify_replay"]

MAX_DIFFERENCES = 50
"""At most this many differences are listed (then a count of the rest)."""


def _plain(value: Any) -> Any:
    return msgspec.to_builtins(value, enc_hook=repr, order="deterministic")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def diff_plain(path: str, live: Any, fresh: Any, out: list[str]) -> None:
    """Append a readable line to ``out`` for every place where ``live`` and ``fresh`` differ.

    Args:
        path: Where these values sit (``workspaces['w1'].status``).
        live: The live value (plain data).
        fresh: The rebuilt value (plain data).
        out: Collects the differences.
    """
    if isinstance(live, dict) and isinstance(fresh, dict):
        for key in sorted(set(live) | set(fresh), key=repr):
            where = f"{path}[{key!r}]"
            if key not in fresh:
                out.append(f"{where}: only in live: {_show(live[key])}")
            elif key not in live:
                out.append(f"{where}: only in rebuilt: {_show(fresh[key])}")
            else:
                diff_plain(where, live[key], fresh[key], out)
        return
    if isinstance(live, list) and isinstance(fresh, list):
        if len(live) != len(fresh):
            out.append(f"{path}: live has {len(live)} items, rebuilt has {len(fresh)}")
        for index, (a, b) in enumerate(zip(live, fresh, strict=False)):
            diff_plain(f"{path}[{index}]", a, b, out)
        return
    if live != fresh:
        out.append(f"{path}: live={_show(live)} rebuilt={_show(fresh)}")


def verify_replay(fresh_app: ServiceApplication, live_app: ServiceApplication) -> ReplayReport:
    """Compare the read models of a freshly built application with the live one's.

    ``fresh_app`` was built on the same store (its read models rebuilt at construction). With
    in-memory storage a fresh instance has a store of its own, so it replays the live one's log.

    Args:
        fresh_app: A new instance over the same store.
        live_app: The running instance.

    Returns:
        The report; ``differences`` lists every mismatch readably, model by model.
    """
    if isinstance(fresh_app.recorder, POPOApplicationRecorder) and (
        fresh_app.recorder is not live_app.recorder
    ):
        fresh_app.rebuild_read_models(live_app.recorder)
    else:
        fresh_app.catch_up()
    started = time.perf_counter()
    live = _plain(live_app.read_models())
    fresh = _plain(fresh_app.read_models())
    differences: list[str] = []
    if live_app.projected_upto != fresh_app.projected_upto:
        differences.append(
            f"positions differ: live projected up to notification {live_app.projected_upto}, "
            f"rebuilt up to {fresh_app.projected_upto}"
        )
    if fresh_app.projection_failures:
        differences.append(f"{fresh_app.projection_failures} events failed to project on rebuild")
    for name in sorted(set(live) | set(fresh)):
        if name not in fresh:
            differences.append(f"{name}: read model missing from the rebuilt instance")
        elif name not in live:
            differences.append(f"{name}: read model missing from the live instance")
        else:
            diff_plain(name, live[name], fresh[name], differences)
    if len(differences) > MAX_DIFFERENCES:
        rest = len(differences) - MAX_DIFFERENCES
        differences = [*differences[:MAX_DIFFERENCES], f"... and {rest} more differences"]
    return ReplayReport(
        service=live_app.service or live_app.name,
        ok=not differences,
        notifications_replayed=fresh_app.notifications_projected,
        read_models=sorted(set(live) | set(fresh)),
        differences=differences,
        duration_ms=round(
            fresh_app.rebuild_duration_ms + (time.perf_counter() - started) * 1000, 3
        ),
    )
