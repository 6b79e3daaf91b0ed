"""``ClientGroup`` members (#10.4, #20): what ``ClientGroup(...)``, :meth:`add` and :meth:`remove`
refuse, and what a change that races another thread's ``close()`` or ``remove()`` leaves.

Races are placed deterministically: the other thread's call runs (and ends) at the very point
where it lands, from a hook the test puts there (an entry's field read while the client is
built; a client's ``connect``; the group's ``connect``). Whatever lands, the group raises
ClientStateError and leaves no server running.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Callable

import pytest
from helpers import in_thread
from lifekit import gone, server_pid, wait_for

import mcp_sync

from conftest import PY, ROOT

pytestmark = pytest.mark.timeout(60)
DEMO = {"command": PY, "args": [str(ROOT / "examples" / "demo_server.py")]}
BROKEN = {"command": "/no/such/server-binary"}


def _from_another_thread(call: Callable[[], Any]) -> None:
    """Run ``call`` on another thread, to its end (as if that thread's call landed right here)."""
    thread, box = in_thread(call)
    thread.join(30)
    assert not thread.is_alive() and "error" not in box, box


class _Entry(Mapping[str, Any]):
    """A config entry that runs ``hook`` once, when its ``command`` is read (the client is built)."""

    def __init__(self, entry: Mapping[str, Any], hook: Callable[[], Any]) -> None:
        self._entry, self._hook = dict(entry), hook

    def __getitem__(self, key: str) -> Any:
        if key == "command" and self._hook is not None:
            hook, self._hook = self._hook, None  # type: ignore[assignment]
            hook()
        return self._entry[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entry)

    def __len__(self) -> int:
        return len(self._entry)


def test_options_for_a_built_client_are_refused(no_leaks: None) -> None:
    built = mcp_sync.Client.stdio(DEMO["command"], DEMO["args"])
    try:
        with pytest.raises(ValueError, match=r"options for \['built'\]: these are Client objects already built"):
            mcp_sync.ClientGroup({"built": built}, options={"built": {"timeout": 5}})
        with mcp_sync.ClientGroup({"demo": DEMO}, timeout=30) as group:
            with pytest.raises(ValueError, match="options for 'built': a Client object is already built"):
                group.add("built", built, options={"timeout": 5})
            with pytest.raises(TypeError, match="spec must be a config entry or a Client, not str"):
                group.add("line", "python server.py")  # type: ignore[arg-type]
            assert sorted(group.clients) == ["demo"] and built.state is mcp_sync.ClientState.NEW
    finally:
        built.close()


def test_an_entry_whose_tools_field_is_not_an_object_is_refused() -> None:
    with pytest.raises(ValueError, match="server 'demo': 'tools' must be an object with 'include' and/or 'exclude'"):
        mcp_sync.ClientGroup({"demo": {**DEMO, "tools": ["echo"]}})


def test_a_failed_add_leaves_the_name_free(no_leaks: None) -> None:
    with mcp_sync.ClientGroup({"demo": DEMO}, timeout=30) as group:
        with pytest.raises(ValueError, match="needs 'command' or 'url'"):
            group.add("notes", {"name": "no command"})
        assert "notes" not in repr(group)
        assert group.add("notes", DEMO).call_tool("echo", {"text": "added"}).text == "added"


def test_removing_a_server_that_failed_to_connect(no_leaks: None) -> None:
    with mcp_sync.ClientGroup({"demo": DEMO, "broken": BROKEN}, timeout=30) as group:
        assert list(group.errors) == ["broken"]
        group.remove("broken")
        assert group.errors == {} and repr(group) == "<ClientGroup open servers=['demo'] failed=[]>"
        with pytest.raises(mcp_sync.ToolNotFound, match="no server named 'broken'"):
            group.remove("broken")


def test_close_while_connect_builds_the_clients(no_leaks: None) -> None:
    """Nothing is started (``no_leaks``: no thread is left), and the group stays closed."""
    groups: list[mcp_sync.ClientGroup] = []
    second = _Entry(DEMO, lambda: _from_another_thread(groups[0].close))
    group = mcp_sync.ClientGroup({"first": DEMO, "second": second}, timeout=30)
    groups.append(group)
    with pytest.raises(mcp_sync.ClientStateError, match="closed while connecting"):
        group.connect()
    assert group.clients == {}
    with pytest.raises(mcp_sync.ClientStateError, match="is closed"):
        group.connect()


def test_close_while_add_builds_the_client(no_leaks: None) -> None:
    with mcp_sync.ClientGroup({"demo": DEMO}, timeout=30) as group:
        demo_pid = server_pid(group.clients["demo"])
        with pytest.raises(mcp_sync.ClientStateError, match="closed while adding a server"):
            group.add("late", _Entry(DEMO, lambda: _from_another_thread(group.close)))
        assert "late" not in group.clients and wait_for(lambda: gone(demo_pid), 10)


def test_remove_right_after_add_connected(no_leaks: None) -> None:
    """``remove(name)`` from another thread as ``add(name)``'s connect returns: add() raises, the
    new server is closed and the name is free again."""
    with mcp_sync.ClientGroup({"demo": DEMO}, timeout=30) as group:
        late = mcp_sync.Client.stdio(DEMO["command"], DEMO["args"])
        connect = late.connect

        def connect_then_removed() -> mcp_sync.Client:
            connect()
            _from_another_thread(lambda: group.remove("late"))
            return late

        late.connect = connect_then_removed  # type: ignore[method-assign]
        with pytest.raises(mcp_sync.ClientStateError, match="'late' removed, while adding it"):
            group.add("late", late)
        assert late.state is mcp_sync.ClientState.CLOSED and "late" not in repr(group)
        assert group.add("late", DEMO).call_tool("echo", {"text": "again"}).text == "again"


def test_close_right_after_connect_returned(no_leaks: None) -> None:
    """A listing that connected the group first, with ``close()`` landing right after: it raises
    ClientStateError rather than asking the closed clients."""
    group = mcp_sync.ClientGroup({"demo": DEMO}, timeout=30)
    connect = group.connect

    def connect_then_closed() -> mcp_sync.ClientGroup:
        connect()
        _from_another_thread(group.close)
        return group

    group.connect = connect_then_closed  # type: ignore[method-assign]
    with pytest.raises(mcp_sync.ClientStateError, match="this ClientGroup is closed"):
        list(group.tools())
