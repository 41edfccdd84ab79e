"""How a SHA-256 digest or an Ed25519 public key is written everywhere (journal, checkpoints, manifests, user
keys, the command line): 64 lowercase hex digits. One definition for every check of such a text."""

from __future__ import annotations

import re

HEX64 = re.compile(r"^[0-9a-f]{64}\Z")
