"""The result cache: list pages, resource reads and discover, kept while ``ttlMs`` lasts.

Rules (checklist 1.10):

* C1: only ``server/discover``, the four list methods and ``resources/read`` are
  cached, and only results with ``resultType`` ``"complete"`` (or none: legacy).
* C2: the key is the method plus the params minus ``_meta``; a request carrying
  ``inputResponses`` or ``requestState`` (an input_required retry) is never
  cached nor served from the cache.
* C3: fresh while ``now < received + ttlMs``; ``ttlMs`` absent, zero, negative or
  not an integer means "do not reuse", so such a result is not even stored.
* C5: a ``cacheScope: "private"`` entry (and, to be safe, one with no scope) is
  keyed by the authorization context as well, so it is never served under
  another one; a ``"public"`` entry is shared.
* C6: :meth:`ResultCache.notification` drops the entries a list_changed or
  resources/updated notification makes stale; the client calls it on the
  reader thread, before any subscriber sees the notification.
* C7: pages are separate entries; :meth:`ResultCache.invalidate` drops all the
  pages of one list when a cursor turns out to be invalid.
* Kept until changed (#19.2): a list result without ``ttlMs`` (legacy servers;
  the spec's "rely on their own caching heuristics or notifications") is kept,
  with no expiry, when the caller passes a *hold* token. A ``ttlMs`` of 0 (or
  negative, read as 0) is the server saying the result is immediately stale: it
  is never kept, listen or not. The token: the session gives one while the server declares
  ``listChanged`` for that list and its change notifications reach the client
  (see ``Session.hold_token``). The entry is served only while the same token
  is current: when the notification stream drops or is re-opened
  (notifications may have been missed) the token changes and the entry is
  dropped. A change notification drops it as in C6; a positive ``ttlMs`` wins
  over holding (the entry expires when it says).
* The caller's time-to-live (#31.7, ``list_ttl``): a list result with no ``ttlMs``
  at all (legacy servers never send one), not kept until changed, is kept for
  ``list_ttl`` seconds. A ``ttlMs`` the server did send, 0 included, wins: 0 means
  "do not reuse" and stays so.

Thread-safe: one lock guards the table; callers get deep copies (iterative: a
result nested thousands deep is copied like any other), so a caller mutating
``page.raw`` never corrupts the cache.

Example::

    cache = ResultCache(clock=lambda: now[0])
    gen = cache.generation
    cache.put("tools/list", None, None, {"tools": [], "ttlMs": 5000}, generation=gen)
    cache.get("tools/list", None, None)  # -> {"tools": [], "ttlMs": 5000} for 5 s
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Callable, Hashable, Mapping

import attrs

from .._values import copy_json
from ..models import ttl_ms

#: C1: the methods whose results may be cached.
CACHEABLE_METHODS = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)
#: The lists a list_changed notification covers: kept until changed (#19.2).
HOLDABLE_METHODS = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})
#: C6: which notification makes which methods' entries stale.
_INVALIDATES: dict[str, tuple[str, ...]] = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}
_MRTR_KEYS = ("inputResponses", "requestState")  # C2


def is_retry(params: Mapping[str, Any] | None) -> bool:
    """True for an input_required retry, which is never cached (C2)."""
    return bool(params) and any(key in params for key in _MRTR_KEYS)  # type: ignore[operator]


def params_key(params: Mapping[str, Any] | None) -> str:
    """The canonical text of the params that affect the result: everything but ``_meta`` (C2)."""
    relevant = {k: v for k, v in (params or {}).items() if k != "_meta"}
    return json.dumps(relevant, sort_keys=True, separators=(",", ":"), default=repr)


def freshness_ms(result: Mapping[str, Any]) -> int:
    """The result's usable ``ttlMs``: 0 when absent, negative or not an integer (C3);
    clamped to one day (a server's 10**400 must not overflow the clock)."""
    return ttl_ms(result.get("ttlMs")) or 0


@attrs.define
class _Entry:
    method: str
    params: dict[str, Any]
    result: dict[str, Any]
    expires: float
    hold: Any = None  # kept until changed, while this token is current (#19.2)


class ResultCache:
    """A thread-safe TTL cache of raw result dicts. ``clock`` returns seconds (monotonic).

    ``generation`` changes on every invalidation; :meth:`put` refuses a result
    fetched under an older generation, so an answer that raced a list_changed
    notification is never stored as fresh (C6).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, list_ttl: float | None = None) -> None:
        self._clock = clock
        #: seconds a list result without ``ttlMs`` is kept (None: not kept)
        self.list_ttl = list_ttl
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str, tuple[Any, ...]], _Entry] = {}
        self._generation = 0

    @property
    def generation(self) -> int:
        """Read before sending a request; pass to :meth:`put` with its answer."""
        return self._generation

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    @staticmethod
    def _scope(result: Mapping[str, Any], auth: Hashable) -> tuple[Any, ...]:
        # C5: only an explicit "public" is shared across authorization contexts.
        return ("public",) if result.get("cacheScope") == "public" else ("private", auth)

    def get(
        self, method: str, params: Mapping[str, Any] | None, auth: Hashable, hold: Any = None
    ) -> dict[str, Any] | None:
        """A deep copy of the fresh result for this request under ``auth``, or None.

        ``hold``: the current hold token (see :meth:`put`); an entry kept until
        changed is served only under the token it was stored with. Nothing uncacheable (C1) or a
        retry (C2) is ever stored (see :meth:`put`), so for those it is always None."""
        key = params_key(params)
        now = self._clock()
        with self._lock:
            for scope in (("private", auth), ("public",)):
                entry = self._entries.get((method, key, scope))
                if entry is None:
                    continue
                held_still = entry.hold is None or entry.hold == hold
                if now < entry.expires and held_still:  # C3: fresh while now < received + ttl
                    return copy_json(entry.result)  # type: ignore[no-any-return]
                del self._entries[(method, key, scope)]  # stale: the next fetch replaces it
        return None

    def put(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        auth: Hashable,
        result: Mapping[str, Any],
        *,
        generation: int,
        hold: Any = None,
    ) -> bool:
        """Store ``result`` if it may be reused; True when stored.

        Not stored: a method outside C1, a retry (C2), an input_required result
        (C1), a ttlMs that allows no reuse (C3), or a generation that an
        invalidation has overtaken (C6). ``hold`` (a token, taken *before* the
        request was sent): a list result without ``ttlMs`` is kept until a change
        notification, for as long as :meth:`get` is given the same token; a
        positive ``ttlMs`` bounds it as usual, and 0 (immediately stale) keeps nothing.
        """
        if method not in CACHEABLE_METHODS or is_retry(params):
            return False
        if result.get("resultType", "complete") != "complete":
            return False
        ttl = freshness_ms(result)
        held = result.get("ttlMs") is None and hold is not None and method in HOLDABLE_METHODS
        expires = float("inf") if held else self._clock() + ttl / 1000.0
        if ttl == 0 and not held:
            if self.list_ttl is None or method not in HOLDABLE_METHODS or "ttlMs" in result:
                return False
            expires = self._clock() + self.list_ttl  # the caller's time-to-live (#31.7)
        entry = _Entry(
            method=method,
            params={k: v for k, v in (params or {}).items() if k != "_meta"},
            result=copy_json(dict(result)),
            expires=expires,
            hold=hold if held else None,
        )
        with self._lock:
            if generation != self._generation:
                return False
            self._entries[(method, params_key(params), self._scope(result, auth))] = entry
        return True

    def invalidate(self, *methods: str, uri: str | None = None) -> int:
        """Drop every entry of ``methods`` (for ``resources/read``, only those whose
        URI is ``uri``, a sub-resource of it, or a parent of it: U8). Returns how many."""
        with self._lock:
            self._generation += 1
            doomed = [
                key
                for key, entry in self._entries.items()
                if entry.method in methods and (uri is None or _uri_related(entry.params["uri"], uri))
            ]
            for key in doomed:
                del self._entries[key]
        return len(doomed)

    def notification(self, method: str, params: Mapping[str, Any]) -> None:
        """C6: apply one server notification. Quick, runs no user code (reader thread)."""
        if method in _INVALIDATES:
            self.invalidate(*_INVALIDATES[method])
        elif method == "notifications/resources/updated":
            uri = params.get("uri")
            self.invalidate("resources/read", uri=uri if isinstance(uri, str) else None)

    def clear(self) -> None:
        """Forget everything (``Client.clear_cache()``, and after a reconnect)."""
        with self._lock:
            self._generation += 1
            self._entries.clear()


def _uri_related(cached: str, updated: str) -> bool:
    """Whether a cached ``resources/read`` of ``cached`` is affected by an update of ``updated`` (U8);
    the URI of every stored read is a string (``read_resource`` checks it)."""
    return cached == updated or cached.startswith(updated) or updated.startswith(cached)
