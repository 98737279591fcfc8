"""Clipyard git-credentials: Holds encrypted company secrets and resolves git credentials per run."""

__version__ = "0.1.0"
