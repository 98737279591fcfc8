"""What the gateway reaches outside its process: the bus (:mod:`.bus`, the real ``Bus`` port of
:mod:`api_gateway.http.dependencies`)."""
