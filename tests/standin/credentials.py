"""App JWT verification and installation tokens, with GitHub's rules."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import jwt

CLOCK_DRIFT_S = 60  # GitHub tolerates this much skew on `iat`
MAX_LIFETIME_S = 600  # `exp` at most 10 minutes after `iat` (plus the drift)
TOKEN_LIFETIME_S = 3600


@dataclass(frozen=True, slots=True)
class Token:
    value: str
    installation_id: int
    permissions: dict[str, str]
    expires_at: float


def client_id(app_id: int) -> str:
    """The stand-in App's client ID, which GitHub also accepts as the JWT `iss`."""
    return f"Iv1.{app_id:016x}"


def jwt_problem(token: str, public_key_pem: bytes, app_id: int, now: float) -> str | None:
    """Why GitHub would refuse `token` as this App's JWT, or None when it is good."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        return "A JSON web token could not be decoded"
    if header.get("alg") != "RS256":
        return f"JWT algorithm must be RS256, not {header.get('alg')}"
    try:
        claims = jwt.decode(
            token,
            public_key_pem,
            algorithms=["RS256"],
            options={"verify_exp": False, "verify_iat": False, "verify_nbf": False, "verify_aud": False},
        )
    except jwt.InvalidSignatureError:
        return "JWT signature does not verify with the App's public key"
    except jwt.PyJWTError as problem:
        return f"JWT rejected: {problem}"
    iss, iat, exp = claims.get("iss"), claims.get("iat"), claims.get("exp")
    if str(iss) not in (str(app_id), client_id(app_id)):
        return f"'Issuer' claim ('iss') must be the App's id {app_id}, not {iss!r}"
    if not isinstance(iat, int) or iat > now + CLOCK_DRIFT_S:
        return "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"
    if not isinstance(exp, (int, float)) or exp <= now:
        return (
            "'Expiration time' claim ('exp') must be a numeric value representing the future time "
            "at which the assertion expires"
        )
    if exp - iat > MAX_LIFETIME_S + CLOCK_DRIFT_S:
        return "'Expiration time' claim ('exp') is too far in the future"
    return None


def new_token(installation_id: int, permissions: dict[str, str], now: float) -> Token:
    return Token("ghs_" + secrets.token_hex(18), installation_id, dict(permissions), now + TOKEN_LIFETIME_S)


def grants(permissions: dict[str, str], name: str, level: str) -> bool:
    """Whether `permissions` hold `name` at `level` or above (write implies read)."""
    held = permissions.get(name)
    return held == level or (held in ("write", "admin") and level == "read") or held == "admin"
