"""Clipyard workspace-realizer: Realizes git worktrees for issues, owns projects, project workspaces, issues and execution workspaces."""

__version__ = "0.1.0"
