"""Supervisor / technician command credentials: per-user Ed25519 signatures, verified with public keys only.

- Each user has an Ed25519 key pair. The private key lives on the terminal side, in a key file encrypted under
  the user's PIN (``userkeys.py``: scrypt + AES-256-GCM). The table's credentials file holds only each user's
  PUBLIC key and roles (``firmware_configs/credentials.example.toml``): reading it lets nobody sign, and a
  sniffed signed command holds nothing derived from the PIN (an Ed25519 signature), so neither gives an
  offline PIN search anything to test.
- canonical command = JSON of {"action","args","nonce","role","site","table","ts","user"} with sorted keys,
  separators (",", ":"), UTF-8 (``ensure_ascii=False``); sig = lowercase hex of the 64-byte Ed25519 signature of
  it. ``site`` and ``table`` name the one table the command is for: a table refuses a command signed for another
  ("signed for table S1/T1"), so a signature relayed or re-sent elsewhere acts nowhere else (issue 37).
- accepted only with a fresh ``ts`` (|now - ts| <= window) and a nonce never seen before. Each accepted
  command is a chained journal record (``command_accepted``, with its nonce) written in the same transaction
  as the row of the nonce table ``cmd_nonces``; at start-up the nonce table is rebuilt from those records, so
  deleting the table's rows (a file-level attacker) does not make a replay possible.
- lockout (``Lockout``): 5 failed signatures in a user's name within 10 minutes lock that user out for 15
  minutes. Only the user named: a relay (the floor dashboard's one broker account for all its supervisors)
  passing on one user's bad signatures locks that user, never the relay and so never the others (issue 37). A
  source lockout recorded by an older version (``source:...`` keys) is still honoured until it ends. Every
  refusal is a chained ``command_refused`` record, so the lockout is re-derived from the journal after a restart.
"""

from __future__ import annotations

import json
import logging
import tomllib
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from controller.actions import SUPERVISOR_ACTIONS, TECHNICIAN_ACTIONS
from controller.hex64 import HEX64
from controller.journal.store import KIND_INDEXED, Journal, Transaction
from controller.mqtt import userkeys

log = logging.getLogger(__name__)
SIGNED_FIELDS = ("action", "args", "nonce", "role", "site", "table", "ts", "user")
OLD_FORMAT = (
    "signed without the site and table it is for (a signer older than this table): sign it again with this"
    " version (tablectl sign --site --table, the pit terminal, the floor dashboard)"
)
ACCEPTED_RECORD = "command_accepted"  # chained: user, role, action, nonce, ts, request_id
REFUSED_RECORD = "command_refused"  # chained: who, which source, why (the detail the sender never sees)

# Lockout (issue 13 §3): 5 failed signatures within 10 minutes -> refused for 15 minutes.
LOCKOUT_FAILURES = 5
LOCKOUT_WINDOW_S = 10 * 60
LOCKOUT_S = 15 * 60
NOT_AUTHORISED = "not authorised"  # what a sender of a refused signed command reads, unless NOT_ENROLLED
# What the sender reads when the signature does not verify with a key the table holds for that user and role
# (unknown user, role not held, another key): one text for the three, so it tells no user or role apart.
NOT_ENROLLED = "your key is not enrolled at table {table}"

# Who may do what. PT-2001 r.51: a chief inspector clears jams and replaces damaged cards, or calls a
# technician.
ROLE_ACTIONS: dict[str, frozenset[str]] = {
    "supervisor": frozenset(SUPERVISOR_ACTIONS),
    "technician": frozenset(TECHNICIAN_ACTIONS),
}


