"""Tool schema checks: call arguments against ``inputSchema``, results against ``outputSchema``.

A tool's schemas come from the tools the client has listed (remembered by
``list_tools``); a call to a tool not seen yet lists the tools once, when there
is something to check (arguments to validate, or a ``structuredContent``). Each
schema is compiled once and kept in a bounded cache shared by every client: a
plain schema into a quick yes/no check (:mod:`._schema_subset`), and, when a value
fails it or the schema is not plain, into a ``jsonschema`` validator of its
declared ``$schema`` dialect (2020-12 when none is declared), which explains
the failure. ``$ref`` is resolved only inside the schema itself and the dialects'
bundled meta-schemas: nothing is ever fetched.

A schema the client cannot use as the spec asks is rejected, never treated as
permissive: a ``$schema`` naming a dialect ``jsonschema`` does not know (drafts 3,
4, 6, 7, 2019-09 and 2020-12 are known, and any the application registers with
``jsonschema``), or a ``$ref`` that cannot be resolved (a network URI among them,
since none is fetched). ``validate_output="strict"`` and ``validate=True`` raise
:class:`ProtocolError` saying so, ``"warn"`` logs it. Other broken schemas (an
invalid keyword value) make that one check pass, logged at debug level, since
the schema, not the data, is what is broken.

Checks of server-supplied schemas are bounded (#17.1): a schema and a value from a
server must never cost more than time linear in their size, nor hold the process.

- Regular expressions from a server are never run. Python's ``re`` backtracks: a
  pattern like ``^(a+)+$`` on 40 ``a`` and a ``!`` runs for hours while holding the
  GIL, so no timeout could stop it, and no test tells such patterns apart from safe
  ones in general. So ``pattern`` asserts nothing here (like ``format``, which is
  not asserted either), ``patternProperties`` applies none of its schemas, and an
  ``additionalProperties`` or ``unevaluatedProperties`` that depends on which keys
  match a pattern is not asserted. ``propertyNames`` is checked, its ``pattern``
  left out like any other. The checks can miss a mismatch there; they never report
  a false one.
- ``uniqueItems`` is checked in linear time (each item's canonical JSON form is
  hashed), not by comparing every pair.
- Each check has a bound on its work (:data:`CHECK_STEPS` keyword evaluations) and
  on its time (:data:`CHECK_SECONDS`, or less when the client's timeout is shorter):
  a schema whose ``$ref`` chains or combinators multiply the work is stopped there,
  and the value passes with a warning saying it was not checked.

``jsonschema`` is imported by the first check that needs it, never by ``import mcp_sync``.
"""

from __future__ import annotations

import collections
import itertools
import json
import logging
import threading
import time
import warnings
from typing import Any, Callable, Iterable, Iterator, Mapping, Union

from ._schema_subset import _BUDGET, CHECK_STEPS, CheckTooLong, _tick, compile_subset
from .exceptions import InvalidArguments, MCPError, ProtocolError
from .models import CallToolResult, Tool

log = logging.getLogger("mcp_sync")

#: ``validate_output`` values: log a mismatch, raise on a mismatch, or skip the check.
OUTPUT_MODES = ("warn", "strict", False)
OutputMode = Union[str, bool]
_CACHE_SIZE = 256  # compiled validators kept (least recently used dropped first)
_DEFAULT_DIALECT = "https://json-schema.org/draft/2020-12/schema"
# CHECK_STEPS (imported above, 200,000): the most keyword evaluations one check may make before it
# gives up (the value then passes, with a warning); defined with the budget it fills.
#: The most seconds one check may take (less when the client's timeout is shorter), likewise.
CHECK_SECONDS = 2.0
_MAX_ERRORS = 50  # errors collected to explain one failure: enough to pick the best, bounded
_MAX_MESSAGE = 300  # characters of one error message kept (jsonschema puts whole values in them)


def check_output_mode(value: OutputMode) -> OutputMode:
    """``validate_output`` as given, or ValueError naming the accepted values."""
    if value is True:
        return "warn"
    if value not in OUTPUT_MODES:
        raise ValueError(f"validate_output must be one of {list(OUTPUT_MODES)}, not {value!r}")
    return value


# -- compiled validators -----------------------------------------------------------------


