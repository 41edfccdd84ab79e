"""A user's signing key on the terminal side: an Ed25519 private key in a file encrypted under the user's PIN.

The table never holds a private key: its credentials file lists each user's PUBLIC key and roles
(``auth.py``). The user's private key lives in a key file on the terminal (``<key dir>/<user>.key``), encrypted
with AES-256-GCM under a key derived from the PIN by scrypt:

- scrypt N = 2**17, r = 8, p = 1: 128 MiB of memory and about 0.45 s on one core of the development machine
  (``benchmarks`` not needed: ``python -c "from controller.mqtt.userkeys import kdf_cost; print(kdf_cost())"``
  prints it). Memory-hard, so a GPU or an ASIC gains little over a CPU per guess.
- AES-256-GCM with a random 96-bit nonce; the associated data is the canonical JSON of every other field
  (format, user, public key, KDF parameters), so a file whose user, public key or parameters were changed does
  not decrypt.
- PINs: at least 6 digits (``check_pin``).

What this protects: nothing a broker account can read (a signed command, the table's credentials file) holds
anything derived from the PIN, so there is nothing to brute-force offline. What it does not: whoever copies a
key file can try PINs offline at ~0.45 s x 10**6 PINs (about 5 core-days for 6 digits): the key file is the
"something you have" and must stay on the terminal (mode 0600); docs/security.md.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import secrets
import time
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

FORMAT = "tablectl-user-key-v1"
SCRYPT_N = 2**17
SCRYPT_R = 8
SCRYPT_P = 1
MIN_SCRYPT_N = 2**15  # files asking for less are refused (a tampered file must not make guessing cheap)
MIN_PIN_DIGITS = 6
KEY_DIR_ENV = "TABLECTL_KEY_DIR"
_PIN = re.compile(rf"^[0-9]{{{MIN_PIN_DIGITS},32}}$")
USER_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,32}\Z")


class KeyFileError(ValueError):
    """The key file is missing, damaged, for another user, or the PIN is wrong (never says which PIN digit)."""


def check_pin(pin: str) -> None:
    if not isinstance(pin, str) or not _PIN.match(pin):
        raise KeyFileError(f"a PIN is {MIN_PIN_DIGITS} to 32 digits")


def default_key_dir() -> Path:
    """``$TABLECTL_KEY_DIR``, else ``~/.config/tablectl/keys``."""
    env = os.environ.get(KEY_DIR_ENV)
    return Path(env) if env else Path.home() / ".config" / "tablectl" / "keys"


def key_path(key_dir: str | Path, user: str) -> Path:
    if not USER_NAME.match(user):
        raise KeyFileError(f"user {user!r}: 1-32 letters, digits, '_', '.', '-'")
    return Path(key_dir) / f"{user}.key"


def _kdf(pin: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return Scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(pin.encode("utf-8"))


def _aad(doc: dict[str, object]) -> bytes:
    head = {k: v for k, v in doc.items() if k != "ciphertext"}
    return json.dumps(head, sort_keys=True, separators=(",", ":")).encode()


def public_key_hex(private_key: Ed25519PrivateKey) -> str:
    return (
        private_key.public_key()
        .public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        .hex()
    )


def encrypt_key(user: str, pin: str, private_key: Ed25519PrivateKey | None = None) -> bytes:
    """The key file's bytes for ``user`` (a new key unless one is given)."""
    check_pin(pin)
    if not USER_NAME.match(user):
        raise KeyFileError(f"user {user!r}: 1-32 letters, digits, '_', '.', '-'")
    key = private_key or Ed25519PrivateKey.generate()
    salt, nonce = secrets.token_bytes(16), secrets.token_bytes(12)
    doc: dict[str, object] = {
        "format": FORMAT,
        "user": user,
        "public_key": public_key_hex(key),
        "kdf": {"name": "scrypt", "n": SCRYPT_N, "r": SCRYPT_R, "p": SCRYPT_P, "salt": salt.hex()},
        "aead": {"name": "aes-256-gcm", "nonce": nonce.hex()},
    }
    raw = key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    secret = _kdf(pin, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    doc["ciphertext"] = AESGCM(secret).encrypt(nonce, raw, _aad(doc)).hex()
    return (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()


def write_key_file(path: str | Path, user: str, pin: str) -> str:
    """Create ``path`` (mode 0600, parent 0700) with a new key for ``user``; returns the public key (hex)."""
    data = encrypt_key(user, pin)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return str(json.loads(data)["public_key"])


def _field(doc: dict[str, object], name: str, kind: type) -> object:
    value = doc.get(name)
    if not isinstance(value, kind):
        raise KeyFileError(f"key file: {name} missing or not a {kind.__name__}")
    return value


def decrypt_key(data: bytes, user: str, pin: str) -> Ed25519PrivateKey:
    """The private key from a key file's bytes; ``KeyFileError`` for a wrong PIN or a damaged file."""
    check_pin(pin)
    return _decrypt_cached(hashlib.sha256(data).digest(), data, user, pin)


@functools.lru_cache(maxsize=16)
def _decrypt_cached(_digest: bytes, data: bytes, user: str, pin: str) -> Ed25519PrivateKey:
    # scrypt costs ~0.45 s on purpose; a process that signs many commands for the same user and PIN (a test,
    # the demo's supervisor) pays it once. The cache holds only what the right PIN opened.
    try:
        doc = json.loads(data)
    except ValueError:
        raise KeyFileError("key file is not JSON") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise KeyFileError(f"key file: not a {FORMAT} file")
    if doc.get("user") != user:
        raise KeyFileError(f"key file belongs to {str(doc.get('user'))[:32]!r}, not {user!r}")
    kdf = _field(doc, "kdf", dict)
    aead = _field(doc, "aead", dict)
    assert isinstance(kdf, dict) and isinstance(aead, dict)
    n, r, p = kdf.get("n"), kdf.get("r"), kdf.get("p")
    if kdf.get("name") != "scrypt" or not all(isinstance(v, int) for v in (n, r, p)):
        raise KeyFileError("key file: kdf must be scrypt with integer n, r, p")
    assert isinstance(n, int) and isinstance(r, int) and isinstance(p, int)
    if n < MIN_SCRYPT_N or r < 8 or not 1 <= p <= 16 or n > 2**20 or r > 32:
        raise KeyFileError(f"key file: scrypt parameters out of range (n >= {MIN_SCRYPT_N}, r >= 8)")
    if aead.get("name") != "aes-256-gcm":
        raise KeyFileError("key file: aead must be aes-256-gcm")
    try:
        salt = bytes.fromhex(str(kdf.get("salt")))
        nonce = bytes.fromhex(str(aead.get("nonce")))
        ciphertext = bytes.fromhex(str(_field(doc, "ciphertext", str)))
    except ValueError:
        raise KeyFileError("key file: salt, nonce and ciphertext must be hex") from None
    if len(salt) < 16 or len(nonce) != 12:
        raise KeyFileError("key file: salt or nonce too short")
    try:
        raw = AESGCM(_kdf(pin, salt, n, r, p)).decrypt(nonce, ciphertext, _aad(doc))
    except InvalidTag:
        raise KeyFileError("wrong PIN or damaged key file") from None
    key = Ed25519PrivateKey.from_private_bytes(raw)
    if public_key_hex(key) != doc.get("public_key"):
        raise KeyFileError("key file: the public key does not match the private key")
    return key


def load_key_file(path: str | Path, user: str, pin: str) -> Ed25519PrivateKey:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise KeyFileError(f"{path}: {exc.strerror or exc}") from None
    return decrypt_key(data, user, pin)


def kdf_cost() -> str:
    """One derivation with the shipped parameters, timed (for docs/security.md)."""
    t = time.perf_counter()
    _kdf("123456", b"\0" * 16, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    mib = 128 * SCRYPT_R * SCRYPT_N // 2**20
    took = time.perf_counter() - t
    return f"scrypt N=2**{SCRYPT_N.bit_length() - 1} r={SCRYPT_R} p={SCRYPT_P}: {mib} MiB, {took:.2f} s"
