"""Adapter slots of the runtime-supervisor (ARCHITECTURE §6; docs/design/heartbeat-runs.md): the pools
(:mod:`.pool`), slot users (:mod:`.users`), the sandbox command line (:mod:`.sandbox`), worktree
ownership (:mod:`.ownership`), the local adapter process (:mod:`.adapter`), the remote one
(:mod:`.remote`), the use cases on the store (:mod:`.usecases`) and the orchestration
(:mod:`.runtime`)."""
