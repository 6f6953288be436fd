-- A provider now says when it begins counting down to retire a withdrawn
-- consumer (`retirement` with action `retiring`) and when it will retire
-- it: `status` names a consumer the declaration requires that is being
-- retired, with that time. Null for every other action and for the rows
-- stored before this release.
ALTER TABLE retirement ADD COLUMN retire_at timestamptz;
