"""The realizer's bus endpoints, by area; :mod:`workspace_realizer.handlers` registers them."""
