"""A class moved to another module still reads the events stored under its old topic."""

from __future__ import annotations

import sys
import types

import pytest
from eventsourcing.utils import TopicError, resolve_topic

from eventstore.topics import keep_old_topics


def _module(name: str) -> types.ModuleType:
    module = types.ModuleType(name)

    class Ledger:
        class Opened:
            pass

    Ledger.__module__ = name
    module.Ledger = Ledger  # type: ignore[attr-defined]
    sys.modules[name] = module
    return module


def test_an_old_topic_resolves_in_the_module_the_class_moved_to() -> None:
    moved = _module("clipyard_topics_demo.new_home")
    keep_old_topics("clipyard_topics_demo.old_home", moved)
    assert resolve_topic("clipyard_topics_demo.old_home:Ledger.Opened") is moved.Ledger.Opened  # type: ignore[attr-defined]
    assert resolve_topic("clipyard_topics_demo.old_home:Ledger") is moved.Ledger  # type: ignore[attr-defined]


def test_an_old_topic_cannot_be_pointed_at_two_modules() -> None:
    keep_old_topics("clipyard_topics_demo.twice", _module("clipyard_topics_demo.first"))
    with pytest.raises(TopicError, match="already registered"):
        keep_old_topics("clipyard_topics_demo.twice", _module("clipyard_topics_demo.second"))
