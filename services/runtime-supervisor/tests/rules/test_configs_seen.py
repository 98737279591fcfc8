"""Configuration fingerprints: what a caller read and what a copy had compare equal whatever
their form (struct or plain data, key order, none or empty)."""

from __future__ import annotations

import msgspec

from contracts.workspace_config import ExecutionWorkspaceConfig, RuntimeConfig, ServiceSpec
from runtime_supervisor.domain.configs_seen import config_fingerprint

WEB = RuntimeConfig(services=[ServiceSpec(name="web", command="npm run dev")])


def test_a_struct_and_its_plain_data_have_one_fingerprint() -> None:
    plain = msgspec.to_builtins(WEB)
    reordered = dict(reversed(list(plain.items())))
    assert config_fingerprint(WEB, RuntimeConfig) == config_fingerprint(plain, RuntimeConfig)
    assert config_fingerprint(reordered, RuntimeConfig) == config_fingerprint(WEB, RuntimeConfig)


def test_none_and_an_empty_configuration_are_the_same_and_differ_from_a_real_one() -> None:
    none = config_fingerprint(None, ExecutionWorkspaceConfig)
    assert config_fingerprint({}, ExecutionWorkspaceConfig) == none
    assert config_fingerprint(ExecutionWorkspaceConfig(), ExecutionWorkspaceConfig) == none
    own = ExecutionWorkspaceConfig(workspace_runtime=WEB)
    assert config_fingerprint(own, ExecutionWorkspaceConfig) != none
    changed = ExecutionWorkspaceConfig(provision_command="make setup")
    assert config_fingerprint(changed, ExecutionWorkspaceConfig) != config_fingerprint(
        own, ExecutionWorkspaceConfig
    )
