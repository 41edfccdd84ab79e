"""The command intake's rate limits: a token bucket per source (command topic + reply account) and one for
sources not seen before, checked BEFORE a message is queued (controller/mqtt/commands.py)."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass

RATE_LIMITED = "rate limited, retry later"  # answers of messages not parsed nor acted on: safe to send again
BUSY = "controller busy, retry"


@dataclass(slots=True)
class TokenBucket:
    rate: float  # tokens per second
    burst: float
    tokens: float = -1.0
    at: float = 0.0

    def take(self, now: float) -> bool:
        if self.tokens < 0:
            self.tokens, self.at = self.burst, now
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False


@dataclass(frozen=True, slots=True)
class RateLimits:
    """Per source (command topic + reply account): a pit terminal sends a few per second. A source not seen
    before needs a token of the new-source bucket, so inventing reply-account names does not buy fresh buckets
    faster than ``new_source_rate``, and a known source is never held back by another source's flood."""

    source_rate: float = 20.0
    source_burst: float = 50.0
    new_source_rate: float = 10.0
    new_source_burst: float = 20.0
    max_sources: int = 1024  # buckets kept (least recently used forgotten)


class SourceLimiter:
    """The buckets of ``RateLimits``: one per source (least recently used forgotten beyond ``max_sources``)."""

    def __init__(self, limits: RateLimits) -> None:
        self.limits = limits
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()
        self._new_sources = TokenBucket(limits.new_source_rate, limits.new_source_burst)

    def admit(self, role: str, account: str) -> bool:
        """The source's own bucket (a new source first needs a new-source token)."""
        now = time.monotonic()
        lim = self.limits
        key = f"{role}:{account}"
        bucket = self._buckets.get(key)
        if bucket is None:
            if not self._new_sources.take(now):
                return False
            bucket = self._buckets[key] = TokenBucket(lim.source_rate, lim.source_burst)
            while len(self._buckets) > lim.max_sources:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        return bucket.take(now)
