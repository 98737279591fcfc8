"""Containment of everything a company runs: identities, resource units, the sandbox and the
launcher (docs/design/isolation.md)."""
