"""Who may see and touch which agent and run: the one access model (``servicekit.access``,
ARCHITECTURE §5.1), re-exported for the use cases.

Another company's agent or run is *not found* (existence is not revealed); the admin and Clipyard
itself, acting for no company, reach every company. Inside the company the board may do
everything. An agent key reads only its agent and that agent's runs, wakes only its agent (for no
issue, or an issue assigned to it or bound to its run), cancels only its agent's runs and never
creates, updates or deletes agents (*forbidden*). A run token is narrower still: it reads and
cancels only its own run, lists only that run, and wakes its agent only for the run's issue (or
no issue). Whether a principal is an agent key or a run token is decided by its kind
(``Access.kind``), never by what else it carries.

The run a request acts for (``X-Run-Id``, alias ``X-Paperclip-Run-Id``, in ``principal.run_id``)
is recorded as the cause of what it changes. The gateway checks it only for run tokens (their own
run); for every other key the controller, which owns runs, checks it before anything is saved
(``UseCaseBase._check_acting_run``): a run of the principal's company (else *not found*, naming
the header) and, for an agent key, of its agent (else *forbidden*, ``Access.check_run``).
"""

from __future__ import annotations

from servicekit.access import Access, AccessDeniedError, NotVisibleError

__all__ = ["Access", "AccessDeniedError", "NotVisibleError"]
