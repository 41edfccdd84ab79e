"""The one JSON text form for anything journaled or published: sorted keys, no spaces, UTF-8 as is.

The journal hashes this text (the chain must be reproducible from the stored text) and the core compares
state documents by it, so both must produce exactly the same bytes for the same data."""

from __future__ import annotations

import json
from typing import Any

# One encoder for every call: ``json.dumps`` with these arguments builds a new ``JSONEncoder`` each time (a hot
# path: each input's records and state documents). The same text as ``json.dumps(data, sort_keys=True,
# separators=(",", ":"), ensure_ascii=False)``; the encoder keeps no state between calls.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical(data: Any) -> str:
    return _ENCODER.encode(data)
