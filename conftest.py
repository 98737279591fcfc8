"""Root conftest: imports the installed ``contracts`` package before pytest collects
``contracts/tests`` (whose folder shares its name), so importlib mode never shadows it."""

import contracts  # noqa: F401
