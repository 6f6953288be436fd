-- History: every transition the controller applies, kept append-only beside
-- the newest word of each key (see docs/contracts.md, "The history table").
-- A transition is a change of standing, never a repeat: a consumer that
-- began failing (class, error, since, attempts), recovered (reason), was
-- retired, re-enabled or deleted; a provider heard again after a silence
-- (since: when it became unheard); the controller following again after
-- following nothing (since: the last catch-up before); a repair done or
-- braked; a grant unreachable or reachable again. Rows are written in the
-- same transaction as the round they come from, and removed only by
-- `serve`'s retention (`--keep-history`), oldest first, in small batches.
CREATE TABLE history (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind             text COLLATE "C" NOT NULL,
    at               timestamptz NOT NULL,      -- the word's said_at, or when a silence ended
    provider_module  text COLLATE "C",          -- null for the controller's own
    provider_machine text COLLATE "C",
    consumer         text COLLATE "C",
    consumer_machine text COLLATE "C",
    provision        text,
    class            text,
    error            text,
    since            timestamptz,
    attempts         bigint,
    reason           text,
    fault            text,
    detail           text,
    stream_epoch     bigint,                    -- the word's place in the event stream
    stream_seq       bigint,
    stored_at        timestamptz,               -- when the stream stored the word
    recorded_at      timestamptz NOT NULL DEFAULT now()  -- the store's clock: retention
);
-- A consumer's history (`history CONSUMER`, status's recurrence) and a
-- provider's, newest first.
CREATE INDEX history_by_consumer ON history (consumer, at DESC);
CREATE INDEX history_by_provider ON history (provider_module, provider_machine, at DESC);
-- Status's recurrence: the recoveries and beginnings within its window.
CREATE INDEX history_by_kind ON history (kind, at);
-- Retention removes the oldest rows first.
CREATE INDEX history_by_recorded ON history (recorded_at);

-- The first `since` of the interval a standing is failing in: a provider
-- that restarts while it keeps failing a consumer says a new `since` (its
-- restart forgot the old one); the store keeps the first. Null for a row
-- stored before this release (its `since` is the first it knows).
ALTER TABLE failing ADD COLUMN first_since timestamptz;

-- The read-only store role, where one is made before this migration runs.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mesh_reader') THEN
        GRANT SELECT ON history TO mesh_reader;
    END IF;
END
$$;
