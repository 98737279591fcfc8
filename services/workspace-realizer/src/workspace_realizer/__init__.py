"""Clipyard workspace-realizer service."""
