"""The endpoints' hooks are coroutines; plain functions work too."""

from __future__ import annotations

from heartbeat_controller.endpoints.common import call_hook


async def test_plain_and_async_hooks_are_both_called() -> None:
    seen: list[object] = []

    def plain(run_ids: list[str]) -> None:
        seen.append(("plain", run_ids))

    async def awaited(run_ids: list[str]) -> None:
        seen.append(("async", run_ids))

    await call_hook(plain, ["r1"])
    await call_hook(awaited, ["r2"])
    await call_hook(None, ["r3"])
    assert seen == [("plain", ["r1"]), ("async", ["r2"])]
