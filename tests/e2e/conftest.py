"""End-to-end tests use the ``stack`` fixture of ``tests/conftest.py``."""
