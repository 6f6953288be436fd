-- What the controller says of itself, so that `status` can tell a
-- controller that follows nothing from providers that say nothing.
--
-- One row per `mesh-controller serve` process (an instance), named by its
-- host, pid and start. Times are the store's clock (now()), so `status`
-- compares them with the store's clock too, whatever the clocks of the
-- hosts say:
--   pulled_at:  the last time it found nothing more waiting for it in the
--               event stream, every word it had taken stored (a pull that
--               came back short, nothing held for the store);
--   applied_at: the last time it committed a round of words;
--   following_since: when its current run of catch-ups began (a catch-up
--               later than 3 pull waits, at most 15 s, after the one before
--               begins a new run): a provider's silence counts only from
--               then, as the controller heard nothing before;
--   seen_at:    the last time it wrote this row (it does every second or
--               so while it runs and the store answers).
-- `serve` removes the rows of instances not seen for 7 days, except the one
-- that pulled last.
CREATE TABLE controller_instance (
    instance     text COLLATE "C" PRIMARY KEY,  -- "<host> pid <pid> started <started_at>"
    host         text        NOT NULL,
    pid          bigint      NOT NULL,
    started_at   timestamptz NOT NULL,          -- the process's own clock
    pull_wait_ms bigint      NOT NULL,          -- how long one of its pulls waits for a word
    pulled_at    timestamptz,
    applied_at   timestamptz,
    following_since timestamptz,
    seen_at      timestamptz NOT NULL
);
CREATE INDEX controller_instance_by_pull ON controller_instance (pulled_at DESC NULLS LAST);

-- When the store's record begins. A store that had followed a stream before
-- this migration keeps its words: null (the record is as complete as the
-- stream made it). A new store (first migrated now, or dropped and made
-- again) begins now, until `serve` meets its first stream: then it stays
-- now when the durable consumer had acknowledged words before (they were
-- taken from the stream by the store that was there, and come again only
-- as each provider repeats them, within its `--repeat-every`), and becomes
-- null when it had not (the new consumer gets every word the stream holds).
CREATE TABLE store_record (
    only_row  boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    begun_at  timestamptz
);
INSERT INTO store_record (begun_at)
SELECT CASE WHEN EXISTS (SELECT 1 FROM stream_epoch) THEN NULL ELSE now() END;

-- How often each provider says its failing words again (its `alive` word
-- carries it since this release; null from older providers).
ALTER TABLE alive ADD COLUMN repeat_every_seconds bigint;

-- The human `status` lists the standings grouped by provider, class and
-- error (one line for many consumers failing for one cause): this index
-- gives them in that order without a sort, so the listing still streams.
CREATE INDEX failing_by_cause ON failing
    (provider_module, provider_machine, class COLLATE "C", error COLLATE "C", consumer);
