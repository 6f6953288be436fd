-- Statistics on the provider key `status` and `node show` select standings
-- by (provider_module || '@' || provider_machine = ANY(the providers the
-- declaration assigns)). Without them PostgreSQL has none for that
-- expression and guesses 0.5% of the rows per provider: one provider failing
-- 100,000 consumers was planned as 500 rows, and whether the count that the
-- sentence waits for ran on one core or two hung on that guess (and on the
-- machine filter of `node show`), not on the real rows. With them the plan
-- follows the rows. They cost nothing on a write; ANALYZE (autovacuum's,
-- or the one below) keeps them.
CREATE STATISTICS failing_provider ON (provider_module || '@' || provider_machine) FROM failing;
ANALYZE failing;
