"""The base of the workspace-realizer's company-owned aggregates (:class:`eventstore.CompanyScoped`)."""

from __future__ import annotations

from eventstore import CompanyScoped

__all__ = ["CompanyScoped"]
