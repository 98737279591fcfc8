"""Service settings and the uniform service lifecycle."""
