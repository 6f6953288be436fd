-- What the provider's last read of its contributions file refused, as its
-- newest `alive` carries it (since this release): the body's
-- `contributions` object ({readable, problem, refused, more}), its texts
-- already cut. Null for the words of older providers (unknown). `status`
-- names a required consumer refused, or behind a file that cannot be
-- read, and it breaks all-well at once.
ALTER TABLE alive ADD COLUMN contributions jsonb;
