"""Adapter slots' side outside the process (ARCHITECTURE §6; docs/design/heartbeat-runs.md):
the sandbox command line (:mod:`.sandbox`), the trusted git layout (:mod:`.layout`), worktree
ownership (:mod:`.ownership`), where a local adapter works (:mod:`.local`), the local adapter
process (:mod:`.adapter`) and the remote one (:mod:`.remote`). The pools are in
:mod:`runtime_supervisor.domain.slot_pool`, the use cases in
:mod:`runtime_supervisor.usecases.slots` and the orchestration in
:mod:`runtime_supervisor.orchestration.slots`."""
