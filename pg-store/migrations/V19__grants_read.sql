-- What the grant agent of each machine last said of its grants file
-- (`grant.read`, since this release): the file, whether it could be read,
-- why not, and the entries it refused (`refused`: [{index, consumer,
-- reason}], at most 20, the rest counted in `more`), its texts already cut.
-- One row per machine, the newest in the stream. `status` names a required
-- consumer whose grants the agent cannot check for it, and that breaks
-- all-well at once.
CREATE TABLE grants_read (
    machine      text COLLATE "C" NOT NULL PRIMARY KEY,
    file         text             NOT NULL,
    readable     boolean          NOT NULL,
    problem      text,
    refused      jsonb            NOT NULL,
    more         bigint           NOT NULL,
    said_at      timestamptz      NOT NULL,
    stored_at    timestamptz,
    stream_seq   bigint           NOT NULL,
    stream_epoch bigint           NOT NULL
);
