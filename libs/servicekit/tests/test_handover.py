"""A hook handed from ``register`` to inbox handlers that may run first: they wait for it."""

from __future__ import annotations

import threading
import time

import pytest

from servicekit.handover import HandOver


def test_a_handler_waits_for_the_hook_then_gets_it() -> None:
    hooks: HandOver[str] = HandOver("the hook")
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(hooks.get(timeout=5)))
    reader.start()
    time.sleep(0.05)
    assert got == []  # still waiting
    hooks.set("ready")
    reader.join(5)
    assert got == ["ready"]


def test_a_hook_never_handed_over_is_an_error_naming_it() -> None:
    with pytest.raises(RuntimeError, match="the orchestration is not ready yet"):
        HandOver[str]("the orchestration").get(timeout=0.01)
