"""The realizer's own settings: which part a process serves (``CLIPYARD_REALIZER_PART``), the
worktree pool's size, refresh and free-space floor."""

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


def test_the_worktree_pool_is_off_unless_sized_and_its_settings_are_read() -> None:
    off = load_realizer_settings({})
    assert (off.pool_size, off.pool_refresh, off.pool_min_free_mb) == (0, 60.0, 2048)
    on = load_realizer_settings(
        {
            "CLIPYARD_WORKTREE_POOL_SIZE": "3",
            "CLIPYARD_WORKTREE_POOL_REFRESH": "2m",
            "CLIPYARD_WORKTREE_POOL_MIN_FREE_MB": "512",
        }
    )
    assert (on.pool_size, on.pool_refresh, on.pool_min_free_mb) == (3, 120.0, 512)


@pytest.mark.parametrize("raw", ["-1", "two", "1.5"])
def test_a_pool_size_that_is_not_a_whole_number_is_refused(raw: str) -> None:
    with pytest.raises(SettingsError, match=r"CLIPYARD_WORKTREE_POOL_SIZE=.* use 0 or more"):
        load_realizer_settings({"CLIPYARD_WORKTREE_POOL_SIZE": raw})
