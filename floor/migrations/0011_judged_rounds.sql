-- Judged rounds (issue 44, floor/reports/judged.py): each settled round's judgement as the sessions report uses it
-- (every seat's bet, stake, result and decisions against basic strategy, or why the round was refused), written
-- by the judging pass (``tablectl floor judge``) off the archive's write path, so that ``floor sessions`` reads a
-- shift's judgements instead of replaying its rounds. A row is tied to the exact round it judged: ``digest`` is the
-- SHA-256 of the round as rebuilt from the archive (its description) and of the judging code and profiles; a
-- reader uses the row only when the round it rebuilds has that digest, and judges the round itself otherwise (a
-- round repaired since, new code). Keyed by the round's first archived event (a table's round ids are its own text).
CREATE TABLE judged_rounds (
    site        text        NOT NULL,
    table_id    text        NOT NULL,
    first_event bigint      NOT NULL,
    round_id    text        NOT NULL,
    digest      text        NOT NULL CHECK (digest ~ '^[0-9a-f]{64}$'),
    judgement   jsonb       NOT NULL,
    judged_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (site, table_id, first_event)
);
