"""Clipyard api-gateway: the HTTP edge."""
