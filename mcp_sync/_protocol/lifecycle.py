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
:class:`~mcp_sync.UnsupportedProtocolVersionError`; any other error means
legacy. The fallback is never keyed to one error code.

Silence is not an answer: a server slow to start (``npx`` on a cold cache)
must not be taken for legacy. After ``probe_timeout`` the probe stays open and
``initialize`` is sent alongside; a DiscoverResult arriving late still means
modern, and ``-32022`` to ``initialize`` naming a modern revision we speak
means modern at that revision. A connect that fails says what the probe found.

Choice (the spec is silent): some servers lock their era per process once they
have seen ``server/discover``, and some die on it. So when the handshake after
a failed probe fails too, or the probe killed the process, the server is
started afresh (when the transport can be restarted) and ``initialize`` is
sent first.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Mapping

import attrs

from .._engine import Engine
from .._threads import spawn
from .._values import copy_json
from ..cancellation import CancellationToken
from ..exceptions import (
    ConnectionClosed,
    MCPError,
    ProtocolError,
    RequestTimeout,
    ServerError,
    UnsupportedProtocolVersionError,
)
from ..models import DiscoverResult, InitializeResult
from ..transports.base import EncodedObject

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
#: How long an abandoned probe's thread is given to tell the server (its write has its own bound).
ABANDON_WAIT_S = 1.0

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
    #: legacy: the client capabilities declared at ``initialize`` (session-wide: LG1); modern: empty
    client_capabilities: dict[str, Any] = attrs.field(factory=dict)
    #: Where the server's capabilities come from: ``"fetched"`` (a ``server/discover`` or
    #: ``initialize`` answer on this connection), ``"given"`` (the caller's earlier DiscoverResult)
    #: or ``"unknown"`` (pinned to a modern revision: nothing was asked; the server decides each request).
    discovered: str = "fetched"


