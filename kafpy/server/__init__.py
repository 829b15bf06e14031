"""One broker process: configuration, lifecycle, and (later) the socket server and request handling."""
