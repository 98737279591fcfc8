"""Pytest plugin: real nats-server and PostgreSQL, service processes, span recorder."""
