"""Clipyard runtime-supervisor service."""
