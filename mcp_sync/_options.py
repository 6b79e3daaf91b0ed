"""Per-call options, checked and resolved once at the top into one frozen value.

The facade turns a call's keyword arguments into a :class:`CallOptions` with
:func:`call_options` (every check happens there, before anything is sent);
the session layer and the engine read its fields and never check them again.
A connect done inside a call shortens the call's timeout: that is a new value
(:meth:`CallOptions.within`), never a mutation, so one value may be shared.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, Union

import attrs

from ._headers import AUTHORIZATION, header_problem
from ._sentinels import USE_CLIENT_DEFAULT
from ._values import check_json, check_timeout

if TYPE_CHECKING:
    from .cancellation import CancellationToken

#: ``progress(progress, total, message)``: told of each progress notification of a call.
ProgressCallback = Callable[[float, "float | None", "str | None"], None]
#: The roots given to servers: a list of URIs (or root dicts), or a callable returning one.
Roots = Union[Sequence[Union[str, dict]], Callable[[], Sequence[Union[str, dict]]]]

#: Per-call cache modes: reuse a fresh result, re-fetch and store, or neither read nor store.
CACHE_MODES = ("use", "refresh", "bypass")


@attrs.frozen(slots=True)
class CallOptions:
    """One request's options. ``timeout`` is seconds, None (wait for ever) or the client's default."""

    timeout: Any = USE_CLIENT_DEFAULT
    cancel: CancellationToken | None = None
    progress: Callable[..., None] | None = None
    meta: dict[str, Any] | None = None
    reset_timeout_on_progress: bool = False
    max_total_timeout: float | None = None
    cache: str = "use"
    input_responses: dict[str, Any] | None = None
    request_state: str | None = None
    #: the request's own headers; ``Authorization: None`` (a view whose auth gives none) sends none
    headers: Mapping[str, str | None] | None = None
    extensions: Mapping[str, Any] | None = None
    on_stream: Callable[[str, dict], None] | None = None
    on_request_id: Callable[[Any], None] | None = None
    #: the caller's own credentials (per-call ``headers=``, a bound view's): results cached under
    #: them are kept apart from every other credential's (#19.1); None: the client's own
    credential: Any = None

    def within(self, timeout: Any) -> CallOptions:
        """The same options with what is left of the timeout (after a connect inside the call)."""
        return self if timeout is self.timeout else attrs.evolve(self, timeout=timeout)


#: The options of a call that sets none: the client's timeout, no cancel, no progress.
DEFAULT = CallOptions()


def check_mode(mode: str | None) -> str:
    """A per-call cache mode, checked (None means ``"use"``)."""
    if mode is None:
        return "use"
    if mode not in CACHE_MODES:
        raise ValueError(f"cache must be one of {list(CACHE_MODES)}, not {mode!r:.40}")
    return mode


_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_NAME_INNER = _ALNUM | frozenset("-_.")
_LABEL_INNER = _ALNUM | frozenset("-")
_HEX = frozenset("0123456789abcdef")
_TRACE_KEYS = ("traceparent", "tracestate", "baggage")


def _valid_label(label: str) -> bool:
    return bool(label) and label[0].isascii() and label[0].isalpha() and label[-1] in _ALNUM and all(
        c in _LABEL_INNER for c in label
    )


def meta_key_problem(key: str) -> str | None:
    """Why ``key`` is not a valid ``_meta`` key name (an optional ``label.label/`` prefix, then a
    name that begins and ends with a letter or digit), or None. Linear in the key's length."""
    prefix, slash, name = key.rpartition("/")
    if slash and not all(_valid_label(label) for label in prefix.split(".")):
        return "its prefix must be dot-separated labels (a letter first, a letter or digit last) and a '/'"
    if name and not (name[0] in _ALNUM and name[-1] in _ALNUM and all(c in _NAME_INNER for c in name)):
        return "its name must begin and end with a letter or digit (hyphens, underscores, dots between)"
    return None


def traceparent_problem(value: Any) -> str | None:
    """Why ``value`` is not a W3C Trace Context ``traceparent`` (version-traceid-parentid-flags), or None."""
    if not isinstance(value, str):
        return "it must be a string"
    parts = value.split("-")
    if len(parts) < 4 or [len(p) for p in parts[:4]] != [2, 32, 16, 2] or not all(set(p) <= _HEX for p in parts[:4]):
        return "it must be version-traceid-parentid-flags in lower-case hex (2-32-16-2 digits)"
    if parts[0] == "ff" or (parts[0] == "00" and len(parts) != 4):
        return "its version is invalid"
    if set(parts[1]) == {"0"} or set(parts[2]) == {"0"}:
        return "its trace id and parent id must not be all zeros"
    return None