def legacy_capabilities(capabilities: dict[str, Any], version: str) -> dict[str, Any]:
    """LG13: only what ``version`` has. Elicitation came with 2025-06-18; URL
    elicitation, sampling with tools and tasks with 2025-11-25."""
    out = dict(capabilities)
    if version < "2025-11-25":
        out.pop("tasks", None)
        if isinstance(out.get("sampling"), dict):
            out["sampling"] = {k: v for k, v in out["sampling"].items() if k != "tools"}
        if isinstance(out.get("elicitation"), dict):
            out["elicitation"] = {k: v for k, v in out["elicitation"].items() if k != "url"}
    if version < "2025-06-18":
        out.pop("elicitation", None)
    return out


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
    #: A server's earlier ``server/discover`` answer (its raw dict), given by the caller: no probe
    discovered: dict[str, Any] | None = None
    #: (version, log level, client info), capabilities, the envelope made from them (see meta)
    _envelope: Any = attrs.field(default=None, init=False, repr=False, eq=False)

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
        if self.discovered is not None:
            if self.mode == "legacy" or version in LEGACY_VERSIONS:
                raise ValueError("a DiscoverResult (discover_result=) is from a modern server: it contradicts "
                                 "mode='legacy' and a legacy protocol_version")
            try:
                self._from_discover(self.discovered, version or LATEST_MODERN, "given")
            except (_NotModern, UnsupportedProtocolVersionError) as exc:
                cause = exc.cause if isinstance(exc, _NotModern) else exc
                raise ValueError(f"discover_result is not a DiscoverResult this client can use: {cause}") from None

    # -- the envelope ------------------------------------------------------------------

    def meta(self, version: str) -> dict[str, Any]:
        """The ``_meta`` a modern request carries (E1, E2, W1).

        Built and encoded once, then reused while the version, capabilities (asked each time:
        they follow the handlers) and log level stay the same (the client info is fixed when
        the client is made): every modern request carries it. Read-only (an
        :class:`~mcp_sync.transports.base.EncodedObject`).
        """
        capabilities = self.capabilities("modern")  # the same dict until a handler changes
        made = self._envelope
        if made is not None and made[0] is version and made[1] is self.log_level and made[2] is capabilities:
            return made[3]  # (compared by identity: an equal but new value only builds it once more)
        meta: dict[str, Any] = {
            META_PROTOCOL_VERSION: version,
            META_CLIENT_INFO: self.client_info,
            META_CLIENT_CAPABILITIES: capabilities,
        }
        if self.log_level is not None:
            meta[META_LOG_LEVEL] = self.log_level
        envelope = EncodedObject(copy_json(meta))  # its own copy: nothing else can change it
        self._envelope = (version, self.log_level, capabilities, envelope)
        return envelope

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
                envelope = {**envelope, META_CLIENT_CAPABILITIES: capabilities}
            out["_meta"] = {**meta, **envelope} if meta else envelope  # the envelope as it is: sent pre-encoded
        elif meta:
            out["_meta"] = dict(meta)
        return out

    # -- connecting ----------------------------------------------------------------------

    def connect(self, engine: Engine, *, timeout: float | None, restart: Restart | None) -> tuple[Engine, Negotiated]:
        """Decide the era on ``engine``; returns the engine in use (a restart makes a new one).

        A failure says what the probe found (its outcome is added to the message).
        ``timeout`` bounds the whole connect: the probe, the handshake and a restart
        share the one deadline (a server that never answers fails after ``timeout``,
        not after ``probe_timeout`` plus ``timeout`` plus a restart).

        No probe when the caller already knows (issue #31.6). Calling ``server/discover`` is
        optional: the 2026-07-28 specification, basic/versioning.mdx, "Protocol Version
        Negotiation": clients "MAY call it before sending any other requests ... but are not
        required to: a client is free to invoke any RPC inline and handle
        UnsupportedProtocolVersionError"; server/discover.mdx, "When to Call": "Calling
        server/discover is optional for clients"; basic/transports/stdio.mdx, "Backward
        Compatibility": "A client that only supports modern versions does not need to probe".
        So a client given the server's earlier DiscoverResult takes what it says (the version
        chosen from its ``supportedVersions``), and one pinned to a modern revision
        (``protocol_version="2026-07-28"``) is such a modern-only client: it connects without
        sending anything, and each request carries the pinned version inline (a server that
        does not speak it answers -32022). Its capabilities are unknown until asked
        (:meth:`Session.known`): nothing is refused on their account, the server decides.
        """
        budget = _Budget(timeout)
        if self.mode == "legacy" or self.protocol_version in LEGACY_VERSIONS:
            return engine, self._handshake(engine, self.protocol_version or LATEST_LEGACY, budget)
        version = self.protocol_version or LATEST_MODERN
        if self.discovered is not None:
            return engine, self._from_discover(self.discovered, version, "given")
        if self.protocol_version in MODERN_VERSIONS:
            return engine, Negotiated(
                era="modern", protocol_version=version, server_capabilities={}, server_implementation=None,
                instructions=None, server_info={}, discovered="unknown",
            )
        if self.mode == "modern":
            try:
                return engine, self._modern(engine, version, budget)
            except _NotModern as exc:
                raise ProtocolError(
                    f"mode='modern' but the server did not answer server/discover as a "
                    f"{LATEST_MODERN} server: {exc.cause}"
                ) from exc.cause
        return self._auto(engine, version, budget, restart)

    def _modern(self, engine: Engine, version: str, budget: _Budget) -> Negotiated:
        """``server/discover`` at ``version``; a -32022 naming a mutual modern revision: once more at it.

        V1: retry even with the version just sent (a server may reject a first
        request and list that very version: retry, do not give up)."""
        try:
            return self._discover(engine, version, budget)
        except UnsupportedProtocolVersionError as exc:
            modern = _mutual(exc.supported, MODERN_VERSIONS)
            if not modern:
                raise
            return self._discover(engine, modern[0], budget)

    def _auto(
        self, engine: Engine, version: str, budget: _Budget, restart: Restart | None
    ) -> tuple[Engine, Negotiated]:
        """D1: probe with ``server/discover``, then decide (see the module docstring).

        The probe stays open after ``probe_timeout``: a server slow to start
        (``npx`` on a cold cache) answers it late, and a late DiscoverResult still
        means modern. So silence only sends ``initialize`` alongside, and whichever
        answer decides first wins.
        """
        probe = _InFlight(engine, "server/discover", {"_meta": self.meta(version)}, budget)
        waited = budget.within(self.probe_timeout)
        if not probe.wait(waited):
            note = f"server/discover probe: no answer within {waited:.3g} s" if waited else "no answer"
            return self._race(engine, probe, version, budget, restart, note)
        try:
            return engine, self._modern_from(engine, probe, version, budget)
        except UnsupportedProtocolVersionError as exc:
            legacy = _mutual(exc.supported, LEGACY_VERSIONS)
            if exc.supported and not legacy:  # lists revisions, none of which we speak
                raise
            note = _probe_note(exc)
            return self._handshake_after_probe(engine, (legacy or [LATEST_LEGACY])[0], budget, restart, note)
        except _NotModern as exc:
            cause = exc.cause
            if isinstance(cause, ConnectionClosed) and cause.unread_input:
                # It exited without reading the probe: it exits at start, whatever it is sent.
                # Starting it again would only fail the same way (and run it twice).
                raise cause from None
            log.debug("mcp_sync: probe says legacy (%s); falling back to initialize", cause)
            note = _probe_note(cause)
            return self._handshake_after_probe(engine, LATEST_LEGACY, budget, restart, note)

    def _modern_from(self, engine: Engine, probe: _InFlight, version: str, budget: _Budget) -> Negotiated:
        """The probe's settled outcome as a modern connection; _NotModern when it says legacy."""
        error = probe.error
        if error is None:
            return self._from_discover(probe.value, version)
        if isinstance(error, UnsupportedProtocolVersionError):
            modern = _mutual(error.supported, MODERN_VERSIONS)
            if not modern:
                raise error
            return self._discover(engine, modern[0], budget)
        if isinstance(error, (ServerError, RequestTimeout, ProtocolError, ConnectionClosed)):
            raise _NotModern(error) from error
        raise error

    def _race(
        self, engine: Engine, probe: _InFlight, version: str, budget: _Budget, restart: Restart | None, note: str
    ) -> tuple[Engine, Negotiated]:
        """The probe is silent so far: send ``initialize`` too and take the first answer that decides.

        A DiscoverResult (even late) means modern; an InitializeResult means
        legacy; ``-32022`` to ``initialize`` listing a modern revision we speak
        means modern at that revision (a modern server that was only slow to
        start, e.g. one that locked its era on our probe)."""
        log.debug("mcp_sync: %s; sending initialize while the probe stays open", note)
        try:
            return self._race_to_decision(engine, probe, version, budget, restart, note)
        except _NotModern as exc:  # a modern answer, then a failed modern retry: say what failed
            raise _with_note(exc.cause, note) from exc.cause

    def _race_to_decision(
        self, engine: Engine, probe: _InFlight, version: str, budget: _Budget, restart: Restart | None, note: str
    ) -> tuple[Engine, Negotiated]:
        params = self._initialize_params(LATEST_LEGACY)
        init = _InFlight(engine, "initialize", params, budget, changed=probe.changed)
        probe_failed: BaseException | None = None
        while True:
            probe.changed.clear()
            if probe.done and probe_failed is None:
                if probe.error is None:
                    try:
                        return engine, self._from_discover(probe.value, version)
                    except _NotModern as exc:
                        probe_failed = exc.cause
                elif isinstance(probe.error, UnsupportedProtocolVersionError) and _mutual(
                    probe.error.supported, MODERN_VERSIONS
                ):
                    return engine, self._modern_from(engine, probe, version, budget)
                else:
                    probe_failed = probe.error
            if init.done:
                error = init.error
                if error is None:
                    negotiated = self._finish_handshake(engine, init.value, LATEST_LEGACY, params["capabilities"])
                    probe.abandon()  # legacy: stop waiting for the probe (the server is told)
                    return engine, negotiated
                if isinstance(error, UnsupportedProtocolVersionError):
                    modern = _mutual(error.supported, MODERN_VERSIONS)
                    if modern:
                        log.debug("mcp_sync: initialize answered -32022 naming %s: the server is modern", modern[0])
                        probe.abandon()  # a new server/discover at that revision decides (the server is told)
                        return engine, _noted(self._modern, note)(engine, modern[0], budget)
                if probe_failed is not None:
                    note = _probe_note(probe_failed)
                    return self._retry_handshake(engine, error, LATEST_LEGACY, budget, restart, note)
                # the probe may still answer: wait for it (its own deadline bounds this)
            probe.changed.wait()  # each request's own timeout (the connect's deadline) bounds this

    def _handshake_after_probe(
        self, engine: Engine, version: str, budget: _Budget, restart: Restart | None, note: str
    ) -> tuple[Engine, Negotiated]:
        if not engine.alive and restart is not None:  # the probe killed it: start afresh
            engine = restart()
            return engine, _noted(self._handshake, note)(engine, version, budget)
        try:
            return engine, _noted(self._handshake, note)(engine, version, budget)
        except MCPError as exc:
            return self._retry_handshake(engine, exc, version, budget, restart, note)

    def _retry_handshake(
        self,
        engine: Engine,
        error: BaseException,
        version: str,
        budget: _Budget,
        restart: Restart | None,
        note: str,
    ) -> tuple[Engine, Negotiated]:
        """The handshake after a failed probe failed: some servers lock their era on the
        probe, so start the server afresh and send ``initialize`` first (when we can)."""
        if isinstance(error, UnsupportedProtocolVersionError) and error.method != "initialize":
            raise _with_note(error, note)  # pragma: no cover - both callers pass an initialize error
        if restart is None or not isinstance(error, (ServerError, ConnectionClosed, ProtocolError)):
            raise _with_note(error, note)
        if isinstance(error, UnsupportedProtocolVersionError) and not _mutual(error.supported, LEGACY_VERSIONS):
            raise _with_note(error, note)
        log.info("mcp_sync: handshake after the probe failed (%s); restarting the server", error)
        engine.close("restarting the server for the initialize handshake")
        engine = restart()
        return engine, _noted(self._handshake, note)(engine, version, budget)

    def _discover(self, engine: Engine, version: str, budget: _Budget) -> Negotiated:
        try:
            raw = budget.request(engine, "server/discover", {"_meta": self.meta(version)})
        except UnsupportedProtocolVersionError:
            raise
        except (ServerError, RequestTimeout, ProtocolError, ConnectionClosed) as exc:
            raise _NotModern(exc) from exc
        return self._from_discover(raw, version)

    def _from_discover(self, raw: dict[str, Any], version: str, source: str = "fetched") -> Negotiated:
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
            protocol_version=version if version in result.supported_versions else mutual[0],
            server_capabilities=result.capabilities,
            server_implementation=result.server_info,
            instructions=result.instructions,
            server_info=raw,
            discovered=source,
        )

    def _initialize_params(self, version: str) -> dict[str, Any]:
        capabilities = legacy_capabilities(self.capabilities("legacy"), version)
        return {"protocolVersion": version, "capabilities": capabilities, "clientInfo": self.client_info}

    def _handshake(self, engine: Engine, version: str, budget: _Budget) -> Negotiated:
        # LG1: initialize must not be cancelled, so a timeout does not cancel it on the wire.
        params = self._initialize_params(version)
        raw = budget.request(engine, "initialize", params)
        return self._finish_handshake(engine, raw, version, params["capabilities"])

    def _finish_handshake(
        self, engine: Engine, raw: dict[str, Any], version: str, capabilities: dict[str, Any]
    ) -> Negotiated:
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
            client_capabilities=capabilities,
        )


