-- Statistics on how a provider's standings group: its module, its machine,
-- and the class it fails them for. The console's mesh and machine pages list
-- the first standings of each provider and class from the index
-- `failing_by_cause` (migration V8). Without these PostgreSQL multiplies the
-- three columns' selectivities as if they were unrelated, so a provider
-- failing 1,000 consumers was planned as 100 rows, and sorting them looked
-- cheaper than walking the index: every group's 1,000 rows were read to
-- list 50 (190 ms for a page at 100,000 standings, 40 ms with these). They
-- cost nothing on a write; ANALYZE (autovacuum's, or the one below) keeps them.
CREATE STATISTICS failing_group (dependencies, ndistinct)
    ON provider_module, provider_machine, class FROM failing;
ANALYZE failing;
