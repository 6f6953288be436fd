-- The controller's store: the newest word of each kind per key.
--
-- Every row carries the word's said_at (the provider's clock) and the
-- JetStream stream sequence it arrived with. A word replaces a stored one
-- only when (said_at, stream_seq) is greater: an older word never overwrites
-- a newer one, a redelivered word changes nothing, and of two words said in
-- the same second the later in the stream wins.

-- The newest failing word per (provider, consumer); a recovered deletes it.
CREATE TABLE failing (
    provider_module  text        NOT NULL,
    provider_machine text        NOT NULL,
    consumer         text        NOT NULL,
    consumer_machine text,
    provision        text,
    class            text        NOT NULL,
    error            text        NOT NULL,
    since            timestamptz NOT NULL,
    attempts         bigint      NOT NULL,
    said_at          timestamptz NOT NULL,
    stream_seq       bigint      NOT NULL,
    PRIMARY KEY (provider_module, provider_machine, consumer)
);

-- The newest recovered word per (provider, consumer): it keeps a failing
-- word older than it (delivered late) from coming back.
CREATE TABLE recovered (
    provider_module  text        NOT NULL,
    provider_machine text        NOT NULL,
    consumer         text        NOT NULL,
    consumer_machine text,
    provision        text,
    reason           text        NOT NULL,
    said_at          timestamptz NOT NULL,
    stream_seq       bigint      NOT NULL,
    PRIMARY KEY (provider_module, provider_machine, consumer)
);

-- The newest repair word per (provider, fault); the fault is open unless
-- that word is 'repaired'.
CREATE TABLE repair (
    provider_module  text        NOT NULL,
    provider_machine text        NOT NULL,
    fault            text        NOT NULL,
    outcome          text        NOT NULL,
    detail           text        NOT NULL,
    next_attempt_at  timestamptz,
    said_at          timestamptz NOT NULL,
    stream_seq       bigint      NOT NULL,
    PRIMARY KEY (provider_module, provider_machine, fault)
);

-- The newest retirement word per (provider, consumer, action).
CREATE TABLE retirement (
    provider_module  text        NOT NULL,
    provider_machine text        NOT NULL,
    consumer         text        NOT NULL,
    action           text        NOT NULL,
    detail           text        NOT NULL,
    said_at          timestamptz NOT NULL,
    stream_seq       bigint      NOT NULL,
    PRIMARY KEY (provider_module, provider_machine, consumer, action)
);
