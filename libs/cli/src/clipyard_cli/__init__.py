"""The clipyard command: up, status, events tail, audit, replay."""
