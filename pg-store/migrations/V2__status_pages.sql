-- Status pages: the failing words, rendered for `status --json` ahead of
-- time, so that listing 100,000 standings reads a few thousand rows instead.
--
-- Each provider's failing words are split into 64 pages by a hash of the
-- consumer. A page row holds its words already rendered as the JSON of
-- `status` (lz4-compressed, written by `mesh-controller serve`) and the
-- said_at of each, for the silence count.
--
-- The `failing` table stays the truth. Every change to it marks its page
-- stale in the same transaction (the triggers below), whoever made it; a
-- reader takes clean pages as they are and reads the rows of stale pages
-- directly, all in one snapshot. The page builder writes a page only when
-- its version is still the one it read before reading the rows, so a page
-- is never marked clean over a change it did not see.

CREATE FUNCTION mesh_page(consumer text) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT ('x' || substr(md5(consumer), 1, 8))::bit(32)::integer & 63 $$;

ALTER TABLE failing ADD COLUMN page integer GENERATED ALWAYS AS (mesh_page(consumer)) STORED;
CREATE INDEX failing_by_page ON failing (provider_module, provider_machine, page);

CREATE TABLE status_page (
    provider_module  text    NOT NULL,
    provider_machine text    NOT NULL,
    page             integer NOT NULL,
    -- Bumped by every change to the page's failing words.
    version          bigint  NOT NULL DEFAULT 0,
    -- True until the builder wrote the page after the last change.
    stale            boolean NOT NULL DEFAULT true,
    -- How many standings the clean page holds.
    standings        integer NOT NULL DEFAULT 0,
    -- Their said_at, in page order: little-endian microseconds since 1970.
    said_at          bytea,
    -- Their rendered JSON (see controller/src/store/pages.rs), lz4.
    body             bytea,
    PRIMARY KEY (provider_module, provider_machine, page)
);
-- The body is compressed already.
ALTER TABLE status_page ALTER COLUMN said_at SET STORAGE EXTERNAL,
                        ALTER COLUMN body SET STORAGE EXTERNAL;
CREATE INDEX status_page_stale ON status_page (provider_module, provider_machine, page)
    WHERE stale;

CREATE FUNCTION mesh_pages_touched() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO status_page AS p (provider_module, provider_machine, page)
    SELECT DISTINCT provider_module, provider_machine, page FROM touched ORDER BY 1, 2, 3
    ON CONFLICT (provider_module, provider_machine, page)
    DO UPDATE SET stale = true, version = p.version + 1;
    RETURN NULL;
END
$$;

CREATE TRIGGER failing_inserted AFTER INSERT ON failing
    REFERENCING NEW TABLE AS touched
    FOR EACH STATEMENT EXECUTE FUNCTION mesh_pages_touched();
CREATE TRIGGER failing_updated AFTER UPDATE ON failing
    REFERENCING NEW TABLE AS touched
    FOR EACH STATEMENT EXECUTE FUNCTION mesh_pages_touched();
CREATE TRIGGER failing_deleted AFTER DELETE ON failing
    REFERENCING OLD TABLE AS touched
    FOR EACH STATEMENT EXECUTE FUNCTION mesh_pages_touched();

-- Words stored before this migration: their pages start stale.
INSERT INTO status_page (provider_module, provider_machine, page)
SELECT DISTINCT provider_module, provider_machine, page FROM failing;
