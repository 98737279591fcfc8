"""Clipyard git-credentials service."""
