-- Grant words (mesh-grants, record 143): the newest word per
-- (machine, consumer, provision, from), whatever its kind, ordered like
-- every other word by where it stands in the event stream
-- (stream_epoch, stream_seq), never by the agent's clock.
CREATE TABLE grant_word (
    machine           text COLLATE "C" NOT NULL,
    consumer          text COLLATE "C" NOT NULL,
    provision         text COLLATE "C" NOT NULL,
    provider          text COLLATE "C" NOT NULL,  -- the grant's "from", module@machine
    kind              text        NOT NULL CHECK (kind IN ('unreachable', 'reachable', 'unchecked')),
    address           text,
    port              integer,
    failures          bigint,
    failing_since     timestamptz,
    last_reachable_at timestamptz,
    error             text,
    reason            text,
    said_at           timestamptz NOT NULL,
    stream_seq        bigint      NOT NULL,
    stream_epoch      bigint      NOT NULL,
    PRIMARY KEY (machine, consumer, provision, provider)
);
