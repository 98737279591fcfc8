"""The base of the runtime-supervisor's company-owned aggregates (:class:`eventstore.CompanyScoped`)."""

from __future__ import annotations

from eventstore import CompanyScoped

__all__ = ["CompanyScoped"]
