"""The one JSON text form for anything journaled or published: sorted keys, no spaces, UTF-8 as is.

The journal hashes this text (the chain must be reproducible from the stored text) and the core compares
state documents by it, so both must produce exactly the same bytes for the same data."""

from __future__ import annotations

import json
import json.encoder
from typing import Any

# One encoder for every call: ``json.dumps`` with these arguments builds a new ``JSONEncoder`` each time (a hot
# path: each input's records and state documents). The same text as ``json.dumps(data, sort_keys=True,
# separators=(",", ":"), ensure_ascii=False)``; the encoder keeps no state between calls.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)

# ``JSONEncoder.encode`` in turn builds its C encoder (``_json.make_encoder``) and a closure on every call: ~13
# times a card (issue 44). Built once here with the arguments ``_ENCODER.encode`` passes it, the same C code writes
# the same text. It is given no ``markers`` dict (``check_circular=False``): a dict shared between calls would keep
# the ids of an encode that raised, and between threads see another's; without it the encoder holds no state, and
# a circular structure (never journaled: it has no JSON text) raises RecursionError instead of ValueError.
_C_MAKE_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODE: Any = (
    None
    if _C_MAKE_ENCODER is None
    else _C_MAKE_ENCODER(
        None,  # markers: see above
        _ENCODER.default,
        json.encoder.encode_basestring,  # ensure_ascii=False
        None,  # indent
        _ENCODER.key_separator,
        _ENCODER.item_separator,
        _ENCODER.sort_keys,
        _ENCODER.skipkeys,
        _ENCODER.allow_nan,
    )
)


def canonical(data: Any) -> str:
    if _C_ENCODE is None:
        return _ENCODER.encode(data)
    return "".join(_C_ENCODE(data, 0))