def check_meta(meta: Mapping[str, Any], label: str) -> None:
    """Refuse a caller's ``_meta`` that breaks the key-name rules, or trace context that is not W3C's.

    ``traceparent``, ``tracestate`` and ``baggage`` pass unchanged when well formed; their values
    are strings (``tracestate`` and ``baggage`` are checked for type and size, ``traceparent`` for
    its exact form). Raises ValueError naming the key.
    """
    for key, value in meta.items():
        if key in _TRACE_KEYS:
            problem = traceparent_problem(value) if key == "traceparent" else (
                None if isinstance(value, str) and len(value) <= 8192 else "it must be a string of at most 8 KiB"
            )
        else:
            problem = meta_key_problem(key)
        if problem is not None:
            raise ValueError(f"{label}: meta key {key[:80]!r}: {problem}")


def call_options(
    label: str,
    *,
    timeout: Any = USE_CLIENT_DEFAULT,
    cancel: CancellationToken | None = None,
    progress: Callable[..., None] | bool | None = None,
    meta: Mapping[str, Any] | None = None,
    reset_timeout_on_progress: bool = False,
    max_total_timeout: float | None = None,
    cache: str | None = None,
    input_responses: Mapping[str, Any] | None = None,
    request_state: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> CallOptions:
    """Check a call's options once and freeze them; ``label`` names the call in errors.

    Raises TypeError or ValueError naming the option (a non-number timeout, a
    meta that is not a dict or not JSON, an unknown cache mode, a progress that is
    neither callable nor a bool, ...). A bool ``progress`` is None here: ``True`` is
    the facade's to turn into a bar before (``_progress.shows_progress``).
    """
    if isinstance(progress, bool):
        progress = None
    elif progress is not None and not callable(progress):
        raise TypeError(f"{label}: progress must be a callable, True or None, not {type(progress).__name__}")
    if (
        timeout is USE_CLIENT_DEFAULT and cancel is None and progress is None and meta is None
        and not reset_timeout_on_progress and max_total_timeout is None and cache is None
        and input_responses is None and request_state is None and headers is None
    ):
        return DEFAULT  # the common case: nothing to check or copy
    if meta is not None:
        if not isinstance(meta, Mapping):
            raise TypeError(f"{label}: meta must be a dict, not {type(meta).__name__}")
        meta = dict(meta)
        check_json(meta, f"{label}: meta")
        check_meta(meta, label)
    if input_responses is not None:
        if not isinstance(input_responses, Mapping):
            raise TypeError(f"{label}: input_responses must be a dict, not {type(input_responses).__name__}")
        input_responses = dict(input_responses)
        check_json(input_responses, f"{label}: input_responses")
    if request_state is not None and not isinstance(request_state, str):
        raise TypeError(
            f"{label}: request_state must be the string the server sent, not {type(request_state).__name__}"
        )
    checked_headers = check_request_headers(headers, label)
    return CallOptions(
        timeout=check_timeout(timeout),
        cancel=cancel,
        progress=progress,
        meta=meta or None,
        reset_timeout_on_progress=reset_timeout_on_progress,
        max_total_timeout=check_timeout(max_total_timeout, "max_total_timeout", allow_default=False),
        cache=check_mode(cache),
        input_responses=input_responses,  # type: ignore[arg-type]
        request_state=request_state,
        headers=checked_headers,
        credential=credential_of(checked_headers),
    )


def check_request_headers(headers: Any, label: str, *, none_leaves_out: bool = False) -> dict[str, str] | None:
    """Caller's HTTP headers (per request, a view's, a client's): a dict of header names to values
    that can go on the wire (:func:`~._headers.header_problem`); TypeError / ValueError naming the
    header, never its value. ``none_leaves_out`` (a client's own headers): a value of None is
    allowed, and keeps a header of the caller's ``requests.Session`` off the requests, as in
    ``requests``. ``Authorization`` is spelled one way in what it returns, so the transport finds a
    caller's own credential with one lookup."""
    if headers is None:
        return None
    if not isinstance(headers, Mapping):
        raise TypeError(f"{label}: headers must be a dict of names to values, not {type(headers).__name__}")
    checked: dict[str, str] = {}
    for name, value in headers.items():
        problem = header_problem(name, "" if value is None and none_leaves_out else value)
        if problem is not None:
            error = TypeError if problem.startswith("must map") else ValueError
            raise error(f"{label}: header {name!r:.60} {problem}")
        checked[AUTHORIZATION if name.lower() == "authorization" else name] = value
    return checked


class _Same:
    """An object as a key that matches only itself, and keeps it alive while the key lives: an
    ``id()`` alone is reused once its object is collected, and would then match a stranger's."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


def credential_of(headers: Mapping[str, str | None] | None, auth: Any = None) -> Any:
    """What keeps one caller's cached results and sessions apart from another's: its headers
    (names case-insensitive) and auth object (the same object, held by the key); None when it
    has neither. Equal keys only ever come from equal headers and the very same auth object."""
    if not headers and auth is None:
        return None
    items = frozenset((name.lower(), value) for name, value in (headers or {}).items())
    return (items, None if auth is None else _Same(auth))
