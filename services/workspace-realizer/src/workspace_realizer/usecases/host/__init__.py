"""The host part's use cases: execution workspaces, run leases, realization plans and claims
(docs/design/service-shape.md, the realizer's two parts)."""
