"""OAuth's options are checked when it is made, not in the middle of a flow: a grant type it
does not know, a negative step-up bound, a machine grant without a client id, cross-app access
without the ID token or the identity provider, a private key without the client it signs for.
A valid configuration reprs without secrets."""

from __future__ import annotations

from typing import Any

import pytest

import mcp_sync

IDP = "https://idp.example.com/oauth2/token"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"grant_type": "password"}, "grant_type must be one of ('authorization_code', 'client_credentials', "
                                     "'cross_app_access'), not 'password'"),
        ({"max_step_ups": -1}, "max_step_ups must be >= 0"),
        ({"grant_type": "client_credentials", "client_secret": "s"},
         "grant_type='client_credentials' needs client_id (and client_secret or private_key)"),
        ({"grant_type": "cross_app_access", "id_token": "t", "idp_token_endpoint": IDP},
         "grant_type='cross_app_access' needs client_id"),
        ({"grant_type": "cross_app_access", "client_id": "c", "idp_token_endpoint": IDP},
         "grant_type='cross_app_access' needs id_token and idp_token_endpoint"),
        ({"grant_type": "cross_app_access", "client_id": "c", "id_token": "t"},
         "grant_type='cross_app_access' needs id_token and idp_token_endpoint"),
        ({"private_key": {"kty": "EC"}}, "private_key authenticates a pre-registered client: pass client_id too"),
    ],
    ids=["grant", "step-ups", "cc-no-client", "xaa-no-client", "xaa-no-token", "xaa-no-idp", "key-no-client"],
)  # fmt: skip
def test_an_unusable_configuration_is_refused_when_made(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        mcp_sync.OAuth(**options)
    assert str(caught.value).startswith(message)


def test_the_edges_of_the_valid_configurations() -> None:
    assert mcp_sync.OAuth(max_step_ups=0).max_step_ups == 0  # never step up: fail on the first 403
    machine = mcp_sync.OAuth(client_id="svc", client_secret="s3cr3t", grant_type="client_credentials")
    assert repr(machine) == "<OAuth client_credentials>" and "s3cr3t" not in repr(machine)
    xaa = mcp_sync.OAuth(client_id="c", id_token=lambda: "t", idp_token_endpoint=IDP, grant_type="cross_app_access")
    assert xaa.auth_context is None and repr(xaa) == "<OAuth cross_app_access>"
