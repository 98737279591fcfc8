"""The gateway's HTTP plumbing around the controllers: authentication and the access guard
(:mod:`.security`), the input guard, error mapping (:mod:`.errors`), the OpenAPI document's
strictness and its ``Allow`` index, the ``/api`` and security headers, tracing, the dependencies
handlers receive, and the embedded HTTP server."""