class CompiledSchema:
    """One schema's checks: the quick subset check when the schema is plain enough
    (see :mod:`._schema_subset`), and the ``jsonschema`` validator, built the first
    time it is needed (a schema outside the subset, or a value that fails)."""

    __slots__ = ("_validator", "quick", "schema")

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = dict(schema)
        self.quick = compile_subset(self.schema)
        self._validator: Any = None

    def validator(self) -> Any:
        if self._validator is None:  # two threads may both build it: the same result, no harm
            self._validator = _compile(self.schema)
        return self._validator


class _ValidatorCache:
    """Compiled schemas by content, least recently used dropped past ``size``; thread-safe.

    Looked up by identity first (the same listed schema dict is checked on every
    call of its tool), then by content (a re-listed tool with an unchanged schema
    reuses its validator)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._by_content: collections.OrderedDict[str, CompiledSchema] = collections.OrderedDict()
        # id(schema) -> (schema, compiled): the entry holds the schema so its id is not reused
        self._by_identity: collections.OrderedDict[int, tuple[Mapping[str, Any], CompiledSchema]] = (
            collections.OrderedDict()
        )
        self.compiled = 0  # how many schemas were compiled (for tests and curiosity)

    def get(self, schema: Mapping[str, Any]) -> CompiledSchema:
        # A hit takes no lock (every call of a tool checks its result: this is the hot path):
        # get and move_to_end are single, atomic dict operations; an entry evicted in between
        # only costs the LRU order of that one entry.
        ident = id(schema)
        hit = self._by_identity.get(ident)
        if hit is not None and hit[0] is schema:
            try:
                self._by_identity.move_to_end(ident)
            except KeyError:
                pass
            return hit[1]
        key = json.dumps(schema, sort_keys=True, default=repr)
        with self._lock:
            compiled = self._by_content.get(key)
            if compiled is not None:
                self._by_content.move_to_end(key)
        if compiled is None:
            compiled = CompiledSchema(schema)
            with self._lock:
                self.compiled += 1
                self._by_content[key] = compiled
                while len(self._by_content) > self._size:
                    self._by_content.popitem(last=False)
        with self._lock:
            self._by_identity[id(schema)] = (schema, compiled)
            while len(self._by_identity) > self._size:
                self._by_identity.popitem(last=False)
        return compiled

    def clear(self) -> None:
        with self._lock:
            self._by_content.clear()
            self._by_identity.clear()


VALIDATORS = _ValidatorCache(_CACHE_SIZE)


class UnusableSchema(Exception):
    """A schema the spec says to reject rather than treat as permissive: an unsupported
    ``$schema`` dialect or a ``$ref`` that cannot be resolved (the message says which)."""


def _compile(schema: Mapping[str, Any]) -> Any:
    import jsonschema
    import jsonschema_specifications
    import referencing
    import referencing.exceptions

    def retrieve_locally(uri: str) -> referencing.Resource[Any]:
        # Only the meta-schemas bundled with jsonschema; never the network.
        try:
            return jsonschema_specifications.REGISTRY[uri.rstrip("#")]
        except LookupError:
            raise referencing.exceptions.NoSuchResource(ref=uri) from None  # type: ignore[call-arg]

    dialect = schema.get("$schema", _DEFAULT_DIALECT)
    if not isinstance(dialect, str):
        raise UnusableSchema(f"its $schema is not a dialect URI: {_short(repr(dialect), 100)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        cls = jsonschema.validators.validator_for({"$schema": dialect}, default=None)
    if cls is None:
        raise UnusableSchema(f"its $schema names a dialect this client does not support: {_short(dialect, 100)!r} "
                             "(supported: JSON Schema 2020-12, 2019-09, draft-07, -06, -04, -03)")
    registry: referencing.Registry[Any] = referencing.Registry(retrieve=retrieve_locally)  # type: ignore[call-arg]
    # patternProperties anywhere (a $ref may point at any part of the document): the keys
    # unevaluatedProperties would judge depend on patterns, which are never run.
    has_pattern_keys = '"patternProperties"' in json.dumps(schema, default=repr)
    return _bounded_class(cls, has_pattern_keys)(dict(schema), registry=registry)


_CLASSES: dict[tuple[Any, bool], Any] = {}
_CLASSES_LOCK = threading.Lock()


def _bounded_class(cls: Any, has_pattern_keys: bool) -> Any:
    """``cls`` (a jsonschema validator class) with every keyword counted against the budget,
    no server regex ever run, and ``uniqueItems`` in linear time. One class per dialect, kept."""
    key = (cls, has_pattern_keys)
    with _CLASSES_LOCK:
        found = _CLASSES.get(key)
    if found is not None:
        return found
    import jsonschema

    keywords: dict[str, Callable[..., Any]] = dict(cls.VALIDATORS)
    keywords["pattern"] = _ignored  # patterns are never run (see the module docstring)
    keywords["patternProperties"] = _ignored
    keywords["uniqueItems"] = _unique_items
    if "additionalProperties" in keywords:
        keywords["additionalProperties"] = _without_patterns(keywords["additionalProperties"])
    if has_pattern_keys and "unevaluatedProperties" in keywords:
        keywords["unevaluatedProperties"] = _ignored
    budgeted = {name: _budgeted(function) for name, function in keywords.items()}
    extended = jsonschema.validators.extend(cls, validators=budgeted)
    with _CLASSES_LOCK:
        _CLASSES[key] = extended
    return extended


def _budgeted(function: Callable[..., Any]) -> Callable[..., Any]:
    def keyword(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        _tick()
        return function(validator, value, instance, schema)

    return keyword


def _ignored(validator: Any, value: Any, instance: Any, schema: Any) -> None:
    return None


def _without_patterns(original: Callable[..., Any]) -> Callable[..., Any]:
    def additional_properties(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        if isinstance(schema, Mapping) and schema.get("patternProperties"):
            return None  # which keys are "additional" depends on patterns, which are never run
        return original(validator, value, instance, schema)

    return additional_properties


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if unique is True and isinstance(instance, list):
        pair = first_duplicate(instance)
        if pair is not None:
            from jsonschema.exceptions import ValidationError

            first, second = pair
            yield ValidationError(
                f"{_short(repr(instance), 100)} has non-unique elements (items {first} and {second} are equal)"
            )


class _Key:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def canonical(value: Any) -> tuple[Any, ...]:
    """A hashable form of a JSON value, equal for equal JSON values: object keys sorted,
    ``1`` equal to ``1.0``, ``True`` not equal to ``1``. Iterative: any depth, linear time
    (besides sorting each object's keys).

    Example::

        assert canonical({"a": [1, True]}) == canonical({"a": [1.0, True]})
        assert canonical([1]) != canonical([True])
    """
    tokens: list[Any] = []
    stack: list[Any] = [value]
    close = object()
    while stack:
        item = stack.pop()
        if item is close:
            tokens.append(")")
        elif isinstance(item, _Key):
            tokens.append(("k", item.name))
        elif isinstance(item, bool):
            tokens.append(("b", item))
        elif isinstance(item, (int, float)):
            tokens.append(("n", item))  # Python: 1 == 1.0 and hash(1) == hash(1.0)
        elif isinstance(item, str):
            tokens.append(("s", item))
        elif item is None:
            tokens.append(("z",))
        elif isinstance(item, (list, tuple)):
            tokens.append(("[", len(item)))
            stack.append(close)
            stack.extend(reversed(item))
        elif isinstance(item, Mapping):
            keys = sorted(item, key=str)
            tokens.append(("{", len(keys)))
            stack.append(close)
            for key in reversed(keys):
                stack.append(item[key])
                stack.append(_Key(str(key)))
        else:
            tokens.append(("?", repr(item)))
    return tuple(tokens)


def first_duplicate(items: Iterable[Any]) -> tuple[int, int] | None:
    """The indexes of the first item equal (as JSON) to an earlier one, or None; linear time
    (hashes :func:`canonical` forms instead of comparing every pair).

    Example: ``first_duplicate([1, True, {"a": 1}, 1.0])  # (0, 3)``
    """
    seen: dict[tuple[Any, ...], int] = {}
    for index, item in enumerate(items):
        key = canonical(item)
        if key in seen:
            return seen[key], index
        seen[key] = index
    return None


def all_unique(items: Iterable[Any]) -> bool:
    """Whether no two items are equal JSON values; linear time (see :func:`first_duplicate`).

    Example: ``all_unique([1, True, {"a": 1}]) and not all_unique([1, 1.0])``
    """
    return first_duplicate(items) is None


def _short(text: str, limit: int = _MAX_MESSAGE) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _named(what: str, args: tuple[Any, ...]) -> str:
    return what % args if args else what


def _path(parts: Iterable[Any]) -> str:
    text = "$"
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def mismatches(
    schema: Mapping[str, Any], instance: Any, what: str, seconds: float | None = None, *what_args: Any
) -> list[tuple[str, str]] | None:
    """Where and why ``instance`` does not match ``schema``, the most relevant first:
    ``[("$.a", "'x' is not of type 'number'"), ...]``.

    ``[]`` when it matches; None when the schema cannot be used (an unsupported dialect,
    an unresolvable ``$ref``, an invalid schema: the check is then skipped, with a debug
    log) or when the check ran out of its bound (:data:`CHECK_STEPS`, and ``seconds`` or
    :data:`CHECK_SECONDS`, whichever is less: skipped with a warning). Patterns are
    never run (see the module docstring). ``what`` names the value in those logs, ``%``-formatted
    with ``what_args`` only when a log is written (the common case formats nothing).

    Example::

        mismatches({"type": "object", "required": ["a"]}, {}, "x")  # [('$', "'a' is a required property")]
    """
    try:
        return check(schema, instance, what, seconds, *what_args)
    except UnusableSchema as exc:
        log.debug("mcp_sync: %s not checked: %s", _named(what, what_args), exc)
        return None


def check(
    schema: Mapping[str, Any], instance: Any, what: str, seconds: float | None = None, *what_args: Any
) -> list[tuple[str, str]] | None:
    """:func:`mismatches`, but a schema the spec says to reject (an unsupported dialect, an
    unresolvable ``$ref``) raises :class:`UnusableSchema` instead of answering None.

    Example::

        check({"$schema": "urn:my-dialect"}, 1, "x")  # raises UnusableSchema("... dialect ...")
    """
    try:
        compiled = VALIDATORS.get(schema)
        if compiled.quick is not None and compiled.quick(instance):
            return []  # the common case: a plain schema and a matching value, no jsonschema
    except Exception as exc:  # the schema, not the data, is broken: do not block the call over it
        log.debug("mcp_sync: %s not checked: its schema cannot be used (%s: %s)", _named(what, what_args),
                  type(exc).__name__, exc)
        return None
    limit = CHECK_SECONDS if seconds is None else max(0.0, min(seconds, CHECK_SECONDS))
    try:
        validator = compiled.validator()
        _BUDGET.steps, _BUDGET.deadline = CHECK_STEPS, time.monotonic() + limit
        errors = list(itertools.islice(validator.iter_errors(instance), _MAX_ERRORS))
        if not errors:
            return []
        from jsonschema.exceptions import best_match, relevance

        first = best_match(errors)
        ordered = [first, *sorted((e for e in errors if e is not first), key=relevance)]
        return [(_short(_path(e.absolute_path)), _short(e.message)) for e in ordered]
    except CheckTooLong:
        log.warning(
            "mcp_sync: %s not checked: its schema check ran past its bound (%d steps or %.1f s)",
            _named(what, what_args), CHECK_STEPS, limit,
        )
        return None
    except UnusableSchema:
        raise
    except Exception as exc:  # the schema, not the data, is broken: do not block the call over it
        import referencing.exceptions  # imported already: the validator that raised needed it

        if isinstance(exc, referencing.exceptions.Unresolvable):
            ref = getattr(exc, "ref", None)
            shown = _short(ref, 100) if isinstance(ref, str) else "?"
            raise UnusableSchema(f"its $ref {shown!r} cannot be resolved (nothing is fetched)") from None
        log.debug("mcp_sync: %s not checked: its schema cannot be used (%s: %s)", _named(what, what_args),
                  type(exc).__name__, exc)
        return None
    finally:
        _BUDGET.steps, _BUDGET.deadline = CHECK_STEPS, float("inf")  # leftovers never stop a later use


# -- per client ----------------------------------------------------------------------------


class ToolSchemas:
    """One client's view of its tools' schemas, and the checks ``call_tool`` runs."""

    def __init__(self, validate_output: OutputMode = "warn", validate_input: bool = False) -> None:
        self.validate_output = check_output_mode(validate_output)
        self.validate_input = bool(validate_input)
        self._lock = threading.Lock()
        self._listing = threading.Lock()
        self._tools: dict[str, Tool] = {}
        self._listed_for: set[str] = set()  # names a listing was already made for and did not show

    def remember(self, tools: Iterable[Tool]) -> None:
        """Called with each page ``list_tools`` returns."""
        with self._lock:
            for tool in tools:
                self._tools[tool.name] = tool
                self._listed_for.discard(tool.name)

    def _known(self, name: str) -> tuple[Tool | None, bool]:
        """The remembered tool, and whether looking further is pointless."""
        tool = self._tools.get(name)  # the common case, without the lock: one atomic dict read
        if tool is not None:
            return tool, True
        with self._lock:
            tool = self._tools.get(name)
            return tool, tool is not None or name in self._listed_for

    def listed(self, list_tools: Callable[[], Iterable[Tool]], name: str) -> Tool | None:
        """The tool ``name`` as the server listed it (remembered; else listed once), or None."""
        return self._tool(list_tools, name)

    def _tool(self, list_tools: Callable[[], Iterable[Tool]], name: str) -> Tool | None:
        tool, settled = self._known(name)
        if settled:
            return tool
        # One listing at a time: threads making their first calls at once wait for one
        # listing instead of each sending their own (bounded by the client's timeout).
        with self._listing:
            tool, settled = self._known(name)
            if settled:
                return tool
            try:
                for listed in list_tools():  # remember() sees every page
                    if listed.name == name:
                        break
            except MCPError as exc:
                log.debug("mcp_sync: listing tools to check %r failed: %s", name, exc)
            with self._lock:
                tool = self._tools.get(name)
                if tool is None:
                    if len(self._listed_for) > 1000:  # bound it; a stale entry only costs one more listing
                        self._listed_for.clear()
                    self._listed_for.add(name)
                return tool

    def check_arguments(
        self,
        list_tools: Callable[[], Iterable[Tool]],
        name: str,
        tool: Tool | None,
        arguments: Mapping[str, Any],
        validate: bool | None,
        seconds: float | None = None,
    ) -> None:
        """Raise :class:`InvalidArguments` when asked to check and the arguments do not match.

        ``seconds`` bounds the check (the call's timeout; None: at most ``CHECK_SECONDS``)."""
        if not (self.validate_input if validate is None else validate):
            return
        tool = tool or self._tool(list_tools, name)
        if tool is None:
            log.debug("mcp_sync: arguments of %r not checked: the server did not list that tool", name)
            return
        try:
            errors = check(tool.input_schema, dict(arguments), "the arguments of %r", seconds, name)
        except UnusableSchema as exc:  # asked to check, and it cannot be: not passed as if it had been
            raise ProtocolError(f"tool {name!r}: arguments not checked: its inputSchema is rejected: {exc}",
                                method="tools/call") from None
        if errors:
            path, why = errors[0]
            raise InvalidArguments(
                f"tool {name!r}: arguments do not match its inputSchema at {path}: {why}",
                path=path,
                errors=[f"{where}: {message}" for where, message in errors],
                method="tools/call",
            )

    def check_result(
        self,
        list_tools: Callable[[], Iterable[Tool]],
        name: str,
        tool: Tool | None,
        result: CallToolResult,
        seconds: float | None = None,
    ) -> None:
        """Warn about, or raise :class:`ProtocolError` for, a result that breaks the tool's outputSchema.

        ``seconds`` bounds the check (the call's timeout; None: at most ``CHECK_SECONDS``)."""
        mode = self.validate_output
        if mode is False or result.is_error:
            return
        structured = result.structured_content
        # "structuredContent": null is a value (any JSON value may be one), not a missing field
        present = structured is not None or "structuredContent" in result.raw
        if tool is None:
            tool = self._tools.get(name)  # the common case, without the lock: one atomic dict read
            if tool is None:
                # Only a listed tool is checked for a missing structuredContent: listing just for
                # that would cost a round trip on most calls (most tools return text only).
                tool = self._tool(list_tools, name) if present else None
                if tool is None:
                    return
        schema = tool.output_schema
        if schema is None:
            return
        if not present:
            problem = "the tool declares an outputSchema but returned no structuredContent"
        else:
            try:
                errors = check(schema, structured, "the result of %r", seconds, name)
            except UnusableSchema as exc:
                problem = f"structuredContent not checked: its outputSchema is rejected: {exc}"
            else:
                if not errors:
                    return
                path, why = errors[0]
                problem = f"structuredContent does not match its outputSchema at {path}: {why}"
        if mode == "strict":
            raise ProtocolError(f"tool {name!r}: {problem}", method="tools/call")
        log.warning("mcp_sync: tool %r: %s", name, problem)
