"""The test App's RSA key pair (made once per test session) and webhook signing."""

from __future__ import annotations

import functools
import hashlib
import hmac
import uuid
from dataclasses import dataclass

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


@dataclass(frozen=True, slots=True)
class KeyPair:
    private_pem: bytes  # PKCS#8 PEM, what a GitHub App's downloaded .pem holds in substance
    public_pem: bytes  # SubjectPublicKeyInfo PEM, what the stand-in verifies JWTs with


@functools.cache
def app_key_pair() -> KeyPair:
    """The session's App key pair: generated on first use, then the same object every call."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return KeyPair(private_pem, public_pem)


def sign_webhook(secret: bytes, body: bytes) -> str:
    """The `X-Hub-Signature-256` value GitHub sends: "sha256=" + hex HMAC-SHA256 of the raw body."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def webhook_headers(secret: bytes, body: bytes, event: str, delivery_id: str | None = None) -> dict[str, str]:
    """Headers of one webhook delivery; pass the same `delivery_id` again to model a redelivery."""
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
        "X-Hub-Signature-256": sign_webhook(secret, body),
        "User-Agent": "GitHub-Hookshot/test",
        "Content-Type": "application/json",
    }
