"""Every message that crosses a Clipyard process boundary, and the subject builders.

Depends on msgspec only. See ``contracts/README.md`` for the catalogue of subjects, event types and
error codes.
"""
