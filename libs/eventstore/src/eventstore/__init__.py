"""Event-store wiring for eventsourcing, outbox relay to JetStream, inbox consumers."""
