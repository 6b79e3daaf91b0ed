#: This package's version string. Example: ``print("mcp_sync", mcp_sync.__version__)``
__version__ = "0.1.0"
