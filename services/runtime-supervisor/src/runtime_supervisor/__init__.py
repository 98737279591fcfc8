"""Clipyard runtime-supervisor: Supervises runtime services, jobs and adapter slots in their own process groups."""

__version__ = "0.1.0"
