"""The OAuth flow's HTTP and URL rules at their edges: a metadata URL redirecting in a loop
within its origin, a body in an encoding that was not offered or corrupt, names that do not
resolve or cannot be encoded, a port out of range (the SSRF guard still judges the host), and
the Protected Resource Metadata locations of a server at the root of its origin."""

from __future__ import annotations

import socket
from typing import Any

import pytest

import mcp_sync
from mcp_sync._oauth_flow import PRM_PATH, Http, UrlPolicy, host_kinds, prm_candidates

from httpkit import FakeServer, Reply, Request

pytestmark = pytest.mark.timeout(20)
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"


def get_json(server: FakeServer, path: str) -> Any:
    http = Http(5.0)
    try:
        return http.get_json(f"http://127.0.0.1:{server.port}{path}")
    finally:
        http.close()


def test_a_redirect_loop_within_the_origin_ends_after_three_redirects() -> None:
    with FakeServer("modern") as server:
        server.override = lambda request: Reply(302, {"Location": "/.well-known/again"}, b"")
        with pytest.raises(mcp_sync.AuthorizationError, match="more than 3 redirects") as caught:
            get_json(server, PRM_PATH)
        assert caught.value.step == "discovery" and caught.value.url == f"http://127.0.0.1:{server.port}/.well-known/again"
        assert [r.path for r in server.seen()] == [PRM_PATH] + ["/.well-known/again"] * 3


@pytest.mark.parametrize(
    ("encoding", "body", "message"),
    [
        ("br", b"\x8b\x00\x80{}\x03", "unsupported Content-Encoding 'br'"),  # offered: gzip, deflate only
        ("gzip", GZIP_HEADER + b"\xff" * 8, "the gzip body is corrupt"),  # no valid deflate block
    ],
)
def test_a_body_that_cannot_be_decoded_is_refused(encoding: str, body: bytes, message: str) -> None:
    def answer(request: Request) -> Reply:
        return Reply(200, {"Content-Type": "application/json", "Content-Encoding": encoding}, body)

    with FakeServer("modern") as server:
        server.override = answer
        with pytest.raises(mcp_sync.AuthorizationError) as caught:
            get_json(server, PRM_PATH)
    assert caught.value.step == "discovery" and f"the answer to GET: {message}" in str(caught.value)


def test_names_that_do_not_resolve_are_no_kind_of_address() -> None:
    """Nothing to judge: the policy lets the request fail on its own (a refusal would blame the guard)."""

    def nxdomain(host: str, port: int, *args: Any) -> Any:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    assert host_kinds("auth.example.invalid", 443, nxdomain) == set()
    assert host_kinds("x" * 64 + ".example.com", 443) == set()  # a label IDNA cannot encode: UnicodeError
    policy = UrlPolicy("https://mcp.example.com/mcp", resolve=nxdomain)
    assert policy.check("https://auth.example.invalid/token", "token") == "https://auth.example.invalid/token"


def test_a_port_out_of_range_does_not_get_past_the_address_check() -> None:
    def public(host: str, port: int, *args: Any) -> Any:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port))]

    policy = UrlPolicy("https://mcp.example.com:99999/mcp", resolve=public)  # (its own port is malformed too)
    assert policy.server_kinds == {"public"}
    with pytest.raises(mcp_sync.AuthorizationError, match="on a private address") as caught:
        policy.check("https://10.0.0.1:99999/token", "token")
    assert caught.value.step == "token"


@pytest.mark.parametrize("server_url", ["https://mcp.example.com", "https://mcp.example.com/"])
def test_a_server_at_the_root_has_one_metadata_location(server_url: str) -> None:
    assert prm_candidates(server_url, None) == [f"https://mcp.example.com{PRM_PATH}"]
    header = "https://mcp.example.com/meta"
    assert prm_candidates(server_url, header) == [header, f"https://mcp.example.com{PRM_PATH}"]
