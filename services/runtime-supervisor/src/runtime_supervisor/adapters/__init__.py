"""Everything outside the supervisor's process: real processes (:mod:`.process`), their
containment (:mod:`.containment`), adapter slots' processes and git hand-overs (:mod:`.slots`),
health probes (:mod:`.health`) and operation output files (:mod:`.outputs`)."""
