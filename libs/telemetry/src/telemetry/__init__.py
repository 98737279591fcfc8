"""Tracing, W3C context propagation over NATS and HTTP, structured logs."""
