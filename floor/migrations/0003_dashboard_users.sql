-- Floor dashboard users, sessions and its log (floor/users.py, sessions.py, logins.py).

-- One account per person. The password is kept only as a memory-hard hash (scrypt; the text of the hash names
-- its parameters and salt); a disabled account can neither log in nor keep a session.
CREATE TABLE dashboard_users (
    name          text    PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9_.-]{1,32}$'),
    role          text    NOT NULL CHECK (role IN ('viewer', 'supervisor')),
    password_hash text    NOT NULL,
    disabled      boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    changed_at    timestamptz NOT NULL DEFAULT now()
);

-- Logged-in sessions: only the SHA-256 of the random token the browser holds in its cookie.
CREATE TABLE dashboard_sessions (
    token_sha256 text    PRIMARY KEY CHECK (token_sha256 ~ '^[0-9a-f]{64}$'),
    user_name    text    NOT NULL REFERENCES dashboard_users (name) ON DELETE CASCADE,
    client       text    NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX dashboard_sessions_by_user ON dashboard_sessions (user_name);

-- Every login, logout, refusal and acknowledgement made through the dashboard, with who, from where and why.
-- Failed logins are counted from here (per account and per client address), so a restart lifts no lockout.
CREATE TABLE dashboard_log (
    id        bigserial   PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT now(),
    user_name text        NOT NULL,   -- as given (may name no account)
    client    text        NOT NULL,
    event     text        NOT NULL,
    detail    text        NOT NULL DEFAULT ''
);
CREATE INDEX dashboard_log_failures_by_user ON dashboard_log (user_name, at) WHERE event = 'login_failed';
CREATE INDEX dashboard_log_failures_by_client ON dashboard_log (client, at) WHERE event = 'login_failed';
