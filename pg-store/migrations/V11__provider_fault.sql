-- The provider fault its newest `alive` carries (since this release): the
-- provider cannot work as its administrator (its login refused, the
-- backend not reached). Null when it has none, and for the words of older
-- providers. `status` names it on the provider's line and it breaks
-- all-well at once.
ALTER TABLE alive ADD COLUMN fault_class text;
ALTER TABLE alive ADD COLUMN fault_error text;
ALTER TABLE alive ADD COLUMN fault_since timestamptz;
