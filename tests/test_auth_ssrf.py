"""SSRF guards on the URLs a server advertises (issue #12.5): HTTPS only (loopback HTTP for a
loopback MCP server), no loopback, link-local or private target unless the MCP server is on
that kind of address, bounded answers, no cross-origin redirect.

Every refusal is proven under a socket-level guard that fails any connect to a non-loopback
address, so even a wrong client could not reach the link-local or private targets named here:
the test then sees both the refusal's own message and an empty list of blocked connects."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any, Callable, Iterator

import pytest
from oauthkit import World, follow

import mcp_sync
from mcp_sync._oauth_flow import UrlPolicy, address_kind

from httpkit import FakeServer, Reply, Request, json_reply

pytestmark = pytest.mark.timeout(20)

FAKE_DNS = {  # names the guard's resolver knows; nothing here is ever looked up for real
    "internal.corp.example": "10.9.8.7",
    "metadata.example": "169.254.169.254",
    "split.example": ["93.184.216.34", "10.0.0.9"],
    "mcp.example.com": "93.184.216.34",
    "auth.example.com": "93.184.216.35",
}


def _loopback(host: Any) -> bool:
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return str(host) == "localhost"


@pytest.fixture
def blocked(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every attempt to connect to a non-loopback address: refused here, and recorded."""
    attempts: list[Any] = []
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_create, real_getaddrinfo = socket.create_connection, socket.getaddrinfo

    def check(address: Any) -> None:
        if isinstance(address, tuple) and not _loopback(address[0]):
            attempts.append(address)
            raise ConnectionRefusedError(f"test guard: no connection to {address} leaves this machine")

    def connect(self: socket.socket, address: Any) -> None:
        check(address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        check(address)
        return real_connect_ex(self, address)

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        host = address[0]
        if str(host) in FAKE_DNS or not _loopback(host):
            attempts.append(address)
            raise ConnectionRefusedError(f"test guard: no connection to {address} leaves this machine")
        return real_create(address, *args, **kwargs)

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        if host in FAKE_DNS:
            addresses = FAKE_DNS[host]
            addresses = [addresses] if isinstance(addresses, str) else addresses
            return [
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port or 443)) for address in addresses
            ]
        return real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "create_connection", create_connection)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield attempts


def challenge_with(world: World, resource_metadata: str) -> Callable[[Request], Reply | None]:
    def answer(request: Request) -> Reply | None:
        if request.method == "POST" and not request.headers.get("authorization"):
            return Reply(401, {"WWW-Authenticate": f'Bearer resource_metadata="{resource_metadata}"'}, b"")
        return World.resource(world, request)

    return answer


def refused(world: World, oauth: mcp_sync.OAuth | None = None) -> mcp_sync.AuthorizationError:
    client = mcp_sync.Client.http(world.rs.url, auth=oauth or mcp_sync.OAuth(on_authorize=follow, timeout=3),
                                  mode="modern", timeout=10)
    try:
        with pytest.raises(mcp_sync.AuthorizationError) as caught:
            client.connect()
    finally:
        client.close()
    return caught.value


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://10.0.0.7/.well-known/oauth-protected-resource", "plain-HTTP"),
        ("https://169.254.169.254/latest/meta-data/", "link-local"),
        ("https://10.0.0.7/.well-known/oauth-protected-resource", "private"),
        ("https://internal.corp.example/prm", "private"),  # a name that resolves to a private address
        ("https://split.example/prm", "private"),  # one public and one private address: refused
        ("https://[fd00::1]/prm", "private"),
        ("https://[::ffff:10.0.0.7]/prm", "private"),
        ("https://0.0.0.0/prm", "forbidden"),
    ],
)
def test_advertised_resource_metadata_url_is_refused(
    world: World, blocked: list[Any], url: str, reason: str, no_leaks: None
) -> None:
    world.rs.override = challenge_with(world, url)
    error = refused(world)
    assert reason in str(error) and error.step == "discovery" and error.url == url.split("?")[0]
    assert blocked == []  # refused before any connect


def test_advertised_authorization_server_is_refused(world: World, blocked: list[Any], no_leaks: None) -> None:
    def prm(request: Request) -> Reply | None:
        if request.method == "GET" and request.path == "/.well-known/oauth-protected-resource/mcp":
            return json_reply({"resource": world.rs.url, "authorization_servers": ["https://metadata.example"]})
        return World.resource(world, request)

    world.rs.override = prm
    error = refused(world)
    assert "link-local" in str(error) and error.step == "discovery" and "metadata.example" in str(error.url)
    assert blocked == [] and not world.auth.seen()


