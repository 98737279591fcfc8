"""The rotation policy: its settings (a bad value names the variable) and the kept files' names."""

from __future__ import annotations

from pathlib import Path

import pytest

from telemetry.rotation import (
    DEFAULT_LOG_ROTATION,
    DEFAULT_SPANS_ROTATION,
    MIB,
    Rotation,
    backup_path,
    kept_files,
    rotation_from_env,
)


def test_the_defaults_are_10_and_20_mib_with_5_backups() -> None:
    assert (DEFAULT_LOG_ROTATION.max_bytes, DEFAULT_LOG_ROTATION.backups) == (10 * MIB, 5)
    assert (DEFAULT_SPANS_ROTATION.max_bytes, DEFAULT_SPANS_ROTATION.backups) == (20 * MIB, 5)


def test_unset_or_empty_variables_take_the_default() -> None:
    default = Rotation(max_bytes=100, backups=3)
    assert rotation_from_env({}, "CLIPYARD_LOG", default) == default
    empty = {"CLIPYARD_LOG_MAX_BYTES": "", "CLIPYARD_LOG_BACKUPS": " "}
    assert rotation_from_env(empty, "CLIPYARD_LOG", default) == default


def test_whole_numbers_are_read() -> None:
    env = {"CLIPYARD_SPANS_MAX_BYTES": "4096", "CLIPYARD_SPANS_BACKUPS": "0"}
    assert rotation_from_env(env, "CLIPYARD_SPANS", DEFAULT_SPANS_ROTATION) == Rotation(4096, 0)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CLIPYARD_LOG_MAX_BYTES", "0"),
        ("CLIPYARD_LOG_MAX_BYTES", "-5"),
        ("CLIPYARD_LOG_MAX_BYTES", "10MB"),
        ("CLIPYARD_LOG_MAX_BYTES", "1.5"),
        ("CLIPYARD_LOG_MAX_BYTES", "²"),
        ("CLIPYARD_LOG_BACKUPS", "-1"),
        ("CLIPYARD_LOG_BACKUPS", "many"),
    ],
)
def test_a_bad_value_names_the_variable_and_the_default(name: str, value: str) -> None:
    with pytest.raises(ValueError, match=name) as caught:
        rotation_from_env({name: value}, "CLIPYARD_LOG", DEFAULT_LOG_ROTATION)
    assert "unset it for" in str(caught.value)
    assert "invalid literal" not in str(caught.value)


def test_a_policy_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        Rotation(max_bytes=0, backups=1)
    with pytest.raises(ValueError, match="backups"):
        Rotation(max_bytes=1, backups=-1)


def test_kept_files_are_listed_oldest_first(tmp_path: Path) -> None:
    live = tmp_path / "spans.jsonl"
    assert kept_files(live) == []
    for index in (1, 2, 10):
        backup_path(live, index).write_text(str(index))
    (tmp_path / "spans.jsonl.lock").write_text("")
    (tmp_path / "spans.jsonl.x").write_text("")
    (tmp_path / "spans.jsonl.01").write_text("")
    assert kept_files(live) == [backup_path(live, 10), backup_path(live, 2), backup_path(live, 1)]
    live.write_text("")
    assert kept_files(live)[-1] == live
    assert kept_files(tmp_path / "missing" / "spans.jsonl") == []
