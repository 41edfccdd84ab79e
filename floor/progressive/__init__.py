"""The linked progressive's controller on the floor (issue 40, docs/progressive.md): one meter for a bank of
tables, fed by their archived jackpot events exactly once, published signed on the floor broker.

Modules, one job each: ``params`` (the link's parameters), ``config`` (link.toml), ``meter`` (the pure meter),
``journal`` (the hash-chained link journal), ``ledger`` (the link's rows in PostgreSQL), ``intake`` (the archived
events it takes), ``engine`` (one transaction per batch of changes), ``signing`` (the signed meter document),
``integrity`` (its software digest), ``control`` (suspend, resume, set, correct under dual control), ``report``
and ``service`` (``tablectl floor progressive run``)."""
