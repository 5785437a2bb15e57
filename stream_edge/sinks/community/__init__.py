"""Community sinks of the v3 API that the edge implements: the file sink."""
