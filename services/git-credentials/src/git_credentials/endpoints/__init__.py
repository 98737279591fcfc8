"""The git-credentials' bus endpoints, one module per group (secrets; credentials)."""
