"""The supervisor's long work: starting, watching and stopping runtime service instances, jobs
and runtime control (:mod:`.control`, :mod:`.actions`), runs' leases and idle timers, adoption
after a restart, egress accounting, and adapter slots (:mod:`.slots`)."""
