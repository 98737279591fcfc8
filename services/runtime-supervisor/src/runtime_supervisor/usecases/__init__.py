"""Use cases of the runtime-supervisor, grouped by what they change; each runs on the store's
thread, a few lines: check, load, one aggregate command, save."""
