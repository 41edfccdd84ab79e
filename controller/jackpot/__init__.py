"""Progressive jackpot (PT-2001 r.38-50): pure logic, no I/O.

``config`` validates the table's ``[jackpot]`` section, ``meter`` keeps the meter and reserve exactly,
``chips`` collects the round's jackpot chips, ``hits`` evaluates and allocates prizes, ``math`` gives the
exact probabilities and returns, ``availability`` decides whether the jackpot may be played at all.
"""

from __future__ import annotations


class JackpotError(ValueError):
    """A jackpot operation or configuration was refused; the message names what is wrong."""
