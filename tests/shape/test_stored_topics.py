"""A store written before the services were reshaped still replays: every topic its events and
snapshots carry (``tests/shape/stored_topics.txt``) resolves to a class, through
``eventstore.topics.keep_old_topics`` where the class moved."""

from __future__ import annotations

import importlib
from pathlib import Path

from eventsourcing.utils import TopicError, resolve_topic

LISTED = Path(__file__).with_name("stored_topics.txt")


def _topics() -> list[str]:
    lines = LISTED.read_text().splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def test_every_stored_topic_still_resolves_to_a_class() -> None:
    topics = _topics()
    for package in sorted({topic.split(".", 1)[0] for topic in topics}):
        importlib.import_module(f"{package}.application")  # what a service imports to read
    unresolved = []
    for topic in topics:
        try:
            found = resolve_topic(topic)
        except TopicError as error:
            unresolved.append(f"{topic}: {error}")
            continue
        if not isinstance(found, type):
            unresolved.append(f"{topic}: resolves to {found!r}, not a class")
    assert unresolved == [], "stored topics that no longer resolve:\n" + "\n".join(unresolved)


def test_the_list_covers_every_service() -> None:
    services = {topic.split(".", 1)[0] for topic in _topics()}
    assert services == {
        "api_gateway",
        "git_credentials",
        "heartbeat_controller",
        "runtime_supervisor",
        "workspace_realizer",
    }
