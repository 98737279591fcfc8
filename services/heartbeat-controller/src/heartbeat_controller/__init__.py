"""Clipyard heartbeat-controller: Orchestrates heartbeat-driven agent runs through their six stages."""

__version__ = "0.1.0"
