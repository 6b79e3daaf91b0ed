"""The session layer: everything that knows the protocol above the engine.

It decides the era and the version, builds ``_meta``, connects, restarts and
renews sessions, drives ``input_required`` rounds, caches results, answers the
server's requests through the client's handlers, hosts tasks, keeps
subscriptions and walks pages. It is the only code (with the HTTP transports'
wire shapes) that knows how the eras differ. It imports the engine and the
ground floor, never the facade (:mod:`mcp_sync._client`), and holds no strong
reference to a :class:`~mcp_sync.Client`.
"""
