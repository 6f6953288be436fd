-- When the event stream stored each provider's newest `alive` (the bus's
-- clock, from the stream's message): `status` judges how recently a
-- provider was heard from by it, never by the provider's own clock, which
-- may be stepped back or ahead. Null for a row stored before this release
-- (its `said_at` is used until the provider's next `alive`).
--
-- Numbered 9: 8 is taken by the controller's own record (the release that
-- makes `status` know the controller).
ALTER TABLE alive ADD COLUMN stored_at timestamptz;

-- And when it stored each standing: a standing its provider published
-- before its newest start is left out once that provider is settled, and
-- "before" is read on the stream's clock too (a provider's clock may be
-- stepped between two runs).
ALTER TABLE failing ADD COLUMN stored_at timestamptz;
