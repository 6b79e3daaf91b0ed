"""The result cache (checklist 1.10, C1-C7): the fault server over stdio, an
in-memory transport for what needs a scripted server, and ResultCache itself.

Each test names the checklist items it covers.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import pytest
from helpers import run_workers
from wirekit import DISCOVER, FakeTransport, Peer

import mcp_sync
from mcp_sync._protocol.cache import ResultCache, params_key

from conftest import PY, fault_args

pytestmark = pytest.mark.timeout(60)

def fault(*extra: str, **options: Any) -> mcp_sync.Client:
    return mcp_sync.Client.stdio(PY, fault_args(*extra), **options)


def received(client: mcp_sync.Client) -> int:
    """Requests the fault server has received, this counter call included."""
    return int(client.call_tool("counter").text)


def fake_client(handler: Callable[[str, dict], dict], **options: Any) -> tuple[mcp_sync.Client, FakeTransport]:
    transport = FakeTransport(lambda m, p: DISCOVER if m == "server/discover" else handler(m, p))
    options.setdefault("timeout", 10)
    return mcp_sync.Client(transport, mode="modern", **options), transport


def tools_page(names: list[str], ttl: int | None = 60_000, scope: str = "public", cursor: str | None = None) -> dict:
    page: dict[str, Any] = {"resultType": "complete", "tools": [{"name": n, "inputSchema": {}} for n in names]}
    if ttl is not None:
        page["ttlMs"] = ttl
    page["cacheScope"] = scope
    if cursor is not None:
        page["nextCursor"] = cursor
    return page


# -- against the fault server (stdio) ----------------------------------------------------


def test_ttl_50ms_reused_within_refetched_after(no_leaks: None) -> None:
    """C3: a 50 ms ttlMs is reused within it and re-fetched after; counted server-side.

    The cache's clock is the test's (#22.6): "within" and "after" do not depend on how soon a
    loaded machine runs the next line (the real clock is covered by test_ttl_on_the_real_clock)."""
    with fault("--era", "modern", "--ttl-ms", "50") as client:
        now = [1000.0]
        cache = client._session.cache
        assert cache is not None
        cache._clock = lambda: now[0]
        before = received(client)
        first = client.list_tools()
        now[0] += 0.049  # still inside 50 ms
        again = client.list_tools()
        assert first.ttl_ms == 50 and [t.name for t in again] == [t.name for t in first]
        assert received(client) == before + 2  # one tools/list, then this counter call
        now[0] += 0.001  # received + ttl: stale
        client.list_tools()
        assert received(client) == before + 4  # stale: fetched again


def test_ttl_on_the_real_clock(no_leaks: None) -> None:
    """C3 on the real clock, with margins a loaded machine keeps: a 2 s ttlMs is reused by a
    call made at once (fixed: reused; a cache that never stores fetches again), and fetched
    again once 2.2 s have passed since the answer (a cache that never expires does not)."""
    with fault("--era", "modern", "--ttl-ms", "2000") as client:
        before = received(client)
        client.list_tools()
        answered = time.monotonic()
        client.list_tools()  # at once: 2 s of margin
        assert received(client) == before + 2
        time.sleep(max(0.0, answered + 2.2 - time.monotonic()))
        count = received(client)
        client.list_tools()
        assert received(client) == count + 2  # stale: fetched again (and the counter call)


def test_per_call_modes_and_cache_off(no_leaks: None) -> None:
    """C3 and the API: cache="bypass"/"refresh", clear_cache(), cache=False."""
    with fault("--era", "modern", "--ttl-ms", "60000") as client:
        base = received(client)
        client.read_resource("test://a")
        client.read_resource("test://a")  # reused
        assert received(client) == base + 2
        client.read_resource("test://a", cache="bypass")  # fetched, not stored
        client.read_resource("test://a", cache="refresh")  # fetched and stored
        client.read_resource("test://a")  # reused
        assert received(client) == base + 5
        client.clear_cache()
        client.read_resource("test://a")
        assert received(client) == base + 7
        with pytest.raises(ValueError):
            client.list_tools(cache="sometimes")
    with fault("--era", "modern", "--ttl-ms", "60000", cache=False) as client:
        base = received(client)
        client.list_prompts()
        client.list_prompts()
        assert received(client) == base + 3


def test_list_changed_invalidates_before_the_subscriber_sees_it(no_leaks: None) -> None:
    """C6: by the time a subscriber has the list_changed, a re-list goes to the server."""
    with fault("--era", "modern", "--ttl-ms", "60000") as client:
        client.list_tools()
        counts: list[int] = []

        def relist(method: str, params: dict) -> None:  # on the dispatch thread
            before = received(client)
            client.list_tools()
            counts.append(received(client) - before)

        with client.listen(tools_list_changed=True, on_notification=relist) as sub:
            client.list_tools()  # still cached
            client.call_tool("notify_changed", {"kind": "tools"})
            assert sub.get(timeout=10) == (
                "notifications/tools/list_changed",
                {"_meta": {"io.modelcontextprotocol/subscriptionId": sub.subscription_id}},
            )
            deadline = time.monotonic() + 10
            while not counts and time.monotonic() < deadline:
                time.sleep(0.01)
        assert counts == [2]  # the re-list was a real request (plus the second counter call)


def test_discover_is_cached_and_refreshed(no_leaks: None) -> None:
    """C1: the DiscoverResult is cacheable; the connect-time answer seeds the cache."""
    with fault("--era", "modern", "--ttl-ms", "60000") as client:
        base = received(client)
        assert client.discover().server_info == {"name": "fault-server", "version": "1.0"}
        assert received(client) == base + 1  # served from the connect-time answer
        client.discover(cache="refresh")
        assert received(client) == base + 3


# -- scripted (in-memory transport) ------------------------------------------------------


def test_private_entries_are_not_shared_across_auth_contexts(no_leaks: None) -> None:
    """C5: a private entry is reused under its own authorization context only;
    a public one is shared."""
    scope = {"value": "private"}
    client, transport = fake_client(lambda m, p: tools_page([f"t-{m}"], scope=scope["value"]))
    with client:
        transport.auth_context = "token-a"
        client.list_tools()
        client.list_tools()
        assert transport.count("tools/list") == 1
        transport.auth_context = "token-b"
        client.list_tools()
        assert transport.count("tools/list") == 2  # never served token-a's entry
        transport.auth_context = "token-a"
        client.list_tools()
        assert transport.count("tools/list") == 2  # token-a's own entry is still fresh
        scope["value"] = "public"
        client.clear_cache()
        client.list_tools()
        transport.auth_context = "token-c"
        client.list_tools()
        assert transport.count("tools/list") == 3  # public: shared


def test_input_required_retries_are_never_cached(no_leaks: None) -> None:
    """C2: a result reached through input_required rounds is never cached."""

    def handler(method: str, params: dict) -> dict:
        if "inputResponses" not in params:
            return {
                "resultType": "input_required",
                "inputRequests": {"who": {"method": "elicitation/create", "params": {"message": "who?"}}},
                "requestState": "s1",
            }
        who = params["inputResponses"]["who"]["content"]["name"]
        return {"resultType": "complete", "ttlMs": 60_000, "contents": [{"uri": params["uri"], "text": who}]}

    answer = {"action": "accept", "content": {"name": "Zed"}}
    client, transport = fake_client(handler, on_elicitation=lambda params: answer)
    with client:
        assert client.read_resource("test://who").text == "Zed"
        assert client.read_resource("test://who").text == "Zed"
        assert transport.count("resources/read") == 4  # two rounds each time, nothing reused


def test_invalid_cursor_on_cached_page_restarts_from_the_beginning(no_leaks: None) -> None:
    """C7: a cached page's cursor rejected later: discard the pages, walk again from the start."""
    epoch = {"value": 1}

    def handler(method: str, params: dict) -> dict:
        cursor = params.get("cursor")
        good = f"e{epoch['value']}"
        if cursor is None:
            return tools_page(["a", "b"], ttl=60_000, cursor=good)  # the first page lives long
        if cursor != good or not epoch["value"]:
            return {"error": {"code": -32602, "message": "Invalid cursor"}}
        return tools_page(["c"], ttl=0)  # the last page is never reused

    client, transport = fake_client(handler)
    with client:
        assert [t.name for t in client.tools()] == ["a", "b", "c"]
        epoch["value"] = 2  # the server's cursors change; the cached first page still says "e1"
        assert [t.name for t in client.tools()] == ["a", "b", "c"]  # no duplicates, no gap
        assert [p.get("cursor") for m, p in transport.sent if m == "tools/list"] == [None, "e1", "e1", None, "e2"]
        epoch["value"] = 0  # every cursor rejected, fresh ones too: one restart, then the error
        with pytest.raises(mcp_sync.ServerError):
            list(client.tools())
        assert transport.count("tools/list") == 5 + 3


def test_ttl_absent_zero_negative_not_reused(no_leaks: None) -> None:
    """C3: ttlMs absent, 0 or negative means every call goes to the server."""
    ttls = iter([None, 0, -5, None])
    client, transport = fake_client(lambda m, p: tools_page(["a"], ttl=next(ttls)))
    with client:
        for _ in range(4):
            client.list_tools()
        assert transport.count("tools/list") == 4


# -- ResultCache itself ---------------------------------------------------------------------


def test_result_cache_unit() -> None:
    """C2 key without _meta, C3 freshness on an injected clock, C5 scopes, C6 generations."""
    now = [100.0]
    cache = ResultCache(clock=lambda: now[0])
    result = {"resultType": "complete", "contents": [], "ttlMs": 1000, "cacheScope": "private"}
    params = {"uri": "test://a", "_meta": {"x": 1}}
    assert params_key(params) == params_key({"uri": "test://a"})
    assert cache.put("resources/read", params, "alice", result, generation=cache.generation)
    assert cache.get("resources/read", {"uri": "test://a"}, "alice") == result
    assert cache.get("resources/read", {"uri": "test://a"}, "bob") is None  # C5
    assert cache.get("resources/read", {"uri": "test://b"}, "alice") is None  # C2
    now[0] += 0.999
    assert cache.get("resources/read", params, "alice") is not None
    now[0] += 0.001
    assert cache.get("resources/read", params, "alice") is None  # now == received + ttl: stale
    # copies: mutating what was returned never changes the cache
    cache.put("resources/read", params, "alice", result, generation=cache.generation)
    cache.get("resources/read", params, "alice")["contents"].append("junk")  # type: ignore[index]
    assert cache.get("resources/read", params, "alice")["contents"] == []  # type: ignore[index]
    # C6: an answer fetched before an invalidation is not stored
    generation = cache.generation
    cache.notification("notifications/resources/updated", {"uri": "test://a"})
    assert cache.get("resources/read", params, "alice") is None
    assert not cache.put("resources/read", params, "alice", result, generation=generation)
    # U8: an update of a sub-resource invalidates the parent's entry; others are kept
    cache.put("resources/read", {"uri": "file:///dir"}, None, result, generation=cache.generation)
    cache.put("resources/read", {"uri": "file:///other"}, None, result, generation=cache.generation)
    cache.notification("notifications/resources/updated", {"uri": "file:///dir/x.txt"})
    assert cache.get("resources/read", {"uri": "file:///dir"}, None) is None
    assert cache.get("resources/read", {"uri": "file:///other"}, None) is not None
    # C1/C2: not cacheable at all
    for method, p, r in [
        ("tools/call", None, result),
        ("resources/read", {"uri": "x", "requestState": "s"}, result),
        ("resources/read", {"uri": "x"}, {**result, "resultType": "input_required"}),
        ("resources/read", {"uri": "x"}, {**result, "ttlMs": True}),
    ]:
        assert not cache.put(method, p, None, r, generation=cache.generation)
    cache.put("tools/list", None, None, {"tools": [], "ttlMs": 5}, generation=cache.generation)
    cache.notification("notifications/tools/list_changed", {})
    assert cache.get("tools/list", None, None) is None


def test_result_cache_is_thread_safe() -> None:
    cache = ResultCache()

    def worker(n: int) -> None:
        for i in range(300):
            page = {"tools": [], "ttlMs": 10_000, "cacheScope": "public"}
            cache.put("tools/list", {"cursor": str(i % 7)}, None, page, generation=cache.generation)
            cache.get("tools/list", {"cursor": str(i % 5)}, None)
            if i % 50 == n:
                cache.notification("notifications/tools/list_changed", {})

    run_workers(worker, [(n,) for n in range(4)], timeout=30)
    assert len(cache) <= 7


def test_stale_discover_is_refetched_before_a_capability_refusal(no_leaks: None) -> None:
    """C3 for server/discover: a stale DiscoverResult is not relied on to refuse a method;
    a fresh one is (no extra request)."""
    caps: dict[str, Any] = {"tools": {}}
    ttl = {"value": 0}

    def handler(method: str, params: dict) -> dict:
        if method == "server/discover":
            return {**DISCOVER, "capabilities": dict(caps), "ttlMs": ttl["value"]}
        if method == "prompts/list":
            return {"resultType": "complete", "prompts": [{"name": "p"}]}
        return {"resultType": "complete"}

    transport = FakeTransport(handler)
    with mcp_sync.Client(transport, mode="modern", timeout=10) as client:
        caps["prompts"] = {}  # the server gained prompts after the (immediately stale) discover
        assert [p.name for p in client.prompts()] == ["p"]
        assert transport.count("server/discover") == 2
        del caps["prompts"]
        ttl["value"] = 60_000
        client.discover(cache="refresh")  # now fresh for a minute, without prompts
        count = transport.count("server/discover")
        with pytest.raises(mcp_sync.CapabilityError):
            client.get_prompt("p")
        assert transport.count("server/discover") == count  # a fresh answer is relied on


@pytest.mark.parametrize("call", ["call_tool", "get_prompt", "tools"])
def test_a_stale_discover_refetched_for_a_capability_check_keeps_the_calls_timeout(
    call: str, tmp_path: Path, no_leaks: None
) -> None:
    """C3 within the call's deadline: the re-fetch of a stale DiscoverResult before refusing a
    method is bounded by that call's timeout, not the client's (a server that never answers it
    held a 0.5 s call for the client's 20 s)."""
    discover = {**DISCOVER, "capabilities": {"resources": {}}, "ttlMs": 0}  # stale at once; no tools or prompts
    peer = Peer(tmp_path, {"server/discover": [{"result": discover}, {}]}, "--era", "modern")  # then silence
    with peer.client(mode="modern", timeout=20) as client:
        started = time.monotonic()
        with pytest.raises(mcp_sync.RequestTimeout):
            if call == "call_tool":
                client.call_tool("echo", {"text": "x"}, timeout=0.5)
            elif call == "get_prompt":
                client.get_prompt("greet", timeout=0.5)
            else:
                list(client.tools(timeout=0.5))
        assert time.monotonic() - started < 3
        assert len(peer.requests("server/discover")) == 2
