"""JWT client assertions (RFC 7523 section 2.2, ``private_key_jwt``) for :class:`mcp_sync.OAuth`.

The crypto lives in the optional ``jwt`` extra (PyJWT with ``cryptography``),
imported here only when an assertion is signed, so neither ``import mcp_sync``
nor OAuth without a private key needs it.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, Mapping

from .exceptions import AuthorizationError

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ASSERTION_LIFETIME = 60  # seconds: an assertion is used once, right away
ALGORITHMS = ("ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "EdDSA")
EXTRA_HINT = "pip install PyJWT cryptography"


def _pyjwt() -> Any:
    try:
        import jwt  # the optional extra
        from jwt import algorithms
    except ImportError as exc:
        raise AuthorizationError(
            f"OAuth: private_key_jwt client authentication needs the jwt extra ({EXTRA_HINT}: PyJWT with "
            "cryptography), which is not installed",
            step="token",
        ) from exc
    if not getattr(algorithms, "has_crypto", False):
        raise AuthorizationError(
            f"OAuth: PyJWT is installed without cryptography; private_key_jwt needs both ({EXTRA_HINT})",
            step="token",
        )
    return jwt


class SigningKey:
    """A private key for client assertions, from PEM text/bytes or a JWK (dict or JSON string).

    The algorithm is the one given, else the JWK's ``alg``, else what the key type
    implies (EC P-256: ES256, RSA: RS256). Loading is deferred to the first
    signature so that a missing extra surfaces as an AuthorizationError there.
    The key material never appears in ``repr``.
    """

    def __init__(
        self, key: str | bytes | Mapping[str, Any], algorithm: str | None = None, key_id: str | None = None
    ) -> None:
        if algorithm is not None and algorithm not in ALGORITHMS:
            raise ValueError(f"signing algorithm must be one of {ALGORITHMS}, not {algorithm!r}")
        self._source = key
        self.algorithm = algorithm
        self.key_id = key_id
        self._key: Any = None

    def __repr__(self) -> str:
        return f"<SigningKey {self.algorithm or 'auto'}{f' kid={self.key_id!r}' if self.key_id else ''}>"

    def _load(self) -> Any:
        if self._key is not None:
            return self._key
        jwt = _pyjwt()
        source = self._source
        try:
            if isinstance(source, Mapping) or (isinstance(source, str) and source.lstrip().startswith("{")):
                jwk = dict(source) if isinstance(source, Mapping) else json.loads(source)
                self.key_id = self.key_id or jwk.get("kid")
                implied = {"EC": "ES256", "RSA": "RS256", "OKP": "EdDSA"}.get(str(jwk.get("kty")))
                self.algorithm = self.algorithm or jwk.get("alg") or implied
                self._key = jwt.PyJWK(jwk, self.algorithm).key
            else:
                from cryptography.hazmat.primitives import serialization

                data = source.encode() if isinstance(source, str) else source
                self._key = serialization.load_pem_private_key(data, password=None)
        except Exception as exc:  # the key's content is never put in the message
            raise AuthorizationError(
                f"OAuth: the private key for private_key_jwt cannot be loaded ({type(exc).__name__})", step="token"
            ) from None
        if self.algorithm is None:
            from cryptography.hazmat.primitives.asymmetric import ec, rsa

            if isinstance(self._key, rsa.RSAPrivateKey):
                self.algorithm = "RS256"
            elif isinstance(self._key, ec.EllipticCurvePrivateKey):
                self.algorithm = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}.get(
                    self._key.curve.name, "ES256"
                )
            else:
                self.algorithm = "EdDSA"
        return self._key

    def sign(self, claims: Mapping[str, Any], headers: Mapping[str, Any] | None = None) -> str:
        key = self._load()
        extra = dict(headers or {})
        if self.key_id:
            extra["kid"] = self.key_id
        token: str = _pyjwt().encode(dict(claims), key, algorithm=self.algorithm, headers=extra or None)
        return token


def client_assertion(key: SigningKey, client_id: str, audience: str, *, now: float | None = None) -> str:
    """A signed RFC 7523 client authentication assertion: ``iss`` and ``sub`` the client id,
    ``aud`` the authorization server, a fresh ``jti``, valid for ASSERTION_LIFETIME seconds."""
    issued = int(now if now is not None else time.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "jti": str(uuid.uuid4()),
        "iat": issued,
        "exp": issued + ASSERTION_LIFETIME,
    }
    return key.sign(claims)
