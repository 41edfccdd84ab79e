"""Untrusted command payloads before the schemas: nesting and encodability checks, the request id a refusal
can still quote, and the journal-safe rendering of untrusted strings (controller/mqtt/commands.py)."""

from __future__ import annotations

import json
import re
from typing import Any

from controller.mqtt.schemas import MessageInvalid

MAX_DEPTH = 16  # nesting of a command document (the schemas need 3)


def journal_text(value: Any, limit: int = 64) -> str:
    """A journal-safe rendering of an untrusted string (lone surrogates escaped, bounded)."""
    s = value if isinstance(value, str) else ""
    return s[:limit].encode("utf-8", "backslashreplace").decode("utf-8")


def request_id_of(doc: Any) -> str | None:
    rid = doc.get("request_id") if isinstance(doc, dict) else None
    if isinstance(rid, str) and 0 < len(rid) <= 64 and re.fullmatch(r"[A-Za-z0-9_.:-]+", rid):
        return rid
    return None


def request_id_safe(payload: bytes) -> str | None:
    try:
        return request_id_of(json.loads(payload))
    except Exception:
        return None


def depth(doc: Any) -> int:
    """Nesting depth, iteratively (a deep document must not exhaust the stack here either)."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        value, d = stack.pop()
        deepest = max(deepest, d)
        if d > MAX_DEPTH:
            return d
        if isinstance(value, dict):
            stack.extend((v, d + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, d + 1) for v in value)
    return deepest


def well_formed(doc: Any) -> None:
    """Refuse what the schemas and the journal cannot hold: too deep, lone surrogates."""
    if depth(doc) > MAX_DEPTH:
        raise MessageInvalid(f"payload nested deeper than {MAX_DEPTH} levels")
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise MessageInvalid("payload has a lone surrogate (\\ud800-\\udfff) in a string") from None
    except (ValueError, RecursionError):
        raise MessageInvalid("payload cannot be represented") from None
