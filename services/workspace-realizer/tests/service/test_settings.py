"""The realizer's own settings: which part a process serves (``CLIPYARD_REALIZER_PART``)."""

from __future__ import annotations

import pytest

from servicekit import SettingsError
from workspace_realizer.settings import load_realizer_settings


@pytest.mark.parametrize(
    ("raw", "company", "host"),
    [(None, True, True), ("both", True, True), ("company", True, False), (" Host ", False, True)],
)
def test_a_process_serves_the_parts_it_is_told(raw: str | None, company: bool, host: bool) -> None:
    env = {} if raw is None else {"CLIPYARD_REALIZER_PART": raw}
    settings = load_realizer_settings(env)
    assert (settings.serves_company, settings.serves_host) == (company, host)


def test_an_unknown_part_is_refused_naming_the_parts() -> None:
    with pytest.raises(SettingsError, match=r"use both .* company .* host"):
        load_realizer_settings({"CLIPYARD_REALIZER_PART": "catalog"})
