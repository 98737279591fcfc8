"""Throwaway TLS material for test servers on 127.0.0.1: a private CA and a server certificate.

:func:`write_tls_files` makes a fresh EC P-256 CA (valid two days) and a server certificate it
signed for ``127.0.0.1`` and ``localhost`` (valid one day), and writes them as PEM files. Clients
trust the server by trusting ``ca.pem`` alone (``GIT_SSL_CAINFO``, ``ssl.create_default_context(
cafile=...)``); nothing is added to any system store.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["TlsFiles", "write_tls_files"]


@dataclass(frozen=True)
class TlsFiles:
    """The PEM files :func:`write_tls_files` wrote.

    Attributes:
        ca_path: The CA certificate (``ca.pem``), for the clients' trust.
        cert_path: The server certificate (``server.pem``).
        key_path: The server's unencrypted PKCS#8 private key (``server.key``).
    """

    ca_path: Path
    cert_path: Path
    key_path: Path


def write_tls_files(folder: Path) -> TlsFiles:
    """Make a throwaway CA and a server certificate for 127.0.0.1 and localhost.

    Args:
        folder: Where ``ca.pem``, ``server.pem`` and ``server.key`` are written (created when
            missing; existing files are replaced).

    Returns:
        The paths of the three files.
    """
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Clipyard test CA")])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    files = TlsFiles(folder / "ca.pem", folder / "server.pem", folder / "server.key")
    files.ca_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    files.cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    files.key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return files


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not cert_sign,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )
