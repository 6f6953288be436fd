-- Indexes for the status reads that select some of the standings: by the
-- provider key every read selects by (module@machine, written as the
-- statistics of V7 are) and the consumer, for a provider's or a consumer's
-- page; by the provider's machine and by the consumer's machine, for
-- `node show` and a machine's page (a standing is on a machine when its
-- provider or its consumer is). Without them each such read went through
-- every standing: at 100,000 standings 4-6 ms for a page showing one
-- consumer and 45 ms for a machine's, and the console reads every open
-- page twice a second. `status` of the whole mesh still reads every
-- standing.
CREATE INDEX failing_by_provider_key
    ON failing ((provider_module || '@' || provider_machine), consumer);
CREATE INDEX failing_by_provider_machine ON failing (provider_machine);
CREATE INDEX failing_by_consumer_machine ON failing (consumer_machine);
ANALYZE failing;
