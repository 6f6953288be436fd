-- One vocabulary (issue 32): what mesh-grants publishes are grant events,
-- so the table that keeps the newest of them is `grant_event`. Its primary
-- key (and the index under it) and its check on `kind` carry the table's
-- name, so they are renamed with it. Privileges go with the table: a
-- reader given SELECT on `grant_word` may read `grant_event`.
--
-- A `status` of 0.1 reads `grant_word` and cannot read a store migrated
-- by this release (it fails naming the store, exit 2).
ALTER TABLE grant_word RENAME TO grant_event;
ALTER TABLE grant_event RENAME CONSTRAINT grant_word_pkey TO grant_event_pkey;
ALTER TABLE grant_event RENAME CONSTRAINT grant_word_kind_check TO grant_event_kind_check;
