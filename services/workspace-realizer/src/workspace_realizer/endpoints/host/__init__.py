"""The host part's bus endpoints: execution workspaces and their operations
(docs/design/service-shape.md, the realizer's two parts)."""