class AuthError(ValueError):
    """A command failed authentication. ``reason`` is the detail for the journal; ``code`` a short name;
    ``signature_failure``: counts towards the lockout (bad signature, unknown user, role not held); ``public``:
    what the sender may read (else only "not authorised")."""

    def __init__(
        self,
        reason: str,
        code: str = "refused",
        *,
        signature_failure: bool = False,
        public: str | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code
        self.signature_failure = signature_failure
        self.public = public

    def told(self, table_id: str) -> str:
        """What the sender reads (the journal keeps ``reason``): what the refusal may say in public (a command
        signed for another table, an old signer), else "your key is not enrolled at table T" for a signature no
        key the table holds verifies, else "not authorised"."""
        if self.public:
            return self.public
        return (
            NOT_ENROLLED.format(table=table_id or "this table") if self.signature_failure else NOT_AUTHORISED
        )


def canonical(cmd: dict[str, Any]) -> bytes:
    return json.dumps(
        {k: cmd[k] for k in SIGNED_FIELDS}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")


def sign(cmd: dict[str, Any], private_key: Ed25519PrivateKey) -> str:
    return private_key.sign(canonical(cmd)).hex()


def signature_valid(cmd: dict[str, Any], public_key: Ed25519PublicKey) -> bool:
    try:
        public_key.verify(bytes.fromhex(cmd["sig"]), canonical(cmd))
    except (InvalidSignature, ValueError):
        return False
    return True


@dataclass(frozen=True, slots=True)
class Credential:
    user: str
    roles: frozenset[str]
    public_key: str  # 64 hex digits (raw Ed25519 public key)

    def key(self) -> Ed25519PublicKey:
        return Ed25519PublicKey.from_public_bytes(bytes.fromhex(self.public_key))


class CredentialStore:
    def __init__(self, creds: dict[str, Credential]) -> None:
        self._creds = creds
        self._keys = {u: c.key() for u, c in creds.items()}

    @classmethod
    def load(cls, path: str | Path) -> CredentialStore:
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise AuthError(f"{path}: {exc}") from None
        return cls.from_dict(data, str(path))

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "credentials") -> CredentialStore:
        users = data.get("users", {})
        if not isinstance(users, dict):
            raise AuthError(f"{where}: [users] must be a table")
        creds = {}
        for user, entry in users.items():
            w = f"{where}: users.{user}"
            if not userkeys.USER_NAME.match(user) or not isinstance(entry, dict):
                raise AuthError(f"{w}: bad user name or entry")
            if "key" in entry or "iterations" in entry:
                raise AuthError(
                    f"{w}: an HMAC key of the old format (PIN-derived): re-enrol the user with "
                    '`tablectl sign --add-to` (docs/mqtt.md "Signed commands")'
                )
            unknown = set(entry) - {"roles", "public_key"}
            if unknown:
                raise AuthError(f"{w}: unknown setting(s) {', '.join(sorted(unknown))}")
            roles = entry.get("roles")
            if not isinstance(roles, list) or not roles or any(r not in ROLE_ACTIONS for r in roles):
                raise AuthError(f"{w}.roles: expected a non-empty list of {', '.join(ROLE_ACTIONS)}")
            pub = entry.get("public_key")
            if not isinstance(pub, str) or not HEX64.match(pub):
                raise AuthError(f"{w}.public_key: expected 64 lowercase hex digits (Ed25519 public key)")
            try:
                Ed25519PublicKey.from_public_bytes(bytes.fromhex(pub))
            except ValueError:
                raise AuthError(f"{w}.public_key: not an Ed25519 public key") from None
            creds[user] = Credential(user, frozenset(roles), pub)
        return cls(creds)

    def get(self, user: str) -> Credential | None:
        return self._creds.get(user)

    def public_key(self, user: str) -> Ed25519PublicKey | None:
        return self._keys.get(user)

    def users(self) -> dict[str, Credential]:
        return dict(self._creds)


def render_credentials(creds: dict[str, Credential]) -> str:
    out = [
        '# Command credentials: each user\'s Ed25519 PUBLIC key and roles (docs/mqtt.md "Signed commands").\n'
        "# No secret here: the private keys are in PIN-encrypted key files on the terminals.\n"
        "# Written by `tablectl sign --add-to`.\n"
    ]
    for c in sorted(creds.values(), key=lambda c: c.user):
        roles = ", ".join(f'"{r}"' for r in sorted(c.roles))
        out.append(f'\n[users."{c.user}"]\nroles = [{roles}]\npublic_key = "{c.public_key}"\n')
    return "".join(out)


def add_public_key(path: str | Path, user: str, roles: list[str], public_key: str) -> None:
    """Add or replace ``user`` in the credentials file (created if missing)."""
    path = Path(path)
    creds = CredentialStore.load(path).users() if path.exists() and path.read_text().strip() else {}
    if not userkeys.USER_NAME.match(user):
        raise AuthError(f"user {user!r}: 1-32 letters, digits, '_', '.', '-'")
    if any(r not in ROLE_ACTIONS for r in roles) or not roles:
        raise AuthError(f"roles {roles}: expected some of {', '.join(ROLE_ACTIONS)}")
    if not HEX64.match(public_key):
        raise AuthError("public key: expected 64 lowercase hex digits")
    creds[user] = Credential(user, frozenset(roles), public_key)
    path.write_text(render_credentials(creds))


def enrol(credentials: str | Path, key_file: str | Path, user: str, pin: str, roles: list[str]) -> str:
    """A new key pair for ``user``: the private key encrypted under ``pin`` into ``key_file`` (terminal side),
    the public key and roles into ``credentials`` (table side). Returns the public key (hex)."""
    try:
        public = userkeys.write_key_file(key_file, user, pin)
    except userkeys.KeyFileError as exc:
        raise AuthError(str(exc)) from None
    add_public_key(credentials, user, roles, public)
    return public


class NonceStore:
    """Used command nonces: a lookup table in the journal database, rebuilt at start-up from the chained
    ``command_accepted`` records (the table itself is not trusted: a file-level attacker could empty it)."""

    def __init__(self, journal: Journal, *, keep_s: int = 61, now: float | None = None) -> None:
        self.journal = journal
        self.keep_s = keep_s
        with journal.transaction() as tx:
            tx.execute(
                "CREATE TABLE IF NOT EXISTS cmd_nonces "
                "(nonce TEXT PRIMARY KEY, user TEXT NOT NULL, ts INTEGER NOT NULL)"
            )
            self._rebuild(tx, journal._clock() if now is None else now)

    def _rebuild(self, tx: Transaction, now: float) -> None:
        # Newest first along the (kind, seq) index; a command's ts is within the window of the journal's
        # clock when it was accepted, so the scan stops once records are older than twice the kept span.
        cutoff = now - self.keep_s
        cursor = tx.execute(
            f"SELECT ts, data FROM records WHERE kind = ? AND {KIND_INDEXED} ORDER BY seq DESC",
            (ACCEPTED_RECORD,),
        )
        recent = []
        for rec_ts, data in cursor:
            if rec_ts < cutoff - self.keep_s:
                break
            recent.append(data)
        for data in recent:
            try:
                doc = json.loads(data)
                nonce, user, ts = str(doc["nonce"]), str(doc["user"]), int(doc["ts"])
            except (ValueError, KeyError, TypeError):
                continue
            if ts >= cutoff:
                tx.execute(
                    "INSERT OR IGNORE INTO cmd_nonces(nonce, user, ts) VALUES (?,?,?)", (nonce, user, ts)
                )

    def use(self, tx: Transaction, nonce: str, user: str, ts: int, *, forget_before: int) -> bool:
        """Record the nonce in ``tx``; False if it was seen before. Nonces older than ``forget_before`` are
        pruned (a command that old is refused as stale anyway)."""
        if tx.execute("SELECT 1 FROM cmd_nonces WHERE nonce = ?", (nonce,)).fetchone():
            return False
        tx.execute("INSERT INTO cmd_nonces(nonce, user, ts) VALUES (?,?,?)", (nonce, user, ts))
        tx.execute("DELETE FROM cmd_nonces WHERE ts < ?", (forget_before,))
        return True


@dataclass(slots=True)
class Lockout:
    """Failed signatures per user and per source; pure (times passed in), rebuilt from journal records."""

    failures: dict[str, deque[float]] = field(default_factory=dict)
    locked_until: dict[str, float] = field(default_factory=dict)

    def locked(self, key: str, now: float) -> float | None:
        until = self.locked_until.get(key)
        return until if until is not None and now < until else None

    def fail(self, key: str, now: float) -> bool:
        """Count a failure; True if this one starts a lockout."""
        q = self.failures.setdefault(key, deque())
        q.append(now)
        while q and q[0] <= now - LOCKOUT_WINDOW_S:
            q.popleft()
        if len(q) >= LOCKOUT_FAILURES and self.locked(key, now) is None:
            self.locked_until[key] = now + LOCKOUT_S
            q.clear()
            return True
        return False


def user_key(user: str) -> str:
    return f"user:{user}"


def source_key(role: str, account: str) -> str:
    return f"source:cmd/{role}:{account}"


class Authenticator:
    """``site``/``table``: this table (a command signed for another is refused). ``credentials_file``: where
    ``store`` was read; read again when it changed (an enrolment with ``tablectl sign --add-to`` takes effect at
    the next signed command, no restart). A changed file that does not load keeps the previous credentials
    (logged) and is tried again at the next command."""

    def __init__(
        self,
        store: CredentialStore,
        nonces: NonceStore,
        *,
        site: str,
        table: str,
        window_s: int = 30,
        credentials_file: str | Path | None = None,
    ) -> None:
        self.site, self.table = site, table  # this table: a command signed for another is refused
        self.store = store
        self.nonces = nonces
        self.window_s = window_s
        self.lockout = Lockout()
        self._rebuild_lockout(nonces.journal)
        self.credentials_file = Path(credentials_file) if credentials_file is not None else None
        self._stamp = self._file_stamp()

    def _file_stamp(self) -> tuple[int, int, int] | None:
        if self.credentials_file is None:
            return None
        try:
            st = self.credentials_file.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def reload_if_changed(self) -> None:
        stamp = self._file_stamp()
        if stamp is None or stamp == self._stamp or self.credentials_file is None:
            return
        try:
            self.store = CredentialStore.load(self.credentials_file)
        except AuthError as exc:
            log.warning("credentials changed but not loaded, the previous ones stay: %s", exc)
            return
        self._stamp = stamp
        log.info("credentials read again from %s (%d users)", self.credentials_file, len(self.store.users()))

    def _rebuild_lockout(self, journal: Journal) -> None:
        now = journal._clock()
        since = now - LOCKOUT_WINDOW_S - LOCKOUT_S
        with journal.transaction() as tx:
            rows = tx.execute(
                f"SELECT ts, data FROM records WHERE kind = ? AND {KIND_INDEXED} AND ts >= ? ORDER BY seq",
                (REFUSED_RECORD, since),
            ).fetchall()
        for rec_ts, data in rows:
            try:
                doc = json.loads(data)
            except ValueError:
                continue
            if isinstance(doc, dict) and doc.get("signature_failure"):
                for key in doc.get("lockout_keys", []):
                    if isinstance(key, str):
                        self.lockout.fail(key, rec_ts)

    def check_locked(self, user: str, role: str, account: str, now: float) -> None:
        for key in (user_key(user), source_key(role, account)):
            until = self.lockout.locked(key, now)
            if until is not None:
                raise AuthError(f"{key} locked out until {until:.0f} (too many failed signatures)", "locked")

    def verify(
        self, cmd: dict[str, Any], topic_role: str, now: float, *, account: str = "-", answered: bool = False
    ) -> None:
        """Raise ``AuthError`` unless ``cmd`` (already schema-valid) is authentic, fresh and unused. On success
        the nonce and a ``command_accepted`` record are committed together. ``answered``: the request id was
        already answered for this user (a retry): its used nonce is not a replay, the recorded answer goes back
        and nothing runs again."""
        user, role, action = cmd["user"], cmd["role"], cmd["action"]
        self.check_locked(user, topic_role, account, now)
        self.reload_if_changed()
        if role != topic_role:
            raise AuthError(f"role {role!r} signed but sent on the {topic_role} topic", "wrong_topic")
        if action not in ROLE_ACTIONS[role]:
            raise AuthError(f"action {action!r} is not a {role} action", "not_role_action")
        cred = self.store.get(user)
        if cred is None:
            raise AuthError(f"unknown user {user!r}", "unknown_user", signature_failure=True)
        if role not in cred.roles:
            raise AuthError(
                f"user {user!r} does not hold the {role} role", "role_not_held", signature_failure=True
            )
        public = self.store.public_key(user)
        if public is None or not signature_valid(cmd, public):
            raise AuthError(
                "bad signature (wrong key or altered command)", "bad_signature", signature_failure=True
            )
        # The table and freshness after the signature so that a forger learns nothing from the order of checks.
        if (cmd["site"], cmd["table"]) != (self.site, self.table):
            why = f"signed for table {cmd['site']}/{cmd['table']}, this is {self.site}/{self.table}"
            raise AuthError(why, "wrong_table", public=why)
        age = now - cmd["ts"]
        if abs(age) > self.window_s:
            raise AuthError(
                f"stale command (ts {age:+.0f} s from controller time, window {self.window_s} s)", "stale"
            )
        if answered:
            return
        with self.nonces.journal.transaction() as tx:
            if not self.nonces.use(
                tx, cmd["nonce"], user, cmd["ts"], forget_before=int(now) - 2 * self.window_s - 1
            ):
                raise AuthError("replayed command (nonce already used)", "replayed")
            tx.append(
                ACCEPTED_RECORD,
                {
                    "user": user, "role": role, "action": action, "nonce": cmd["nonce"], "ts": cmd["ts"],
                    "request_id": cmd.get("request_id"), "account": account,
                },
            )  # fmt: skip

    def failed(self, user: str | None, role: str, account: str, now: float) -> list[str]:
        """Count a failed signature; returns the keys whose lockout this one starts."""
        return [k for k in self.lockout_keys(user, role, account) if self.lockout.fail(k, now)]

    def lockout_keys(self, user: str | None, role: str, account: str) -> list[str]:
        """The user named (the schema requires one); the source only for a nameless failure."""
        return [user_key(user)] if user else [source_key(role, account)]
