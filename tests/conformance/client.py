"""The client under test for the official MCP conformance suite.

Run by ``../shared/tools/conformance-client.sh "python tests/conformance/client.py"``:
the suite appends the mock server's URL and sets ``MCP_CONFORMANCE_SCENARIO``
(and ``MCP_CONFORMANCE_PROTOCOL_VERSION`` with ``--spec-version``,
``MCP_CONFORMANCE_CONTEXT`` for scenarios that script their tool calls).

One generic behaviour serves every non-auth scenario, the way a real
application would use mcp_sync: connect (the era is detected, or pinned by
the protocol version the suite asks for), list the tools and call each one
with arguments made from its schema (or the calls the context scripts), then
render every prompt and read every resource the server offers. Elicitation
is accepted with the schema's defaults (SEP-1034), sampling and roots get
canned answers. The process exits non-zero only if connecting fails.

Scenarios named ``auth/*`` connect with :class:`mcp_sync.OAuth`: the mock
authorization servers approve at once, so ``on_authorize`` stands in for the
browser by requesting the authorization URL without following its redirect and
returning the ``Location``; the context's ``client_id``/``client_secret``
(pre-registration, client credentials) or ``private_key_pem`` (private_key_jwt)
are used when given, an ``idp_id_token`` selects cross-app access (exchanged at
``idp_token_endpoint``), and the Client ID Metadata Document URL is the one the
suite expects. A refused flow raises
AuthorizationError while connecting, so the process exits 1: the scenarios
that test a refusal allow (expect) that.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any
from urllib.parse import urljoin

import requests

import mcp_sync

log = logging.getLogger("conformance-client")
SAMPLES = {"string": "test", "integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}
CIMD_URL = "https://conformance-test.local/client-metadata.json"  # what auth/basic-cimd checks for


def follow_authorization(url: str) -> str:
    """The non-interactive user-agent: the mock server approves and redirects; return where to."""
    response = requests.get(url, allow_redirects=False, timeout=10)
    location = response.headers.get("Location")
    if response.status_code not in (301, 302, 303, 307, 308) or not location:
        raise mcp_sync.AuthorizationError(f"the authorization endpoint answered HTTP {response.status_code}")
    return urljoin(url, location)


def make_auth(scenario: str, context: dict[str, Any]) -> mcp_sync.OAuth | None:
    """The OAuth a user would configure for the scenario: the context carries pre-registered
    credentials (client secret or private key) and, for cross-app access, the enterprise
    identity provider's ID token and token endpoint."""
    if not scenario.startswith("auth/"):
        return None
    grant_type = "authorization_code"
    if scenario.startswith("auth/client-credentials"):
        grant_type = "client_credentials"
    elif context.get("idp_id_token"):
        grant_type = "cross_app_access"
    return mcp_sync.OAuth(
        client_name="mcp-sync-conformance",
        client_id=context.get("client_id"),
        client_secret=context.get("client_secret"),
        issuer=context.get("issuer"),
        private_key=context.get("private_key_pem"),
        signing_algorithm=context.get("signing_algorithm"),
        client_metadata_url=CIMD_URL,
        on_authorize=follow_authorization,
        grant_type=grant_type,
        id_token=context.get("idp_id_token"),
        idp_token_endpoint=context.get("idp_token_endpoint"),
        idp_client_id=context.get("idp_client_id"),
        timeout=10,
    )


def sample_value(schema: Any) -> Any:
    """A plausible value for a JSON Schema: its default, first enum value, or one of its type."""
    if not isinstance(schema, dict):
        return "test"
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    return SAMPLES.get(kind, "test") if isinstance(kind, str) else "test"


def sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments for every property of an object schema (required or not)."""
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    return {name: sample_value(prop) for name, prop in properties.items()}


def on_elicitation(params: dict[str, Any]) -> dict[str, Any]:
    schema = params.get("requestedSchema") or {}
    content = mcp_sync.apply_defaults(schema)
    for name in schema.get("required", []):
        content.setdefault(name, sample_value(schema.get("properties", {}).get(name)))
    return {"action": "accept", "content": content}


def on_sampling(params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "conformance-model"}


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or None
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    known = mcp_sync.MODERN_VERSIONS + mcp_sync.LEGACY_VERSIONS
    client = mcp_sync.Client.http(
        url,
        auth=make_auth(scenario, context),
        protocol_version=version if version in known else None,
        client_info={"name": "mcp-sync-conformance", "version": mcp_sync.__version__},
        timeout=20,
        on_elicitation=on_elicitation,
        on_sampling=on_sampling,
        on_roots=[],
    )
    try:
        client.connect()
    except mcp_sync.AuthorizationError as exc:  # refused flows: the auth/* scenarios expect an error exit
        log.error("authorization failed: %s", exc)
        client.close()
        return 1
    with client:
        log.info("scenario %s: %s %s", scenario, client.era, client.protocol_version)
        try:
            tools = list(client.tools())
        except mcp_sync.CapabilityError as exc:  # a server without tools: nothing to call
            log.info("%s", exc)
            tools = []
        log.info("tools: %s", [tool.name for tool in tools])
        if scenario in ("initialize", "json-schema-ref-no-deref"):
            return 0  # these check the handshake / that listing does not fetch $ref URLs
        calls = context.get("toolCalls") or [
            {"name": tool.name, "arguments": sample_arguments(tool.input_schema)} for tool in tools
        ]
        if scenario == "json-schema-2020-12-preservation":  # echo a rich schema back exactly as listed
            rich = next(tool for tool in tools if tool.name == "json_schema_2020_12_tool")
            calls = [{"name": "json_schema_echo", "arguments": {"schema": rich.input_schema}}]
        for call in calls:
            try:
                result = client.call_tool(call["name"], call.get("arguments") or {})
                log.info("%s -> %.200s", call["name"], result.text)
            except mcp_sync.MCPError as exc:
                log.info("%s failed: %s", call["name"], exc)
        exercise_prompts_and_resources(client)
    return 0


def exercise_prompts_and_resources(client: mcp_sync.Client) -> None:
    capabilities = client.server_capabilities
    try:
        if "prompts" in capabilities:
            for prompt in client.prompts():
                arguments = {arg.name: "test" for arg in prompt.arguments}
                client.get_prompt(prompt.name, arguments)
        if "resources" in capabilities:
            for resource in client.resources():
                client.read_resource(resource.uri)
    except mcp_sync.MCPError as exc:
        log.info("prompts/resources: %s", exc)


if __name__ == "__main__":
    sys.exit(main())
