"""Signing keys for private_key_jwt: the algorithm a PEM key implies (RSA: RS256, EC by curve,
Ed25519: EdDSA), each assertion verifying with the public key as a server checks it; an
algorithm that is no private-key algorithm refused at once; PyJWT without cryptography
named; the key material never in a repr."""

from __future__ import annotations

from typing import Any, Callable

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from oauthkit import pem

import mcp_sync
from mcp_sync._jwt import SigningKey, client_assertion

KEYS: dict[str, Callable[[], Any]] = {
    "RS256": lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
    "ES384": lambda: ec.generate_private_key(ec.SECP384R1()),
    "EdDSA": ed25519.Ed25519PrivateKey.generate,
}


@pytest.mark.parametrize("algorithm", sorted(KEYS))
def test_a_pem_key_signs_with_the_algorithm_its_type_implies(algorithm: str) -> None:
    key = KEYS[algorithm]()
    signing = SigningKey(pem(key).encode())  # PEM bytes, no algorithm given
    assertion = client_assertion(signing, "svc", "https://as.example", now=1_000_000)
    assert signing.algorithm == algorithm and jwt.get_unverified_header(assertion)["alg"] == algorithm
    claims = jwt.decode(
        assertion, key.public_key(), algorithms=[algorithm], audience="https://as.example",
        options={"verify_exp": False, "verify_iat": False},
    )  # fmt: skip
    assert claims["iss"] == claims["sub"] == "svc" and claims["exp"] - claims["iat"] == 60


def test_an_algorithm_that_is_not_a_private_key_algorithm_is_refused() -> None:
    key = pem(ec.generate_private_key(ec.SECP256R1()))
    with pytest.raises(ValueError, match=r"signing algorithm must be one of .*not 'HS256'"):
        mcp_sync.OAuth(client_id="svc", private_key=key, signing_algorithm="HS256")


def test_pyjwt_without_cryptography_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jwt.algorithms, "has_crypto", False)  # as with `pip install PyJWT` alone
    key = pem(ec.generate_private_key(ec.SECP256R1()))
    with pytest.raises(mcp_sync.AuthorizationError, match="installed without cryptography") as caught:
        mcp_sync.OAuth(client_id="svc", private_key=key, grant_type="client_credentials")
    assert caught.value.step == "token" and "pip install PyJWT cryptography" in str(caught.value)


def test_the_key_never_shows_in_a_repr() -> None:
    text = pem(ec.generate_private_key(ec.SECP256R1()))
    key = SigningKey(text, "ES256", "key-7")
    key.sign({"probe": True})
    assert repr(key) == "<SigningKey ES256 kid='key-7'>"
    assert repr(SigningKey(text)) == "<SigningKey auto>"  # before the first signature: not yet known
