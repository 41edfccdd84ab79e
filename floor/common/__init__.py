"""What every part of the floor shares, importing no other part: ``messages`` (what arrives from the floor broker,
checked at the door), ``notify`` (the archive's PostgreSQL NOTIFY), ``alerts`` (the floor's alerts), ``tableset``
(which tables a query is about), ``layout`` (the floor's pits and areas), ``rows`` and ``text`` (small helpers).
"""