@pytest.mark.parametrize(
    ("field", "url", "step"),
    [
        ("registration_endpoint", "https://[fd12:3456::1]/register", "registration"),
        ("token_endpoint", "https://internal.corp.example/token", "token"),
    ],
)
def test_endpoints_in_authorization_server_metadata_are_refused(
    world: World, blocked: list[Any], field: str, url: str, step: str, no_leaks: None
) -> None:
    def metadata(request: Request) -> Reply | None:
        reply = World.authorization(world, request)
        if request.path == world.metadata_path and reply is not None:
            import json

            meta = json.loads(reply.body)  # type: ignore[arg-type]
            meta[field] = url
            return json_reply(meta)
        return reply

    world.auth.override = metadata
    error = refused(world)
    assert "private" in str(error) and error.step == step and error.url == url
    assert blocked == [] and not world.calls("token")


def test_cross_origin_redirect_of_metadata_is_refused(world: World, blocked: list[Any], no_leaks: None) -> None:
    with FakeServer("modern") as elsewhere:

        def redirect(request: Request) -> Reply | None:
            if request.method == "GET" and request.path.startswith("/.well-known/"):
                return Reply(302, {"Location": f"http://127.0.0.1:{elsewhere.port}/prm"})
            return World.resource(world, request)

        world.rs.override = redirect
        error = refused(world)
        assert "another origin" in str(error) and error.step == "discovery"
        assert not elsewhere.seen()


def test_same_origin_redirect_of_metadata_is_followed(world: World, blocked: list[Any], no_leaks: None) -> None:
    def redirect(request: Request) -> Reply | None:
        if request.method == "GET" and request.path == "/.well-known/oauth-protected-resource/mcp":
            return Reply(307, {"Location": "/moved/prm"})
        if request.method == "GET" and request.path == "/moved/prm":
            return json_reply({"resource": world.rs.url, "authorization_servers": [world.issuer]})
        return World.resource(world, request)

    world.rs.override = redirect
    with mcp_sync.Client.http(world.rs.url, auth=mcp_sync.OAuth(on_authorize=follow), mode="modern") as client:
        client.connect()
    assert blocked == []


def test_oversized_metadata_is_refused(world: World, blocked: list[Any], no_leaks: None) -> None:
    def huge(request: Request) -> Reply | None:
        if request.method == "GET" and request.path.startswith("/.well-known/"):
            return Reply(200, {"Content-Type": "application/json"}, [b'{"pad": "' + b"x" * 65536] * 40)
        return World.resource(world, request)

    world.rs.override = huge
    error = refused(world)
    assert "exceeds" in str(error) and error.step == "discovery"


# -- the policy itself, for servers this machine cannot host (public, private) -------------------------


def resolver(host: str, port: int, *args: Any) -> list[Any]:
    addresses = FAKE_DNS[host]
    addresses = [addresses] if isinstance(addresses, str) else addresses
    return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in addresses]


@pytest.mark.parametrize(
    ("server", "target", "allowed"),
    [
        ("https://mcp.example.com/mcp", "https://auth.example.com/.well-known/x", True),
        ("https://mcp.example.com/mcp", "http://auth.example.com/token", False),  # HTTPS only
        ("https://mcp.example.com/mcp", "http://127.0.0.1:9000/token", False),  # loopback HTTP: loopback servers only
        ("https://mcp.example.com/mcp", "https://localhost/token", False),
        ("https://mcp.example.com/mcp", "https://10.0.0.5/token", False),
        ("https://mcp.example.com/mcp", "https://169.254.169.254/", False),
        ("https://mcp.example.com/mcp", "ftp://auth.example.com/", False),
        ("https://mcp.example.com/mcp", "http://mcp.example.com/.well-known/x", False),  # a downgrade
        ("http://10.0.0.5/mcp", "http://10.0.0.5/.well-known/x", True),  # the server's own origin
        ("https://10.0.0.5/mcp", "https://10.0.0.6/token", True),  # same kind of address
        ("https://10.0.0.5/mcp", "https://169.254.1.1/token", False),
        ("https://10.0.0.5/mcp", "https://127.0.0.1/token", False),
        ("http://127.0.0.1:8000/mcp", "http://localhost:9000/token", True),
        ("http://127.0.0.1:8000/mcp", "https://10.0.0.5/token", False),
        ("http://127.0.0.1:8000/mcp", "https://auth.example.com/token", True),
    ],
)
def test_policy(server: str, target: str, allowed: bool) -> None:
    policy = UrlPolicy(server, resolve=resolver)
    if allowed:
        assert policy.check(target, "token") == target
    else:
        with pytest.raises(mcp_sync.AuthorizationError) as caught:
            policy.check(target, "token")
        assert caught.value.step == "token"


