"""The orchestration of adapter slots: grant, launch, kill, release, restart recovery."""
