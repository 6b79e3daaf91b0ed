"""mcp_sync: a synchronous, thread-based client for the Model Context Protocol.

Example::

    import mcp_sync

    with mcp_sync.Client.stdio("python", ["server.py"]) as client:
        for tool in client.tools():
            print(tool.name)
        print(client.call_tool("echo", {"text": "hi"}).text)

Constants: ``__version__`` (this package's version), ``MODERN_VERSIONS`` and
``LEGACY_VERSIONS`` (the protocol revisions this client speaks, newest first,
for ``protocol_version=``), and ``USE_CLIENT_DEFAULT`` (a per-call ``timeout``
left to the client's default; ``None`` waits for ever). Example::

    client = mcp_sync.Client.stdio("python", ["server.py"], protocol_version=mcp_sync.LEGACY_VERSIONS[0])
    print(mcp_sync.__version__, client.protocol_version in mcp_sync.LEGACY_VERSIONS)

Importing this package starts no thread or process and configures no logging
(the ``mcp_sync`` logger gets a NullHandler only). Transports import their
heavy dependencies (``requests``) when first used.
"""

import logging
from typing import TYPE_CHECKING

from ._client import USE_CLIENT_DEFAULT, BoundClient, Client, ClientState
from ._connect import connect, shared
from ._llm_formats import to_anthropic_tools, to_gemini_tools, to_openai_tools
from ._protocol.handlers import apply_defaults
from ._protocol.lifecycle import LEGACY_VERSIONS, MODERN_VERSIONS
from ._protocol.subscriptions import Subscription
from ._protocol.tasks import Task
from ._threads import to_thread
from ._tool_transform import ToolFilter, ToolTransform
from ._version import __version__
from .cancellation import CancellationToken
from .exceptions import (
    AuthorizationError,
    Cancelled,
    CapabilityError,
    ClientStateError,
    ConnectionClosed,
    HandlerError,
    InputRequiredError,
    InsufficientScopeError,
    InvalidArguments,
    MCPError,
    PaginationLimitError,
    ProtocolError,
    RequestTimeout,
    ResourceNotFound,
    ServerError,
    ServerRequestError,
    ServerUnavailable,
    ServerUnreachable,
    SessionExpiredError,
    ToolError,
    ToolNotFound,
    UnsupportedProtocolVersionError,
    UrlElicitationRequiredError,
)
from .models import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    Completion,
    ContentBlock,
    DiscoverResult,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    InitializeResult,
    Listing,
    Page,
    ProgressEvent,
    Prompt,
    PromptArgument,
    PromptMessage,
    ReadResourceResult,
    RequestContext,
    Resource,
    ResourceLink,
    ResourceTemplate,
    TextContent,
    TextResourceContents,
    Tool,
)

if TYPE_CHECKING:
    from ._config import ConfigError, load_config
    from ._group import AmbiguousToolError, ClientGroup
    from .auth import FileTokenStore, OAuth, browser_authorize

logging.getLogger("mcp_sync").addHandler(logging.NullHandler())

__all__ = [
    "LEGACY_VERSIONS",
    "MODERN_VERSIONS",
    "USE_CLIENT_DEFAULT",
    "AmbiguousToolError",
    "AudioContent",
    "AuthorizationError",
    "BlobResourceContents",
    "BoundClient",
    "CallToolResult",
    "CancellationToken",
    "Cancelled",
    "CapabilityError",
    "Client",
    "ClientGroup",
    "ClientState",
    "ClientStateError",
    "Completion",
    "ConfigError",
    "ConnectionClosed",
    "ContentBlock",
    "DiscoverResult",
    "EmbeddedResource",
    "FileTokenStore",
    "GetPromptResult",
    "HandlerError",
    "ImageContent",
    "InitializeResult",
    "InputRequiredError",
    "InsufficientScopeError",
    "InvalidArguments",
    "Listing",
    "MCPError",
    "OAuth",
    "Page",
    "PaginationLimitError",
    "ProgressEvent",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "ProtocolError",
    "ReadResourceResult",
    "RequestContext",
    "RequestTimeout",
    "Resource",
    "ResourceLink",
    "ResourceNotFound",
    "ResourceTemplate",
    "ServerError",
    "ServerRequestError",
    "ServerUnavailable",
    "ServerUnreachable",
    "SessionExpiredError",
    "Subscription",
    "Task",
    "TextContent",
    "TextResourceContents",
    "Tool",
    "ToolError",
    "ToolFilter",
    "ToolNotFound",
    "ToolTransform",
    "UnsupportedProtocolVersionError",
    "UrlElicitationRequiredError",
    "__version__",
    "apply_defaults",
    "browser_authorize",
    "connect",
    "load_config",
    "shared",
    "to_anthropic_tools",
    "to_gemini_tools",
    "to_openai_tools",
    "to_thread",
]


# Loaded on first use, to keep ``import mcp_sync`` light: OAuth and its helpers (hashlib, secrets
# and the flow code are not needed by clients without it), config files and ClientGroup.
_LAZY = {
    "OAuth": "auth",
    "FileTokenStore": "auth",
    "browser_authorize": "auth",
    "ConfigError": "_config",
    "load_config": "_config",
    "AmbiguousToolError": "_group",
    "ClientGroup": "_group",
}


def __getattr__(name: str) -> object:
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    if name in ("auth", "llm"):  # ``mcp_sync.auth`` and ``mcp_sync.llm`` (modules) load on first use
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'mcp_sync' has no attribute {name!r}")
