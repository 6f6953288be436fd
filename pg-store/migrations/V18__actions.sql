-- A person's action from the console (kind `action`): what was asked in
-- `reason` (`approve`, `approve-delete`, `acknowledge`), who in `by_name`,
-- the provider's answer (an acknowledgement's reason) in `detail`, and
-- here whether the provider did it and until when an acknowledgement
-- holds. Null for every other kind.
ALTER TABLE history ADD COLUMN done boolean, ADD COLUMN until timestamptz;
