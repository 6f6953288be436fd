-- A person's action from the console (kind `action`): what was asked in
-- `reason` (`approve`, `approve-delete`), who in `by_name`, the provider's
-- answer in `detail`, and here whether the provider did it. Null for
-- every other kind.
ALTER TABLE history ADD COLUMN done boolean;
