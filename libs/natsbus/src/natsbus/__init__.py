"""NATS plumbing: connect, micro services with task handlers, typed requests, JetStream."""