def test_address_kinds() -> None:
    assert [address_kind(a) for a in ("127.0.0.2", "::1", "10.1.1.1", "192.168.0.1", "172.16.0.1", "fd00::5")] == [
        "loopback", "loopback", "private", "private", "private", "private",
    ]
    assert [address_kind(a) for a in ("169.254.169.254", "fe80::1", "::ffff:169.254.1.1")] == ["link-local"] * 3
    assert [address_kind(a) for a in ("0.0.0.0", "224.0.0.1", "::")] == ["forbidden"] * 3
    assert [address_kind(a) for a in ("93.184.216.34", "2606:4700::1111")] == ["public", "public"]


def test_dns_rebinding_is_refused_on_the_connected_address(monkeypatch: pytest.MonkeyPatch, no_leaks: None) -> None:
    """A name that is public when the policy looks it up and loopback when the connection looks it
    up again (DNS rebinding): the connected address is checked, and refused before a byte is sent."""
    from mcp_sync._oauth_flow import Http

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(5)
    port = listener.getsockname()[1]
    received: list[bytes] = []

    def accept() -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(2)
            chunks = []
            try:
                while chunk := conn.recv(4096):
                    chunks.append(chunk)
            except OSError:
                pass
            received.append(b"".join(chunks))

    import threading

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    public = {"mcp.example.com": "93.184.216.34", "rebind.example": "93.184.216.40"}

    def resolve_for_policy(host: str, port: Any, *args: Any) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (public[host], port))]

    real_getaddrinfo = socket.getaddrinfo
    lookups: list[str] = []

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        if host == "rebind.example":  # the connection's own lookup: now it says loopback
            lookups.append(host)
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        return real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    http = Http(3, UrlPolicy("https://mcp.example.com/mcp", resolve=resolve_for_policy))
    url = f"https://rebind.example:{port}/.well-known/oauth-authorization-server"
    try:
        with pytest.raises(mcp_sync.AuthorizationError) as caught:
            http.get_json(url)
    finally:
        http.close()
        thread.join(5)
        listener.close()
    message = str(caught.value)
    assert "connection to 127.0.0.1" in message and "loopback" in message and "SSRF guard" in message, message
    assert caught.value.step == "discovery" and lookups == ["rebind.example"]
    assert received == [b""]  # connected, then closed: not even a TLS hello was sent


def test_through_a_proxy_the_name_check_alone_applies(no_leaks: None) -> None:
    """Through a proxy the connected address is the proxy's (here loopback), which says nothing about
    the target: the request goes to the proxy instead of being refused as a loopback connection."""
    import threading

    from mcp_sync._oauth_flow import Http

    proxy = socket.socket()
    proxy.bind(("127.0.0.1", 0))
    proxy.listen(4)
    proxy.settimeout(5)
    first_lines: list[bytes] = []

    def serve() -> None:
        try:
            conn, _ = proxy.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(2)
            try:
                first_lines.append(conn.recv(4096).split(b"\r\n")[0])
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    def resolve(host: str, port: Any, *args: Any) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port))]

    http = Http(3, UrlPolicy("https://mcp.example.com/mcp", resolve=resolve))
    http.session.proxies = {"https": f"http://127.0.0.1:{proxy.getsockname()[1]}"}
    try:
        with pytest.raises(mcp_sync.AuthorizationError) as caught:
            http.get_json("https://auth.example.com/.well-known/oauth-authorization-server")
    finally:
        http.close()
        thread.join(5)
        proxy.close()
    assert [line.rsplit(b" ", 1)[0] for line in first_lines] == [b"CONNECT auth.example.com:443"]
    assert "SSRF" not in str(caught.value) and "Tunnel" in str(caught.value), caught.value
