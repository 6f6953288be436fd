-- The newest `alive` word per provider. A provider that is down says
-- nothing, so status needs to know when each was last heard from (and,
-- once a restarted provider is settled, which standings it said before it
-- started and no longer has).
CREATE TABLE alive (
    provider_module       text COLLATE "C" NOT NULL,
    provider_machine      text COLLATE "C" NOT NULL,
    started_at            timestamptz      NOT NULL,
    alive_every_seconds   bigint           NOT NULL,
    failing_after_seconds bigint           NOT NULL,
    settled_at            timestamptz,
    consumers             bigint           NOT NULL,
    failing               bigint           NOT NULL,
    pass_seconds          double precision NOT NULL,
    said_at               timestamptz      NOT NULL,
    stream_seq            bigint           NOT NULL,
    PRIMARY KEY (provider_module, provider_machine)
);
