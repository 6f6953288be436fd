-- Who wrote a person's row of history: a note a person attached to a
-- consumer's failing interval (kind `note`, its text in `detail`), by the
-- name `mesh-controller note --by` gives (or the console token's name).
-- Null for the transitions providers and the controller make.
ALTER TABLE history ADD COLUMN by_name text;
