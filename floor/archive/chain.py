"""Audit checkpoints off the table: verify each signature against the table's key and check the chain.

The table's key is **enrolled** by an operator (``tablectl floor enrol``, floor/archive/enrol.py: from the
table's integrity manifest or the key itself; ``key_source = 'enrolled'``). A table not enrolled has no trusted
key: its checkpoints wait (``pending``) and a critical ``table_not_enrolled`` floor alert names the key they
claim; nothing a broker account publishes makes a key trusted. Only where the operator turned **trust on first
use** on for that table (``floor_tables.trust_on_first_use``) does the floor take the ``audit_public_key`` of its
retained ``state/software`` document (docs/mqtt.md) or, without one, the key of its first checkpoint that
verifies against the key it names (``key_source = 'first-checkpoint'``). A later ``state/software`` key that
differs from the key in use raises a critical ``audit_key_mismatch`` floor alert (and the key is not switched
silently: an inspector decides). Every checkpoint is kept (``checkpoints``), verified or not.

Chain (``controller.audit.checkpoint.follows``): each checkpoint names the one before it. A checkpoint is
``genesis`` (names none), ``linked`` (follows the archived one it names), ``anchor`` (the first the floor has
for the table, named predecessor never archived because the floor started later), ``broken`` (names one the
floor has with another hash, or one it never received although every event up to it is archived or alerted
missing) or ``rejected`` (bad shape or signature). ``broken`` and ``rejected`` raise critical floor alerts.
Each checkpoint with the table's signature then proves the events up to its ``last_event_id``
(floor/archive/verify_events.py).
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from controller.audit.checkpoint import GENESIS, CheckpointError, follows, parse_checkpoint, verify_checkpoint
from floor.archive.claims import announce, release
from floor.archive.verify_events import prove_events
from floor.common.alerts import raise_alert
from floor.common.messages import SOFTWARE_TOPIC, Envelope, TableRef
from floor.common.notify import notify
from floor.common.rows import one_row


def _alert(cur: psycopg.Cursor, table: TableRef, kind: str, message: str, details: dict[str, Any]) -> None:
    key = f"{kind}:{table.site}:{table.table_id}:{details.get('seq', details.get('key', ''))}"
    raise_alert(cur, table, kind, "critical", message, details, key)


def record_checkpoint(cur: psycopg.Cursor, env: Envelope) -> None:
    """Keep a checkpoint as it arrives (shape checked; signature and chain later, by ``check_chains``)."""
    try:
        cp = parse_checkpoint(env.data)
    except CheckpointError as exc:
        _alert(
            cur,
            env.table,
            "checkpoint_invalid",
            f"event {env.event_id}: {exc}",
            {"event_id": env.event_id, "seq": f"event-{env.event_id}"},
        )
        return
    if (cp.site, cp.table) != (env.table.site, env.table.table_id):
        _alert(
            cur,
            env.table,
            "checkpoint_invalid",
            f"event {env.event_id}: checkpoint names table {cp.site}/{cp.table}",
            {"event_id": env.event_id, "seq": cp.seq},
        )
        return
    cur.execute(
        "INSERT INTO checkpoints (site, table_id, seq, event_id, hash, prev_seq, prev_hash, last_event_id,"
        " key_id, doc, event_chain, walk_next, walk_expect)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (
            env.table.site,
            env.table.table_id,
            cp.seq,
            env.event_id,
            cp.hash,
            cp.prev_seq,
            cp.prev_hash,
            cp.last_event_id,
            cp.key_id,
            Jsonb(env.data),
            cp.event_chain,
            cp.last_event_id,
            cp.event_chain,
        ),
    )
    if cur.rowcount == 0:
        row = cur.execute(
            "SELECT hash, event_id FROM checkpoints WHERE site = %s AND table_id = %s AND seq = %s",
            (env.table.site, env.table.table_id, cp.seq),
        ).fetchone()
        if row and row[0] != cp.hash:
            _alert(
                cur,
                env.table,
                "checkpoint_conflict",
                f"two checkpoints for record {cp.seq} with different hashes (events {row[1]} and {env.event_id})",
                {"seq": cp.seq, "event_ids": [row[1], env.event_id]},
            )


def _trusted_key(cur: psycopg.Cursor, table: TableRef) -> str | None:
    row = cur.execute(
        "SELECT public_key, key_source, trust_on_first_use FROM floor_tables WHERE site = %s AND table_id = %s",
        (table.site, table.table_id),
    ).fetchone()
    key, source, tofu = (row[0], row[1], row[2]) if row else (None, None, False)
    if key is None and not tofu:
        _not_enrolled(cur, table)
        return None
    sw = cur.execute(
        "SELECT event_id, data->>'audit_public_key' FROM events WHERE site = %s AND table_id = %s"
        " AND topic = %s ORDER BY event_id DESC LIMIT 1",
        (table.site, table.table_id, SOFTWARE_TOPIC),
    ).fetchone()
    sw_event, sw_key = (
        (sw[0], sw[1].lower()) if sw and isinstance(sw[1], str) and len(sw[1]) == 64 else (None, None)
    )
    if key is None and sw_key is not None:
        cur.execute(
            "UPDATE floor_tables SET public_key = %s, key_source = 'state/software', key_event_id = %s"
            " WHERE site = %s AND table_id = %s",
            (sw_key, sw_event, table.site, table.table_id),
        )
        return sw_key
    if key is not None and sw_key is not None and sw_key != key:
        _alert(
            cur,
            table,
            "audit_key_mismatch",
            f"state/software (event {sw_event}) names audit key {sw_key[:16]}..., the floor trusts"
            f" {key[:16]}... ({source})",
            {"key": sw_key, "trusted": key, "source": source},
        )
    if key is None:
        first = cur.execute(
            "SELECT doc, event_id FROM checkpoints WHERE site = %s AND table_id = %s AND signature_ok IS NULL"
            " ORDER BY seq",
            (table.site, table.table_id),
        ).fetchall()
        for doc, event_id in first:
            try:
                cp = verify_checkpoint(doc, None)
            except CheckpointError as exc:  # not even signed by the key it names: never a key to trust
                seq = doc.get("seq")
                _set(cur, table, seq, False, "rejected", str(exc))
                _alert(
                    cur,
                    table,
                    "checkpoint_invalid",
                    f"checkpoint {seq} (event {event_id}): {exc}",
                    {"seq": seq},
                )
                continue
            cur.execute(
                "UPDATE floor_tables SET public_key = %s, key_source = 'first-checkpoint', key_event_id = %s"
                " WHERE site = %s AND table_id = %s",
                (cp.public_key, event_id, table.site, table.table_id),
            )
            return cp.public_key
    return key


def _not_enrolled(cur: psycopg.Cursor, table: TableRef) -> None:
    claimed = sorted(
        {r[0] for r in cur.execute(
            "SELECT key_id FROM checkpoints WHERE site = %s AND table_id = %s AND chain = 'pending'",
            (table.site, table.table_id),
        )}
    )  # fmt: skip
    if claimed:
        raise_alert(
            cur,
            table,
            "table_not_enrolled",
            "critical",
            f"checkpoints of a table whose audit key is not enrolled (they name key {', '.join(claimed)[:120]});"
            " none is trusted until an operator enrols the table (tablectl floor enrol)",
            {"key_ids": claimed},
            f"table_not_enrolled:{table.site}:{table.table_id}",
        )


def check_chains(conn: psycopg.Connection, software_seen: dict[TableRef, int] | None = None) -> int:
    """Verify pending checkpoints of every table and place them in the chain, then prove the events they cover
    (run by one worker at a time). Returns how many archived events were kept aside to be asked again.

    ``software_seen`` (kept by the caller between passes): the newest ``state/software`` event checked per
    table; a newer one is compared with the trusted key even when no checkpoint is pending."""
    software_seen = {} if software_seen is None else software_seen
    with conn.transaction():
        cur = conn.cursor()
        release(
            cur
        )  # unproven envelopes a verified checkpoint has reached: archived now (floor/archive/claims.py)
        tables = {
            TableRef(*r)
            for r in cur.execute(
                "SELECT DISTINCT site, table_id FROM checkpoints WHERE chain = 'pending'"
                " OR (signature_ok AND event_chain IS NOT NULL AND NOT events_proven)"
            )
        }
        for site, table_id, newest in cur.execute(
            "SELECT site, table_id, max(event_id) FROM events WHERE topic = %s GROUP BY 1, 2",
            (SOFTWARE_TOPIC,),
        ).fetchall():
            ref = TableRef(site, table_id)
            if software_seen.get(ref) != newest:
                software_seen[ref] = newest
                tables.add(ref)
    evicted = 0
    for table in sorted(tables, key=lambda t: (t.site, t.table_id)):
        with conn.transaction():
            _check_table(conn.cursor(), table)
            evicted += prove_events(conn.cursor(), table)
            notify(conn.cursor(), [table])  # its events proven: the pit map shows its verified state
    return evicted


def _check_table(cur: psycopg.Cursor, table: TableRef) -> None:
    key = _trusted_key(cur, table)
    if key is None:
        return
    contiguous = one_row(
        cur.execute(
            "SELECT contiguous_to FROM floor_tables WHERE site = %s AND table_id = %s",
            (table.site, table.table_id),
        ),
        f"floor_tables row of {table.site}/{table.table_id}",
    )[0]
    rows = cur.execute(
        "SELECT seq, doc, event_id FROM checkpoints WHERE site = %s AND table_id = %s AND chain = 'pending'"
        " ORDER BY seq",
        (table.site, table.table_id),
    ).fetchall()
    for seq, doc, event_id in rows:
        try:
            cp = verify_checkpoint(doc, key)
        except CheckpointError as exc:
            _set(cur, table, seq, False, "rejected", str(exc))
            _alert(
                cur, table, "checkpoint_invalid", f"checkpoint {seq} (event {event_id}): {exc}", {"seq": seq}
            )
            continue
        announce(cur, table, cp.last_event_id)  # signed: the table wrote every id up to it
        if cp.prev_seq == 0 and cp.prev_hash == GENESIS:
            _set(cur, table, seq, True, "genesis", None)
            continue
        prev = cur.execute(
            "SELECT doc, chain FROM checkpoints WHERE site = %s AND table_id = %s AND seq = %s",
            (table.site, table.table_id, cp.prev_seq),
        ).fetchone()
        if prev is not None and prev[1] == "pending":
            continue  # its predecessor is decided first (rows are in seq order; it may still be unverifiable)
        if prev is not None and prev[1] != "rejected" and follows(cp, parse_checkpoint(prev[0])):
            _set(cur, table, seq, True, "linked", None)
            continue
        if prev is not None:
            problem = (
                f"names checkpoint {cp.prev_seq} with hash {cp.prev_hash[:16]}..., the archived one differs"
            )
            _set(cur, table, seq, True, "broken", problem)
            _alert(cur, table, "checkpoint_chain", f"checkpoint {seq}: {problem}", {"seq": seq})
            continue
        earlier = one_row(
            cur.execute(
                "SELECT count(*) FROM checkpoints WHERE site = %s AND table_id = %s AND seq < %s",
                (table.site, table.table_id, seq),
            ),
            "count of earlier checkpoints",
        )[0]
        if earlier == 0:
            _set(cur, table, seq, True, "anchor", None)  # the floor's first checkpoint of this table
        elif contiguous >= event_id:
            problem = f"names checkpoint {cp.prev_seq}, which never reached the floor"
            _set(cur, table, seq, True, "broken", problem)
            _alert(cur, table, "checkpoint_chain", f"checkpoint {seq}: {problem}", {"seq": seq})
        # else: events before it are still being repaired; decide on a later pass


def _set(cur: psycopg.Cursor, table: TableRef, seq: int, ok: bool, chain: str, problem: str | None) -> None:
    cur.execute(
        "UPDATE checkpoints SET signature_ok = %s, chain = %s, problem = %s"
        " WHERE site = %s AND table_id = %s AND seq = %s",
        (ok, chain, problem, table.site, table.table_id, seq),
    )
