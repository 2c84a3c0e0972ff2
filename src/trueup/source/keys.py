"""The source's two identities: an Ed25519 signing key and a TLS key with its certificate.

Followers pin the sha256 of each (the invitation carries both), so a server
that presents another certificate, or revisions signed by another key, is
refused however it got between them. Private keys are 0600 files in the
source folder: uvicorn reads the TLS key from a file, and ``source serve``
processes on several hosts share them by copying the folder.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trueup.errors import UsageError
from trueup.private import make_folders, write_file

if TYPE_CHECKING:  # cryptography loads only when a key is used
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

SIGNING_KEY = "signing.key"
#: The raw public half: a serving host needs it, never the private key.
SIGNING_PUBLIC = "signing.pub"
TLS_KEY = "tls.key"
TLS_CERT = "tls.crt"
ENDPOINT = "endpoint"
DEFAULT_PORT = 8443
#: A self-signed certificate is its own authority; followers pin it, not a CA.
CERT_DAYS = 3650


def fingerprint(data: bytes) -> str:
    """What a follower pins: ``sha256:`` and the hex digest of the raw key or DER certificate."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def cert_fingerprint(pem: bytes) -> str:
    return fingerprint(pem_to_der(pem))


def pem_to_der(pem: bytes) -> bytes:
    """The DER bytes of a one-certificate PEM (ssl gives DER for the peer; we store PEM)."""
    lines = pem.decode("ascii").strip().splitlines()
    return base64.b64decode("".join(line for line in lines if not line.startswith("-----")))


@dataclass(frozen=True)
class SourceKeys:
    """Where a source's keys live, and the public halves followers pin."""

    folder: Path

    @property
    def tls_key(self) -> Path:
        return self.folder / TLS_KEY

    @property
    def tls_cert(self) -> Path:
        return self.folder / TLS_CERT

    def remember_endpoint(self, endpoint: str) -> None:
        """Where ``source serve`` listens, for the invitations made next."""
        write_file(self.folder / ENDPOINT, endpoint.encode(), 0o644)

    def endpoint(self) -> str:
        try:
            return (self.folder / ENDPOINT).read_text().strip()
        except FileNotFoundError:
            return f"https://127.0.0.1:{DEFAULT_PORT}"

    def exists(self) -> bool:
        return all((self.folder / name).exists() for name in (SIGNING_PUBLIC, TLS_CERT))

    def require(self) -> SourceKeys:
        if not self.exists():
            raise UsageError(
                f"this machine is no source yet: no keys in {self.folder}",
                hint="run: trueup source init",
            )
        return self

    def public_key(self) -> bytes:
        return (self.folder / SIGNING_PUBLIC).read_bytes()

    def signing_fingerprint(self) -> str:
        return fingerprint(self.public_key())

    def tls_fingerprint(self) -> str:
        return cert_fingerprint(self.tls_cert.read_bytes())

    def sign(self, message: bytes) -> str:
        return base64.b64encode(self._signer().sign(message)).decode("ascii")

    def _signer(self) -> Ed25519PrivateKey:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        key = serialization.load_pem_private_key((self.folder / SIGNING_KEY).read_bytes(), None)
        assert isinstance(key, Ed25519PrivateKey)
        return key

    def create(self, hosts: list[str]) -> None:
        """Make both key pairs; an existing source keeps its keys (followers pinned them)."""
        if self.exists():
            raise UsageError(
                f"this machine is a source already (keys in {self.folder}); "
                "followers pinned them, so they are kept",
                hint="trueup source show   (or: trueup source serve)",
            )
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        make_folders(self.folder)
        signing = Ed25519PrivateKey.generate()
        pem = serialization.NoEncryption()
        write_file(
            self.folder / SIGNING_KEY,
            signing.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, pem
            ),
        )
        public = signing.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        write_file(self.folder / SIGNING_PUBLIC, public, 0o644)
        key, cert = _self_signed(hosts)
        write_file(self.tls_key, key)
        write_file(self.tls_cert, cert, 0o644)


def verify_signature(public_key: bytes, signature: str, message: bytes) -> bool:
    """Whether ``signature`` (base64) is the Ed25519 signature of ``message`` by ``public_key``."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(base64.b64decode(signature), message)
    except (InvalidSignature, ValueError):
        return False
    return True


def _self_signed(hosts: list[str]) -> tuple[bytes, bytes]:
    """A P-256 key and a self-signed certificate naming ``hosts`` (names or addresses)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "trueup source")])
    start = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(int.from_bytes(os.urandom(16), "big") >> 1)
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=CERT_DAYS))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return (
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
        cert.public_bytes(serialization.Encoding.PEM),
    )
