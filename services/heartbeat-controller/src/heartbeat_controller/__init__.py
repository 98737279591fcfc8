"""Clipyard heartbeat-controller service."""
