"""What the heartbeat-controller reaches outside its process: the other services over the bus
(:mod:`.bus`), as the ports of the orchestration declare them."""
