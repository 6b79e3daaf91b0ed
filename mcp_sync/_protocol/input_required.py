"""Multi round-trip requests (modern ``input_required`` results, MRTR).

A ``tools/call``, ``resources/read`` or ``prompts/get`` may answer
``resultType: "input_required"`` with ``inputRequests`` (elicitation,
sampling, roots) and an opaque ``requestState``. :func:`complete` answers them
through the client's handlers (side by side: a person may take minutes) and
sends the request again with ``inputResponses`` and the state echoed exactly,
until the result is complete or ``input_required_max_rounds`` is spent. An
answer with no requests is load shedding: the same request is retried with the
state after a short backoff.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import attrs

from .._options import CallOptions
from .._threads import run_concurrently
from ..cancellation import CancellationToken
from ..exceptions import InputRequiredError, ProtocolError, ServerRequestError
from .handlers import INPUT_METHODS, RequestContext

if TYPE_CHECKING:
    from .session import Session

_LOAD_SHED_BACKOFF = (0.05, 0.25)  # first delay, cap (seconds)


def complete(session: Session, method: str, params: dict[str, Any], options: CallOptions) -> dict[str, Any]:
    """Send, then drive ``input_required`` rounds (R2-R8) to a complete result.

    A handler that fails makes this raise its HandlerError in both eras (legacy
    servers ask with requests of their own: see Handlers.attributing_failures).
    """
    attribution = session.handlers.attributing_failures()
    if attribution is None:  # no handler: nothing to attribute
        return _rounds(session, method, params, options)
    with attribution:
        return _rounds(session, method, params, options)


def _rounds(session: Session, method: str, params: dict[str, Any], options: CallOptions) -> dict[str, Any]:
    responses, state = options.input_responses, options.request_state
    if responses is not None or state is not None:
        options = attrs.evolve(options, input_responses=None, request_state=None)
    delay = _LOAD_SHED_BACKOFF[0]
    for _round in range(session.input_required_max_rounds + 1):
        round_params = params
        if responses is not None or state is not None:
            round_params = dict(params)
            if responses is not None:
                round_params["inputResponses"] = responses
            if state is not None:
                round_params["requestState"] = state  # R3: echoed exactly, never inspected
        result = session.send_cached(method, round_params, options)  # C2: retries bypass the cache
        if result.get("resultType", "complete") != "input_required":
            return result
        requests = result.get("inputRequests")
        new_state = result.get("requestState")
        if requests is not None and not isinstance(requests, dict):
            raise ProtocolError(f"{method}: inputRequests is not an object", method=method)
        if new_state is not None and not isinstance(new_state, str):
            raise ProtocolError(f"{method}: requestState is not a string", method=method)
        state = new_state
        if not requests:  # load shedding: retry with the state after a short backoff
            responses = None
            time.sleep(delay)
            delay = min(delay * 2, _LOAD_SHED_BACKOFF[1])
            continue
        responses = answer(session, method, requests, state, options.cancel)
    raise InputRequiredError(
        f"{method}: still input_required after {session.input_required_max_rounds} rounds",
        method=method,
        request_state=state,
    )


def answer(session: Session, method: str, requests: dict[str, Any], state: str | None,
           cancel: CancellationToken | None = None) -> dict[str, Any]:
    """Answer one round's ``inputRequests`` through the handlers; raises if one cannot be answered.

    A handler that takes a context gets one whose cancel token follows the call's ``cancel``
    (the server of a modern call has no request of its own to cancel: it asked in a result)."""
    handlers = session.handlers
    missing = {
        key: req
        for key, req in requests.items()
        if not (isinstance(req, dict) and req.get("method") in INPUT_METHODS and handlers.can_answer(req["method"]))
    }
    if missing:
        raise InputRequiredError(
            f"{method}: the server asks for input no handler can give: {sorted(missing)}",
            input_requests=requests,
            request_state=state,
            method=method,
        )
    stop = CancellationToken()
    unlink = cancel.add_callback(stop.cancel) if cancel is not None else None
    contexts = {
        key: RequestContext(server=session.name, target=session.connection.target, era="modern",
                            method=req["method"], request_id=key, cancel=stop)
        for key, req in requests.items()
    }
    # Handlers may take minutes (a person answering): run them side by side.
    try:
        outcomes = run_concurrently(
            {key: (handlers.answer, req["method"], req.get("params") or {}, contexts[key])
             for key, req in requests.items()},
            session.engine.name if session.engine else "server",
        )
    finally:
        if unlink is not None:
            unlink()
    answers: dict[str, Any] = {}
    for key, (value, error) in outcomes.items():
        if isinstance(error, ServerRequestError):
            raise InputRequiredError(
                f"{method}: the handler for {requests[key]['method']} refused: {error.message}",
                input_requests=requests,
                request_state=state,
                method=method,
            ) from error
        if error is not None:
            raise error  # a HandlerError (MCPError) with the handler's exception as __cause__
        answers[key] = value
    return answers
