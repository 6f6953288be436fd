-- Status pages are gone: `status` reads the failing rows in order, straight
-- from the primary key's index. Drop the pages, their triggers and column.
DROP TRIGGER IF EXISTS failing_inserted ON failing;
DROP TRIGGER IF EXISTS failing_updated ON failing;
DROP TRIGGER IF EXISTS failing_deleted ON failing;
DROP FUNCTION IF EXISTS mesh_pages_touched();
DROP TABLE IF EXISTS status_page;
DROP INDEX IF EXISTS failing_by_page;
ALTER TABLE failing DROP COLUMN IF EXISTS page;
DROP FUNCTION IF EXISTS mesh_page(text);

-- Listed in byte order (as a person reading names expects, whatever the
-- server's locale): the key columns compare as "C", so the primary key's
-- index serves `ORDER BY provider_module, provider_machine, consumer`.
ALTER TABLE failing
    ALTER COLUMN provider_module TYPE text COLLATE "C",
    ALTER COLUMN provider_machine TYPE text COLLATE "C",
    ALTER COLUMN consumer TYPE text COLLATE "C";
ALTER TABLE repair
    ALTER COLUMN provider_module TYPE text COLLATE "C",
    ALTER COLUMN provider_machine TYPE text COLLATE "C",
    ALTER COLUMN fault TYPE text COLLATE "C";
