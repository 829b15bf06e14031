"""The network layer of a broker (Kafka's kafka.network): the socket server and its
connections, the request channel between them and the request handler, the transport
security of the listeners (channel builders) and the report of the ports bound.

It knows requests as frames and headers; what a request means is the server's business.
"""
