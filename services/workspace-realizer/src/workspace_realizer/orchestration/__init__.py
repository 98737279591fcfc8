"""The orchestration of the workspace-realizer's long host work: realize, archive, reopen,
reconcile, managed clones, the terminal reaper and the recovery after a restart (the host part,
docs/design/service-shape.md, the realizer's two parts)."""
