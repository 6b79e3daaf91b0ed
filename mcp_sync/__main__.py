"""``python -m mcp_sync``: the ``mcp-sync`` command line (see :mod:`mcp_sync._cli`)."""

from ._cli import entry_point

if __name__ == "__main__":
    entry_point()
