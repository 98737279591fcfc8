"""The realizer's bus endpoints, one class per aggregate; :mod:`workspace_realizer.app` mounts them
(the host part's are in ``host/``)."""
