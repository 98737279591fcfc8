"""The realizer's use cases, grouped by area; :mod:`workspace_realizer.application` joins them."""
