"""What a transport declares beyond the Transport methods (transports/base.py): the defaults
mean "no", and an object that does not derive from BaseTransport declares nothing."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_sync.transports.base import BaseTransport, declared


class Minimal(BaseTransport):
    name = "minimal"

    def start(self, sink: Any) -> None: ...

    def send(self, message: dict, *, headers: Any = None) -> None: ...

    def abort(self, request_id: Any) -> bool:
        return False

    def configure(self, **_: Any) -> None: ...

    def close(self) -> None: ...


class Undeclared:
    """A transport of one's own that does not derive from BaseTransport."""


def test_the_defaults_declare_nothing() -> None:
    for transport in (Minimal(), declared(Undeclared())):
        assert not (transport.inline_sends or transport.bounded_writes or transport.per_request_headers
                    or transport.mirrors_param_headers)
        assert transport.pid is None and transport.notification_stream is None
        assert transport.diagnostics() == "" and transport.auth_context is None


def test_send_inline_exists_only_where_declared() -> None:
    with pytest.raises(NotImplementedError, match="Minimal declares no inline sends"):
        Minimal().send_inline({"jsonrpc": "2.0", "id": 1, "method": "ping"})