class _InFlight:
    """One request sent on its own thread, so the connect can wait on several at once.

    ``changed`` is set when it settles (shared between requests racing each other).
    The thread ends when the answer comes, the request times out, or the engine closes.
    """

    def __init__(
        self,
        engine: Engine,
        method: str,
        params: dict[str, Any],
        budget: _Budget,
        *,
        changed: threading.Event | None = None,
    ) -> None:
        self.changed = changed or threading.Event()
        self._token = CancellationToken()
        self.value: dict[str, Any] = {}
        self.error: BaseException | None = None
        self._done = threading.Event()

        def run() -> None:
            try:
                self.value = budget.request(engine, method, params, cancel=self._token)
            except BaseException as exc:  # handed to the connecting thread
                self.error = exc
            finally:
                self._done.set()
                self.changed.set()

        spawn(run, "connect", engine.name)

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None) -> bool:
        return self._done.wait(timeout)

    def abandon(self) -> None:
        """No longer wanted: cancel it (on the wire too), which ends its thread.

        The request's own thread writes ``notifications/cancelled`` once it wakes; waiting here
        (ABANDON_WAIT_S at most) for it to end makes the server hear of it before the connect
        goes on, and before a ``close()`` right after it (which would drop an unsent notice:
        seen on a loaded machine)."""
        self._token.cancel("the protocol era was decided without it")
        self._done.wait(ABANDON_WAIT_S)


def _mutual(supported: list[str], ours: tuple[str, ...]) -> list[str]:
    """Our revisions (newest first) that ``supported`` lists."""
    return [v for v in ours if v in supported]


class _Budget:
    """What is left of a connect's one deadline (no deadline when the timeout is None)."""

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self.deadline = None if timeout is None else time.monotonic() + timeout

    def request(
        self, engine: Engine, method: str, params: dict[str, Any], cancel: CancellationToken | None = None
    ) -> dict[str, Any]:
        """``engine.request`` within what is left; a timeout names the connect's whole deadline."""
        try:
            return engine.request(method, params, timeout=self.left(), cancel_on_timeout=False, cancel=cancel)
        except RequestTimeout as exc:  # keep what the engine added (the server's last stderr lines)
            _first, newline, rest = exc.message.partition("\n")
            exc.message = f"{method}: no answer within {self.timeout:g} s{newline}{rest}"
            exc.args = (exc.message, *exc.args[1:])
            raise

    def left(self) -> float | None:
        """Seconds left (at least a millisecond, so a request still fails by itself), or None."""
        return None if self.deadline is None else max(self.deadline - time.monotonic(), 0.001)

    def within(self, seconds: float | None) -> float | None:
        """``seconds``, cut to what is left."""
        left = self.left()
        if seconds is None:
            return left
        return seconds if left is None else min(seconds, left)


def _probe_note(error: BaseException) -> str:
    """What the era probe found, for an error message: ``server/discover probe: <outcome>``."""
    text = str(error).replace(" (server/discover)", "")
    return "server/discover probe: " + text.removeprefix("server/discover: ")


def _with_note(error: BaseException, note: str) -> BaseException:
    """Add ``note`` (what the era probe found) to an MCPError's message, in place (not when the
    probe found the very same thing: a message says each thing once)."""
    if isinstance(error, MCPError) and note not in error.message and not note.endswith(error.message):
        error.message = f"{error.message} ({note})"
        error.args = (error.message, *error.args[1:])
    return error


def _noted(function: Callable[..., Negotiated], note: str) -> Callable[..., Negotiated]:
    """``function`` whose MCPErrors carry ``note``."""

    def call(*args: Any) -> Negotiated:
        try:
            return function(*args)
        except MCPError as exc:
            _with_note(exc, note)
            raise

    return call


class _NotModern(MCPError):
    """Internal: the probe's outcome says the server is not modern."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause
