"""Checking what goes out and copying what came in: timeouts, JSON values, constructor arguments.

Everything here is called before anything is sent, so a bad argument fails at
once with a ``TypeError``/``ValueError`` naming it, never with a server error,
a hang, or an exception from inside the encoder. The walks are iterative: a
value nested deeper than Python's recursion limit is checked or copied like any
other.
"""

from __future__ import annotations

import inspect
import json
import math
import os
from typing import Any, Callable, Iterator, Mapping, Sequence, Union

from ._sentinels import USE_CLIENT_DEFAULT, _Default

#: A per-call timeout: seconds, None (wait for ever), or USE_CLIENT_DEFAULT.
Timeout = Union[float, None, _Default]

#: Longer than this counts as "for ever": threading's waits overflow past ~292 years,
#: and no caller means a finite wait of more than a year.
_FOREVER_SECONDS = 365 * 24 * 3600.0

_JSON_SCALARS = (str, int, float, bool, type(None))


def _c_encoder() -> Callable[[Any], str] | None:
    """json's C encoder, called directly (what ``json.dumps`` reaches after several Python-level
    steps per call), or None where it is missing or its signature differs (then ``json`` is used)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has the C accelerator
        return None

    def refuse(value: Any) -> Any:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    # One encoder for every call (making one parses nine arguments each time): without a
    # markers dict it keeps no state between calls, so threads may share it. A value that
    # contains itself then recurses until RecursionError, which is turned into json's ValueError.
    encoder = make(None, refuse, json.encoder.encode_basestring, None, ":", ",", False, False, False)

    def encode(message: Any) -> str:
        try:
            return "".join(encoder(message, 0))
        except RecursionError:
            raise ValueError("Circular reference detected (or a value nested too deeply for JSON)") from None

    try:
        probe = {"a": [1, 2.5, "\u00e9", None, True]}
        if encode(probe) == json.dumps(probe, separators=(",", ":"), ensure_ascii=False):
            return encode
    except Exception:  # pragma: no cover - a Python whose C encoder takes other arguments
        pass
    return None  # pragma: no cover - as above


#: ``encode_json(value)``: compact JSON text (``str``); NaN and infinities raise ValueError, as does a
#: value that contains itself (or is nested past the recursion limit); a type JSON has no form for
#: raises TypeError. Lone surrogates pass into the text (UTF-8 encoding them is the caller's choice).
#: The one JSON encoder: the wire (transports.base.encode_message) and the argument checks use it.
encode_json: Callable[[Any], str] = _c_encoder() or json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode


def check_timeout(value: Any, name: str = "timeout", *, allow_default: bool = True) -> Any:
    """A validated timeout: seconds (float) or None; USE_CLIENT_DEFAULT kept if allowed.

    Infinity and anything past a year mean "wait for ever" (None). Raises
    TypeError for a non-number (a bool or a str included) and ValueError for
    zero, a negative number or NaN, naming ``name``.
    """
    if value is None or (allow_default and value is USE_CLIENT_DEFAULT):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds or None, not {type(value).__name__} ({value!r:.40})")
    if math.isnan(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number of seconds or None, not {value!r}")
    return None if value > _FOREVER_SECONDS else float(value)


def _describe(label: str, path: str) -> str:
    return f"{label} {path!r}" if path else label


def clean_json(value: Any) -> bool:
    """True when ``value`` is JSON that :func:`check_json` accepts: one pass of json's C encoder
    (strict: no NaN, no infinities, no value that contains itself) and, for non-ASCII text, one
    UTF-8 encoding (lone surrogates). Builds no paths; the common case of every call's check."""
    try:
        text = encode_json(value)
        if not text.isascii():
            text.encode("utf-8")
    except (TypeError, ValueError):  # UnicodeEncodeError is a ValueError
        return False
    return True


def check_json(value: Any, label: str) -> None:
    """Refuse, before sending, a value JSON cannot carry.

    NaN and infinities (JSON has neither), strings with lone surrogates (not
    encodable as UTF-8) and a container that contains itself raise ValueError;
    a type JSON has no form for (a set, a datetime, an object) raises TypeError.
    ``label`` says what the value is, e.g. ``"call_tool('add'): argument"``; the
    message adds the path inside it. Linear in the size of the value's JSON, and
    always ends (a cycle is found, not followed).

    Example: ``check_json({"a": float("nan")}, "call_tool('add'): argument")``
    raises ``ValueError: call_tool('add'): argument 'a' is nan; JSON has no NaN or Infinity``.
    """
    if clean_json(value):  # the common case: one pass in C, no paths built
        return
    # The detailed walk says what and where. It also accepts what the C pass refused only for
    # its depth (nested past the recursion limit): that is JSON, checked here without recursion.
    for path, item in walk_json(value):
        if item is CYCLE:
            raise ValueError(f"{_describe(label, path)} contains itself; JSON has no references")
        if isinstance(item, str):
            _check_text(item, label, path)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ValueError(f"{_describe(label, path)} is {item!r}; JSON has no NaN or Infinity")
        elif isinstance(item, dict):
            for key in item:
                if isinstance(key, str):
                    _check_text(key, label, path)
                elif not isinstance(key, _JSON_SCALARS):
                    raise TypeError(f"{_describe(label, path)} has a key of type {type(key).__name__}; "
                                    "JSON object keys are strings")
                elif isinstance(key, float) and not math.isfinite(key):
                    raise ValueError(f"{_describe(label, path)} has the key {key!r}; JSON has no NaN or Infinity")
        elif not isinstance(item, (list, tuple, *_JSON_SCALARS)):
            raise TypeError(f"{_describe(label, path)} is a {type(item).__name__}, which JSON cannot carry")


#: What :func:`walk_json` yields for a container met again inside itself (never entered twice).
CYCLE: Any = type("Cycle", (), {"__repr__": lambda self: "<cycle>", "__slots__": ()})()
_LEAVE = object()


def walk_json(value: Any, root: str = "") -> Iterator[tuple[str, Any]]:
    """Every ``(path, item)`` of a JSON-like value, depth first, paths like ``a.b[0]`` (under
    ``root``: ``root.a.b[0]``). A dict, list or tuple met again inside itself is not entered
    again: it is yielded as ``(path, CYCLE)``. Iterative, so nesting deeper than the recursion
    limit is walked like any other; linear in the size of the value (a shared, acyclic container
    is walked at each place it appears, as JSON would repeat it)."""
    stack: list[tuple[Any, Any]] = [(root, value)]
    inside: set[int] = set()  # the containers on the path to the item being looked at
    while stack:
        path, item = stack.pop()
        if path is _LEAVE:
            inside.discard(id(item))
            continue
        if not isinstance(item, (dict, list, tuple)):
            yield path, item
            continue
        if id(item) in inside:
            yield path, CYCLE
            continue
        yield path, item
        inside.add(id(item))
        stack.append((_LEAVE, item))
        if isinstance(item, dict):
            stack.extend((f"{path}.{key}" if path else str(key), child) for key, child in item.items())
        else:
            stack.extend((f"{path}[{index}]", child) for index, child in enumerate(item))


def _check_text(text: str, label: str, path: str) -> None:
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start:exc.end].encode("unicode_escape").decode("ascii")
        raise ValueError(
            f"{_describe(label, path)} contains a lone surrogate ({bad}) that UTF-8 cannot encode: {text[:60]!r}"
        ) from None


def check_tool_call(label: str, name: Any, arguments: Any) -> dict[str, Any]:
    """A tool call's name and arguments, checked before sending; returns the arguments as a dict.

    Example: ``check_tool_call("call_tool", "add", {"a": 1})`` -> ``{"a": 1}``; a name that is
    not a string or arguments that are not a dict raise TypeError, NaN a ValueError.
    """
    if not isinstance(name, str):
        raise TypeError(f"{label}: the tool name must be a string, not {type(name).__name__}")
    if not name.isascii():  # an ASCII name is fine as it is: no walk
        check_json(name, f"{label}: the tool name")
    if arguments is None:
        return {}
    if type(arguments) is not dict and not isinstance(arguments, Mapping):  # a dict skips the ABC check
        raise TypeError(
            f"{label}({name!r}): arguments must be a dict of argument names to values, "
            f"not {type(arguments).__name__}"
        )
    args = dict(arguments)
    if not clean_json(args):  # the label is made only for an error
        check_json(args, f"{label}({name!r}): argument")
    return args


def copy_json(value: Any) -> Any:
    """A deep copy of a parsed JSON value (dicts, lists, scalars), at any depth.

    Unlike ``copy.deepcopy`` it does not recurse, so a 10,000-deep answer is copied
    like a flat one. Tuples come back as lists (JSON has only arrays).
    """
    if not isinstance(value, (dict, list, tuple)):
        return value
    root: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, child in items:
            if isinstance(child, (dict, list, tuple)):
                copied: Any = {} if isinstance(child, dict) else []
                stack.append((child, copied))
            else:
                copied = child
            if isinstance(target, dict):
                target[key] = copied
            else:
                target.append(copied)
    return root


def command_line(command: Any, args: Any) -> tuple[str, list[str]]:
    """``Client.stdio``'s command and args, checked: a str where a list belongs is a TypeError."""
    if not isinstance(command, (str, os.PathLike)):
        raise TypeError(f"Client.stdio: command must be a string, not {type(command).__name__}")
    if args is None:
        return os.fspath(command), []
    if isinstance(args, (str, bytes, os.PathLike)):
        raise TypeError(
            f"Client.stdio: args must be a list of strings, not {type(args).__name__}; "
            f"write Client.stdio({os.fspath(command)!r}, [{args!r}]) for one argument"
        )
    if not isinstance(args, Sequence) or not all(isinstance(arg, (str, os.PathLike)) for arg in args):
        raise TypeError(f"Client.stdio: args must be a list of strings, not {args!r:.80}")
    return os.fspath(command), [os.fspath(arg) for arg in args]


def check_env(env: Any) -> None:
    if env is None:
        return
    if not isinstance(env, Mapping):
        raise TypeError(f"Client.stdio: env must be a dict of strings, not {type(env).__name__}")
    for key, value in env.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"Client.stdio: env must map strings to strings; {key!r}: {value!r:.40} is not")


def http_options(transport: type, where: str, url: Any, **options: Any) -> dict[str, Any]:
    """The HTTP options to hand to ``transport``, checked; one it does not take yet is a TypeError (never dropped)."""
    if not isinstance(url, str):
        raise TypeError(f"{where}: url must be a string, not {type(url).__name__}")
    options["connect_timeout"] = check_timeout(options["connect_timeout"], "connect_timeout", allow_default=False)
    retries = options["max_retries"]
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"{where}: max_retries must be a whole number >= 0, not {retries!r}")
    given = {key: value for key, value in options.items() if value is not None}
    accepted = inspect.signature(transport).parameters
    unsupported = sorted(key for key in given if key not in accepted)
    if unsupported:
        raise TypeError(f"{where}: this version's {transport.__name__} does not support {', '.join(unsupported)}")
    return given
