"""Era and version: the probe, the handshake, and the ``_meta`` envelope.

This is the only module that knows how the two eras differ on the wire:

* **modern** (2026-07-28): no handshake; every request carries ``_meta`` with
  the protocol version, client info and client capabilities (E1, E2);
* **legacy** (2025-11-25 and older): ``initialize`` then
  ``notifications/initialized`` (LG1); capabilities are session-wide.

``mode="auto"`` follows the stdio backward-compatibility rules (D1, section 4
of the checklist): probe with ``server/discover``; a DiscoverResult means
modern; ``-32022`` naming a modern revision we speak means modern at that
revision (one retry); ``-32022`` naming only legacy revisions (or none) means
the handshake; ``-32022`` naming neither raises
:class:`~mcp_sync.UnsupportedProtocolVersionError`; any other error or
silence within ``probe_timeout`` means legacy. The fallback is never keyed to
one error code.

Choice (the spec is silent): some servers lock their era per process once they
have seen ``server/discover``, and some die on it. So when the handshake after
a failed probe fails too, or the probe killed the process, the server is
started afresh (when the transport can be restarted) and ``initialize`` is
sent first.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping

import attrs

from ._engine import Engine
from .exceptions import (
    ConnectionClosed,
    MCPError,
    ProtocolError,
    RequestTimeout,
    ServerError,
    UnsupportedProtocolVersionError,
)
from .models import DiscoverResult, InitializeResult

log = logging.getLogger("mcp_sync")

#: Modern protocol revisions this client speaks (no handshake), newest first.
#: Example: ``mcp_sync.Client.http(url, mode="modern", protocol_version=mcp_sync.MODERN_VERSIONS[0])``
MODERN_VERSIONS: tuple[str, ...] = ("2026-07-28",)
#: Legacy protocol revisions this client speaks (``initialize`` handshake), newest first.
#: Example: ``mcp_sync.Client.stdio("python", ["server.py"], protocol_version=mcp_sync.LEGACY_VERSIONS[0])``
LEGACY_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_MODERN = MODERN_VERSIONS[0]
LATEST_LEGACY = LEGACY_VERSIONS[0]

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"

MODES = ("auto", "modern", "legacy")

#: Starts the server afresh and returns an engine on it (stdio restart).
Restart = Callable[[], Engine]


@attrs.define
class Negotiated:
    """What the connection settled on. Replaced whole on reconnect, never half-written."""

    era: str
    protocol_version: str
    server_capabilities: dict[str, Any]
    server_implementation: dict[str, Any] | None
    instructions: str | None
    server_info: dict[str, Any]


@attrs.define
class Lifecycle:
    """Builds the envelope and runs the era decision over an engine.

    ``capabilities(era)`` returns the client capabilities for that era (they
    follow the registered handlers, so they are asked each time).
    """

    mode: str
    protocol_version: str | None
    client_info: dict[str, Any]
    capabilities: Callable[[str], dict[str, Any]]
    probe_timeout: float | None
    log_level: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {self.mode!r}")
        version = self.protocol_version
        if version is not None and version not in MODERN_VERSIONS + LEGACY_VERSIONS:
            raise ValueError(f"unknown protocol_version {version!r}; known: {MODERN_VERSIONS + LEGACY_VERSIONS}")
        if version in LEGACY_VERSIONS and self.mode == "modern":
            raise ValueError(f"mode='modern' contradicts the legacy protocol_version {version!r}")
        if version in MODERN_VERSIONS and self.mode == "legacy":
            raise ValueError(f"mode='legacy' contradicts the modern protocol_version {version!r}")

    # -- the envelope ------------------------------------------------------------------

    def meta(self, version: str) -> dict[str, Any]:
        """The ``_meta`` a modern request carries (E1, E2, W1)."""
        meta: dict[str, Any] = {
            META_PROTOCOL_VERSION: version,
            META_CLIENT_INFO: self.client_info,
            META_CLIENT_CAPABILITIES: self.capabilities("modern"),
        }
        if self.log_level is not None:
            meta[META_LOG_LEVEL] = self.log_level
        return meta

    def params(
        self,
        negotiated: Negotiated,
        params: dict[str, Any] | None,
        meta: dict[str, Any] | None,
        extensions: Mapping[str, Any] | None = None,
    ) -> dict:
        """Request params for the negotiated era: modern requests get the envelope,
        merged over the caller's ``meta`` (the envelope's keys win), declaring
        ``extensions`` on top of the client-wide capabilities for this request."""
        out = dict(params) if params else {}
        if negotiated.era == "modern":
            envelope = self.meta(negotiated.protocol_version)
            if extensions:
                capabilities = dict(envelope[META_CLIENT_CAPABILITIES])
                capabilities["extensions"] = {**capabilities.get("extensions", {}), **extensions}
                envelope[META_CLIENT_CAPABILITIES] = capabilities
            out["_meta"] = {**(meta or {}), **envelope}
        elif meta:
            out["_meta"] = dict(meta)
        return out

    # -- connecting ----------------------------------------------------------------------

    def connect(self, engine: Engine, *, timeout: float | None, restart: Restart | None) -> tuple[Engine, Negotiated]:
        """Decide the era on ``engine``; returns the engine in use (a restart makes a new one)."""
        if self.mode == "legacy" or self.protocol_version in LEGACY_VERSIONS:
            return engine, self._handshake(engine, self.protocol_version or LATEST_LEGACY, timeout)
        version = self.protocol_version or LATEST_MODERN
        probe_timeout = timeout if self.mode == "modern" else self.probe_timeout
        try:
            return engine, self._discover(engine, version, probe_timeout)
        except UnsupportedProtocolVersionError as exc:
            # V1: retry once with a mutual modern revision, even the one just sent (a server
            # may reject a first request and list that very version: retry, do not give up)
            modern = [v for v in MODERN_VERSIONS if v in exc.supported]
            legacy = [v for v in LEGACY_VERSIONS if v in exc.supported]
            if modern:
                return engine, self._discover(engine, modern[0], probe_timeout)
            if self.mode == "modern" or not legacy:
                raise
            return self._handshake_after_probe(engine, legacy[0], timeout, restart)
        except _NotModern as exc:
            if self.mode == "modern":
                raise ProtocolError(
                    f"mode='modern' but the server did not answer server/discover as a "
                    f"{LATEST_MODERN} server: {exc.cause}"
                ) from exc.cause
            log.debug("mcp_sync: probe says legacy (%s); falling back to initialize", exc.cause)
            return self._handshake_after_probe(engine, LATEST_LEGACY, timeout, restart)

    def _discover(self, engine: Engine, version: str, timeout: float | None) -> Negotiated:
        try:
            raw = engine.request(
                "server/discover", {"_meta": self.meta(version)}, timeout=timeout, cancel_on_timeout=False
            )
        except UnsupportedProtocolVersionError:
            raise
        except (ServerError, RequestTimeout, ProtocolError, ConnectionClosed) as exc:
            raise _NotModern(exc) from exc
        result = DiscoverResult.from_wire(raw)
        if raw.get("resultType", "complete") != "complete":
            raise _NotModern(ProtocolError(f"server/discover answered resultType {raw.get('resultType')!r}"))
        if not result.supported_versions:  # D2: required; a bare {} is a legacy server answering anything
            raise _NotModern(ProtocolError("server/discover answered without supportedVersions"))
        mutual = [v for v in MODERN_VERSIONS if v in result.supported_versions]
        if result.supported_versions and not mutual:
            supported = result.supported_versions
            raise UnsupportedProtocolVersionError(
                -32022,
                f"no mutually supported modern version; server supports {supported}",
                {"supported": supported},
                method="server/discover",
            )
        return Negotiated(
            era="modern",
            protocol_version=version if version in result.supported_versions or not mutual else mutual[0],
            server_capabilities=result.capabilities,
            server_implementation=result.server_info,
            instructions=result.instructions,
            server_info=raw,
        )

    def _handshake_after_probe(
        self, engine: Engine, version: str, timeout: float | None, restart: Restart | None
    ) -> tuple[Engine, Negotiated]:
        if not engine.alive and restart is not None:  # the probe killed it: start afresh
            engine = restart()
            return engine, self._handshake(engine, version, timeout)
        try:
            return engine, self._handshake(engine, version, timeout)
        except UnsupportedProtocolVersionError:
            raise
        except (ServerError, ConnectionClosed, ProtocolError) as exc:
            if restart is None:
                raise
            log.info("mcp_sync: handshake after the probe failed (%s); restarting the server", exc)
            engine.close("restarting the server for the initialize handshake")
            engine = restart()
            return engine, self._handshake(engine, version, timeout)

    def _handshake(self, engine: Engine, version: str, timeout: float | None) -> Negotiated:
        params = {
            "protocolVersion": version,
            "capabilities": self.capabilities("legacy"),
            "clientInfo": self.client_info,
        }
        # LG1: initialize must not be cancelled, so a timeout does not cancel it on the wire.
        raw = engine.request("initialize", params, timeout=timeout, cancel_on_timeout=False)
        result = InitializeResult.from_wire(raw)
        if result.protocol_version not in LEGACY_VERSIONS:
            engine.close("unsupported protocol version")
            raise UnsupportedProtocolVersionError(
                -32022,
                f"the server answered initialize with protocol version {result.protocol_version!r}, "
                f"which this client does not speak (it speaks {list(LEGACY_VERSIONS + MODERN_VERSIONS)})",
                {"supported": [result.protocol_version], "requested": version},
                method="initialize",
            )
        engine.notify("notifications/initialized")
        return Negotiated(
            era="legacy",
            protocol_version=result.protocol_version,
            server_capabilities=result.capabilities,
            server_implementation=result.server_info,
            instructions=result.instructions,
            server_info=raw,
        )


class _NotModern(MCPError):
    """Internal: the probe's outcome says the server is not modern."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause
