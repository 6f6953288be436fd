//! Writing a round of words: the newest word per key and kind (see
//! [`crate::model::reduce`]) as one multi-row statement per kind, in one
//! transaction. Each statement takes parallel arrays, one per column, from
//! one typed struct of its own.

use std::time::SystemTime;

use async_trait::async_trait;
use futures::future::try_join_all;
use mesh_sdk::event::{Alive, Failing, Recovered, Repair, RepairOutcome, Retirement};
use mesh_sdk::Event;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use super::connection::{PgStore, CONNECT_TIMEOUT, STATEMENT_TIMEOUT};
use super::{Store, StoreError};
use crate::model::reduce::{reduce, Keyed};
use crate::model::Word;

/// The statement that applies a round's `failing` words (the newest per
/// key), its parameters the columns of one typed struct (module, machine,
/// consumer, ... stream sequence, in the order below). A word is kept
/// unless a newer `recovered` of its key is stored, and replaces only an
/// older failing word. Public for the ingest benchmark, which runs it
/// through pgbench.
pub const UPSERT_FAILING: &str = "
INSERT INTO failing AS f (provider_module, provider_machine, consumer, consumer_machine,
                          provision, class, error, since, attempts, said_at, stream_seq, stream_epoch)
SELECT w.* FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                       $7::text[], $8::timestamptz[], $9::int8[], $10::timestamptz[], $11::int8[], $12::int8[])
    AS w(provider_module, provider_machine, consumer, consumer_machine, provision, class,
         error, since, attempts, said_at, stream_seq, stream_epoch)
WHERE NOT EXISTS (
    SELECT 1 FROM recovered r
    WHERE r.provider_module = w.provider_module AND r.provider_machine = w.provider_machine
      AND r.consumer = w.consumer AND (r.stream_epoch, r.stream_seq) > (w.stream_epoch, w.stream_seq))
ON CONFLICT (provider_module, provider_machine, consumer) DO UPDATE SET
    consumer_machine = EXCLUDED.consumer_machine, provision = EXCLUDED.provision,
    class = EXCLUDED.class, error = EXCLUDED.error, since = EXCLUDED.since,
    attempts = EXCLUDED.attempts, said_at = EXCLUDED.said_at, stream_seq = EXCLUDED.stream_seq,
    stream_epoch = EXCLUDED.stream_epoch
WHERE (f.stream_epoch, f.stream_seq) < (EXCLUDED.stream_epoch, EXCLUDED.stream_seq)";

/// Applies a round's `recovered` words ([`RecoveredColumns`]): each deletes
/// its key's failing word when older than itself, and is kept as its key's
/// newest recovered word.
const RECOVERED: &str = "
WITH w AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
                         $6::text[], $7::timestamptz[], $8::int8[], $9::int8[])
        AS w(provider_module, provider_machine, consumer, consumer_machine, provision,
             reason, said_at, stream_seq, stream_epoch)
), gone AS (
    DELETE FROM failing f USING w
    WHERE f.provider_module = w.provider_module AND f.provider_machine = w.provider_machine
      AND f.consumer = w.consumer AND (f.stream_epoch, f.stream_seq) < (w.stream_epoch, w.stream_seq)
)
INSERT INTO recovered AS r (provider_module, provider_machine, consumer, consumer_machine,
                            provision, reason, said_at, stream_seq, stream_epoch)
SELECT * FROM w
ON CONFLICT (provider_module, provider_machine, consumer) DO UPDATE SET
    consumer_machine = EXCLUDED.consumer_machine, provision = EXCLUDED.provision,
    reason = EXCLUDED.reason, said_at = EXCLUDED.said_at, stream_seq = EXCLUDED.stream_seq,
    stream_epoch = EXCLUDED.stream_epoch
WHERE (r.stream_epoch, r.stream_seq) < (EXCLUDED.stream_epoch, EXCLUDED.stream_seq)";

/// Applies a round's `repair` words ([`RepairColumns`]), the newest per
/// provider and fault.
const UPSERT_REPAIR: &str = "
INSERT INTO repair AS p (provider_module, provider_machine, fault, outcome, detail,
                         next_attempt_at, said_at, stream_seq, stream_epoch)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
                     $6::timestamptz[], $7::timestamptz[], $8::int8[], $9::int8[])
ON CONFLICT (provider_module, provider_machine, fault) DO UPDATE SET
    outcome = EXCLUDED.outcome, detail = EXCLUDED.detail,
    next_attempt_at = EXCLUDED.next_attempt_at, said_at = EXCLUDED.said_at,
    stream_seq = EXCLUDED.stream_seq,
    stream_epoch = EXCLUDED.stream_epoch
WHERE (p.stream_epoch, p.stream_seq) < (EXCLUDED.stream_epoch, EXCLUDED.stream_seq)";

/// Applies a round's `retirement` words ([`RetirementColumns`]), the newest
/// per provider, consumer and action.
const UPSERT_RETIREMENT: &str = "
INSERT INTO retirement AS t (provider_module, provider_machine, consumer, action, detail,
                             said_at, stream_seq, stream_epoch)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
                     $6::timestamptz[], $7::int8[], $8::int8[])
ON CONFLICT (provider_module, provider_machine, consumer, action) DO UPDATE SET
    detail = EXCLUDED.detail, said_at = EXCLUDED.said_at, stream_seq = EXCLUDED.stream_seq,
    stream_epoch = EXCLUDED.stream_epoch
WHERE (t.stream_epoch, t.stream_seq) < (EXCLUDED.stream_epoch, EXCLUDED.stream_seq)";

/// Applies a round's `alive` words ([`AliveColumns`]), the newest per provider.
const UPSERT_ALIVE: &str = "
INSERT INTO alive AS a (provider_module, provider_machine, started_at, alive_every_seconds,
                        failing_after_seconds, settled_at, consumers, failing, pass_seconds,
                        said_at, stream_seq, stream_epoch)
SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::int8[], $5::int8[],
                     $6::timestamptz[], $7::int8[], $8::int8[], $9::float8[],
                     $10::timestamptz[], $11::int8[], $12::int8[])
ON CONFLICT (provider_module, provider_machine) DO UPDATE SET
    started_at = EXCLUDED.started_at, alive_every_seconds = EXCLUDED.alive_every_seconds,
    failing_after_seconds = EXCLUDED.failing_after_seconds, settled_at = EXCLUDED.settled_at,
    consumers = EXCLUDED.consumers, failing = EXCLUDED.failing,
    pass_seconds = EXCLUDED.pass_seconds, said_at = EXCLUDED.said_at,
    stream_seq = EXCLUDED.stream_seq,
    stream_epoch = EXCLUDED.stream_epoch
WHERE (a.stream_epoch, a.stream_seq) < (EXCLUDED.stream_epoch, EXCLUDED.stream_seq)";

/// Applies a round's grant words ([`GrantColumns`]), the newest per
/// (machine, consumer, provision, from), whatever their kind.
const UPSERT_GRANT: &str = "
INSERT INTO grant_word AS g (machine, consumer, provision, provider, kind, address, port,
                             failures, failing_since, last_reachable_at, error, reason,
                             said_at, stream_seq, stream_epoch)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                     $7::int4[], $8::int8[], $9::timestamptz[], $10::timestamptz[], $11::text[],
                     $12::text[], $13::timestamptz[], $14::int8[], $15::int8[])
ON CONFLICT (machine, consumer, provision, provider) DO UPDATE SET
    kind = EXCLUDED.kind, address = EXCLUDED.address, port = EXCLUDED.port,
    failures = EXCLUDED.failures, failing_since = EXCLUDED.failing_since,
    last_reachable_at = EXCLUDED.last_reachable_at, error = EXCLUDED.error,
    reason = EXCLUDED.reason, said_at = EXCLUDED.said_at, stream_seq = EXCLUDED.stream_seq,
    stream_epoch = EXCLUDED.stream_epoch
WHERE (g.stream_epoch, g.stream_seq) < (EXCLUDED.stream_epoch, EXCLUDED.stream_seq)";

/// The columns of [`UPSERT_GRANT`], `$1` to `$15` in field order.
#[derive(Default)]
struct GrantColumns<'a> {
    machine: Vec<&'a str>,
    consumer: Vec<&'a str>,
    provision: Vec<String>,
    provider: Vec<String>,
    kind: Vec<&'static str>,
    address: Vec<Option<String>>,
    port: Vec<Option<i32>>,
    failures: Vec<Option<i64>>,
    failing_since: Vec<Option<SystemTime>>,
    last_reachable_at: Vec<Option<SystemTime>>,
    error: Vec<Option<String>>,
    reason: Vec<Option<String>>,
    said_at: Vec<SystemTime>,
    stream_seq: Vec<i64>,
    stream_epoch: Vec<i64>,
}

impl<'a> GrantColumns<'a> {
    fn push(&mut self, k: &Keyed<'a, Event>) {
        let (provision, from, address, port) = match k.body {
            Event::Unreachable(b) => (&b.provision, &b.from, Some(&b.address), Some(b.port)),
            Event::Reachable(b) => (&b.provision, &b.from, Some(&b.address), Some(b.port)),
            Event::Unchecked(b) => (&b.provision, &b.from, None, None),
            _ => return,
        };
        self.machine.push(k.emitter.machine.as_str());
        self.consumer.push(k.emitter.module.as_str());
        self.provision.push(text(provision));
        self.provider.push(text(from));
        self.kind.push(k.body.kind().as_str());
        self.address.push(address.map(|a| text(a)));
        self.port.push(port.map(i32::from));
        let (failures, since, last, error, reason) = match k.body {
            Event::Unreachable(b) => (
                Some(int(b.failures)),
                Some(b.failing_since.system_time()),
                b.last_reachable_at.map(|t| t.system_time()),
                Some(text(&b.error)),
                None,
            ),
            Event::Reachable(b) => (None, None, None, None, Some(b.reason.as_str().to_owned())),
            Event::Unchecked(b) => (None, None, None, None, Some(text(&b.reason))),
            _ => (None, None, None, None, None),
        };
        self.failures.push(failures);
        self.failing_since.push(since);
        self.last_reachable_at.push(last);
        self.error.push(error);
        self.reason.push(reason);
        self.said_at.push(k.body.said_at().system_time());
        self.stream_seq.push(seq(k.seq));
        self.stream_epoch.push(seq(k.epoch));
    }

    fn params(&self) -> [&(dyn ToSql + Sync); 15] {
        [
            &self.machine,
            &self.consumer,
            &self.provision,
            &self.provider,
            &self.kind,
            &self.address,
            &self.port,
            &self.failures,
            &self.failing_since,
            &self.last_reachable_at,
            &self.error,
            &self.reason,
            &self.said_at,
            &self.stream_seq,
            &self.stream_epoch,
        ]
    }
}

/// Takes the round's key locks (`$1`: the lock class, `$2`: the buckets,
/// sorted, each once), held until the transaction ends.
///
/// Several controllers may apply rounds at once. Each write is safe alone,
/// but a `recovered` and a `failing` of one key read each other's table:
/// under READ COMMITTED a `failing` could miss a newer `recovered` being
/// committed beside it and stay behind as a stale standing, and two
/// multi-row statements locking the same rows in different orders
/// deadlock. So a round first locks every key it writes (hashed into
/// [`LOCK_BUCKETS`] buckets, taken in ascending order, so never in a cycle):
/// rounds sharing a key take turns, and each statement after the lock sees
/// what the other round committed.
const LOCK_KEYS: &str = "SELECT pg_advisory_xact_lock($1::int4, b) FROM unnest($2::int4[]) AS b";

/// The first key of the round locks ("mesh" in ASCII); their second is a
/// bucket. The migrations' lock is a one-key (bigint) lock: another space.
const LOCK_CLASS: i32 = 0x6d65_7368;

/// How many buckets keys are hashed into: a round holds at most this many
/// locks, whatever its size (PostgreSQL's lock table is bounded, by default
/// 64 × max_connections entries for the whole server).
pub const LOCK_BUCKETS: u32 = 1024;

/// The bucket of a key made of `parts` (FNV-1a: the same in every build
/// of every controller sharing the store).
fn bucket(parts: &[&str]) -> i32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain(std::iter::once(0)) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    i32::try_from(hash % u64::from(LOCK_BUCKETS)).unwrap_or(0)
}

/// The prepared write statements.
pub(super) struct Statements {
    lock: Statement,
    failing: Statement,
    recovered: Statement,
    repair: Statement,
    retirement: Statement,
    alive: Statement,
    grant: Statement,
}

impl Statements {
    async fn prepare(client: &Client) -> Result<Statements, tokio_postgres::Error> {
        Ok(Statements {
            lock: client.prepare(LOCK_KEYS).await?,
            failing: client.prepare(UPSERT_FAILING).await?,
            recovered: client.prepare(RECOVERED).await?,
            repair: client.prepare(UPSERT_REPAIR).await?,
            retirement: client.prepare(UPSERT_RETIREMENT).await?,
            alive: client.prepare(UPSERT_ALIVE).await?,
            grant: client.prepare(UPSERT_GRANT).await?,
        })
    }
}

/// PostgreSQL text holds no NUL character: replace it rather than refuse the word.
fn text(value: &str) -> String {
    if value.contains('\0') {
        value.replace('\0', "\u{FFFD}")
    } else {
        value.to_owned()
    }
}

fn seq(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

/// The columns of [`UPSERT_FAILING`], `$1` to `$12` in field order.
#[derive(Default)]
struct FailingColumns<'a> {
    provider_module: Vec<&'a str>,
    provider_machine: Vec<&'a str>,
    consumer: Vec<&'a str>,
    consumer_machine: Vec<Option<&'a str>>,
    provision: Vec<Option<String>>,
    class: Vec<&'a str>,
    error: Vec<String>,
    since: Vec<SystemTime>,
    attempts: Vec<i64>,
    said_at: Vec<SystemTime>,
    stream_seq: Vec<i64>,
    stream_epoch: Vec<i64>,
}

impl<'a> FailingColumns<'a> {
    fn push(&mut self, k: &Keyed<'a, Failing>) {
        let b = k.body;
        self.provider_module.push(k.emitter.module.as_str());
        self.provider_machine.push(k.emitter.machine.as_str());
        self.consumer.push(b.consumer.as_str());
        self.consumer_machine
            .push(b.consumer_machine.as_ref().map(|m| m.as_str()));
        self.provision.push(b.provision.as_deref().map(text));
        self.class.push(b.class.as_str());
        self.error.push(text(&b.error));
        self.since.push(b.since.system_time());
        self.attempts
            .push(i64::try_from(b.attempts).unwrap_or(i64::MAX));
        self.said_at.push(b.said_at.system_time());
        self.stream_seq.push(seq(k.seq));
        self.stream_epoch.push(seq(k.epoch));
    }

    fn params(&self) -> [&(dyn ToSql + Sync); 12] {
        [
            &self.provider_module,
            &self.provider_machine,
            &self.consumer,
            &self.consumer_machine,
            &self.provision,
            &self.class,
            &self.error,
            &self.since,
            &self.attempts,
            &self.said_at,
            &self.stream_seq,
            &self.stream_epoch,
        ]
    }
}

/// The columns of [`RECOVERED`], `$1` to `$9` in field order.
#[derive(Default)]
struct RecoveredColumns<'a> {
    provider_module: Vec<&'a str>,
    provider_machine: Vec<&'a str>,
    consumer: Vec<&'a str>,
    consumer_machine: Vec<Option<&'a str>>,
    provision: Vec<Option<String>>,
    reason: Vec<&'a str>,
    said_at: Vec<SystemTime>,
    stream_seq: Vec<i64>,
    stream_epoch: Vec<i64>,
}

impl<'a> RecoveredColumns<'a> {
    fn push(&mut self, k: &Keyed<'a, Recovered>) {
        let b = k.body;
        self.provider_module.push(k.emitter.module.as_str());
        self.provider_machine.push(k.emitter.machine.as_str());
        self.consumer.push(b.consumer.as_str());
        self.consumer_machine
            .push(b.consumer_machine.as_ref().map(|m| m.as_str()));
        self.provision.push(b.provision.as_deref().map(text));
        self.reason.push(b.reason.as_str());
        self.said_at.push(b.said_at.system_time());
        self.stream_seq.push(seq(k.seq));
        self.stream_epoch.push(seq(k.epoch));
    }

    fn params(&self) -> [&(dyn ToSql + Sync); 9] {
        [
            &self.provider_module,
            &self.provider_machine,
            &self.consumer,
            &self.consumer_machine,
            &self.provision,
            &self.reason,
            &self.said_at,
            &self.stream_seq,
            &self.stream_epoch,
        ]
    }
}

/// The columns of [`UPSERT_REPAIR`], `$1` to `$9` in field order.
#[derive(Default)]
struct RepairColumns<'a> {
    provider_module: Vec<&'a str>,
    provider_machine: Vec<&'a str>,
    fault: Vec<&'a str>,
    outcome: Vec<&'static str>,
    detail: Vec<String>,
    next_attempt_at: Vec<Option<SystemTime>>,
    said_at: Vec<SystemTime>,
    stream_seq: Vec<i64>,
    stream_epoch: Vec<i64>,
}

impl<'a> RepairColumns<'a> {
    fn push(&mut self, k: &Keyed<'a, Repair>) {
        let b = k.body;
        self.provider_module.push(k.emitter.module.as_str());
        self.provider_machine.push(k.emitter.machine.as_str());
        self.fault.push(b.fault.as_str());
        self.outcome.push(repair_outcome(b.outcome));
        self.detail.push(text(&b.detail));
        self.next_attempt_at
            .push(b.next_attempt_at.map(|t| t.system_time()));
        self.said_at.push(b.said_at.system_time());
        self.stream_seq.push(seq(k.seq));
        self.stream_epoch.push(seq(k.epoch));
    }

    fn params(&self) -> [&(dyn ToSql + Sync); 9] {
        [
            &self.provider_module,
            &self.provider_machine,
            &self.fault,
            &self.outcome,
            &self.detail,
            &self.next_attempt_at,
            &self.said_at,
            &self.stream_seq,
            &self.stream_epoch,
        ]
    }
}

/// The columns of [`UPSERT_RETIREMENT`], `$1` to `$8` in field order.
#[derive(Default)]
struct RetirementColumns<'a> {
    provider_module: Vec<&'a str>,
    provider_machine: Vec<&'a str>,
    consumer: Vec<&'a str>,
    action: Vec<&'a str>,
    detail: Vec<String>,
    said_at: Vec<SystemTime>,
    stream_seq: Vec<i64>,
    stream_epoch: Vec<i64>,
}

impl<'a> RetirementColumns<'a> {
    fn push(&mut self, k: &Keyed<'a, Retirement>) {
        let b = k.body;
        self.provider_module.push(k.emitter.module.as_str());
        self.provider_machine.push(k.emitter.machine.as_str());
        self.consumer.push(b.consumer.as_str());
        self.action.push(b.action.as_str());
        self.detail.push(text(&b.detail));
        self.said_at.push(b.said_at.system_time());
        self.stream_seq.push(seq(k.seq));
        self.stream_epoch.push(seq(k.epoch));
    }

    fn params(&self) -> [&(dyn ToSql + Sync); 8] {
        [
            &self.provider_module,
            &self.provider_machine,
            &self.consumer,
            &self.action,
            &self.detail,
            &self.said_at,
            &self.stream_seq,
            &self.stream_epoch,
        ]
    }
}

/// The columns of [`UPSERT_ALIVE`], `$1` to `$12` in field order.
#[derive(Default)]
struct AliveColumns<'a> {
    provider_module: Vec<&'a str>,
    provider_machine: Vec<&'a str>,
    started_at: Vec<SystemTime>,
    alive_every_seconds: Vec<i64>,
    failing_after_seconds: Vec<i64>,
    settled_at: Vec<Option<SystemTime>>,
    consumers: Vec<i64>,
    failing: Vec<i64>,
    pass_seconds: Vec<f64>,
    said_at: Vec<SystemTime>,
    stream_seq: Vec<i64>,
    stream_epoch: Vec<i64>,
}

fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl<'a> AliveColumns<'a> {
    fn push(&mut self, k: &Keyed<'a, Alive>) {
        let b = k.body;
        self.provider_module.push(k.emitter.module.as_str());
        self.provider_machine.push(k.emitter.machine.as_str());
        self.started_at.push(b.started_at.system_time());
        self.alive_every_seconds.push(int(b.alive_every_seconds));
        self.failing_after_seconds
            .push(int(b.failing_after_seconds));
        self.settled_at.push(b.settled_at.map(|t| t.system_time()));
        self.consumers.push(int(b.consumers));
        self.failing.push(int(b.failing));
        self.pass_seconds.push(if b.pass_seconds.is_finite() {
            b.pass_seconds
        } else {
            0.0
        });
        self.said_at.push(b.said_at.system_time());
        self.stream_seq.push(seq(k.seq));
        self.stream_epoch.push(seq(k.epoch));
    }

    fn params(&self) -> [&(dyn ToSql + Sync); 12] {
        [
            &self.provider_module,
            &self.provider_machine,
            &self.started_at,
            &self.alive_every_seconds,
            &self.failing_after_seconds,
            &self.settled_at,
            &self.consumers,
            &self.failing,
            &self.pass_seconds,
            &self.said_at,
            &self.stream_seq,
            &self.stream_epoch,
        ]
    }
}

fn repair_outcome(outcome: RepairOutcome) -> &'static str {
    match outcome {
        RepairOutcome::Repaired => "repaired",
        RepairOutcome::Failed => "failed",
        RepairOutcome::Braked => "braked",
    }
}

/// A round as the columns of the four statements.
#[derive(Default)]
struct Round<'a> {
    failing: FailingColumns<'a>,
    recovered: RecoveredColumns<'a>,
    repairs: RepairColumns<'a>,
    retirements: RetirementColumns<'a>,
    alive: AliveColumns<'a>,
    grants: GrantColumns<'a>,
}

impl<'a> Round<'a> {
    fn of(words: &'a [Word]) -> Round<'a> {
        let reduced = reduce(words);
        let mut round = Round::default();
        reduced.failing.iter().for_each(|k| round.failing.push(k));
        reduced
            .recovered
            .iter()
            .for_each(|k| round.recovered.push(k));
        reduced.repairs.iter().for_each(|k| round.repairs.push(k));
        reduced
            .retirements
            .iter()
            .for_each(|k| round.retirements.push(k));
        reduced.alive.iter().for_each(|k| round.alive.push(k));
        reduced.grants.iter().for_each(|k| round.grants.push(k));
        round
    }

    /// The lock buckets of every key the round writes, sorted, each once:
    /// a standing (failing and recovered share it), a repair's fault, a
    /// retirement's action, a provider's alive, a grant.
    fn buckets(&self) -> Vec<i32> {
        let mut buckets = Vec::new();
        let f = &self.failing;
        let r = &self.recovered;
        for (module, machine, consumer) in f
            .provider_module
            .iter()
            .zip(&f.provider_machine)
            .zip(&f.consumer)
            .chain(
                r.provider_module
                    .iter()
                    .zip(&r.provider_machine)
                    .zip(&r.consumer),
            )
            .map(|((a, b), c)| (a, b, c))
        {
            buckets.push(bucket(&["standing", module, machine, consumer]));
        }
        let p = &self.repairs;
        for ((module, machine), fault) in p
            .provider_module
            .iter()
            .zip(&p.provider_machine)
            .zip(&p.fault)
        {
            buckets.push(bucket(&["repair", module, machine, fault]));
        }
        let t = &self.retirements;
        for (((module, machine), consumer), action) in t
            .provider_module
            .iter()
            .zip(&t.provider_machine)
            .zip(&t.consumer)
            .zip(&t.action)
        {
            buckets.push(bucket(&["retirement", module, machine, consumer, action]));
        }
        let a = &self.alive;
        for (module, machine) in a.provider_module.iter().zip(&a.provider_machine) {
            buckets.push(bucket(&["alive", module, machine]));
        }
        let g = &self.grants;
        for (((machine, consumer), provision), provider) in g
            .machine
            .iter()
            .zip(&g.consumer)
            .zip(&g.provision)
            .zip(&g.provider)
        {
            buckets.push(bucket(&["grant", machine, consumer, provision, provider]));
        }
        buckets.sort_unstable();
        buckets.dedup();
        buckets
    }

    /// The statements to run: the key locks, then `recovered` before
    /// `failing` (see [`crate::model::reduce`]), those with no word left out.
    fn statements<'s>(
        &'s self,
        prepared: &'s Statements,
        buckets: &'s Vec<i32>,
    ) -> Vec<(&'s Statement, Vec<&'s (dyn ToSql + Sync)>)> {
        let mut statements = Vec::with_capacity(6);
        statements.push((&prepared.lock, vec![&LOCK_CLASS as _, buckets as _]));
        if !self.recovered.consumer.is_empty() {
            statements.push((&prepared.recovered, self.recovered.params().to_vec()));
        }
        if !self.failing.consumer.is_empty() {
            statements.push((&prepared.failing, self.failing.params().to_vec()));
        }
        if !self.repairs.fault.is_empty() {
            statements.push((&prepared.repair, self.repairs.params().to_vec()));
        }
        if !self.retirements.consumer.is_empty() {
            statements.push((&prepared.retirement, self.retirements.params().to_vec()));
        }
        if !self.alive.said_at.is_empty() {
            statements.push((&prepared.alive, self.alive.params().to_vec()));
        }
        if !self.grants.said_at.is_empty() {
            statements.push((&prepared.grant, self.grants.params().to_vec()));
        }
        statements
    }
}

impl PgStore {
    /// The connection with its write statements prepared.
    async fn prepared(&mut self) -> Result<(&Client, &Statements), StoreError> {
        let connected = self.connected().await?;
        if connected.statements.is_none() {
            let prepare = Statements::prepare(&connected.client);
            let outcome = tokio::time::timeout(CONNECT_TIMEOUT, prepare).await;
            let statements = self.settle(outcome, CONNECT_TIMEOUT)?;
            if let Some(connected) = self.connected.as_mut() {
                connected.statements = Some(statements);
            }
        }
        let connected = self.connected.as_ref().expect("connected above");
        let statements = connected.statements.as_ref().expect("prepared above");
        Ok((&connected.client, statements))
    }
}

#[async_trait]
impl Store for PgStore {
    async fn apply(&mut self, words: &[Word]) -> Result<(), StoreError> {
        if words.is_empty() {
            return Ok(());
        }
        let round = Round::of(words);
        let buckets = round.buckets();
        let (client, prepared) = self.prepared().await?;
        let statements = round.statements(prepared, &buckets);
        // One transaction, its statements pipelined (sent without waiting
        // for each answer).
        let work = async {
            let begin = client.batch_execute("BEGIN");
            let applied = try_join_all(
                statements
                    .iter()
                    .map(|(statement, params)| client.execute(*statement, params)),
            );
            let (begun, applied) = tokio::join!(begin, applied);
            match begun.and(applied) {
                Ok(_) => client.batch_execute("COMMIT").await,
                Err(error) => {
                    let _ = client.batch_execute("ROLLBACK").await;
                    Err(error)
                }
            }
        };
        let outcome = tokio::time::timeout(STATEMENT_TIMEOUT, work).await;
        self.settle(outcome, STATEMENT_TIMEOUT)
    }

    async fn stream_epoch(&mut self, stream: &str, created: SystemTime) -> Result<u64, StoreError> {
        self.register_stream(stream, created).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_stable_and_bounded() {
        // Controllers of different builds must agree: a fixed hash.
        assert_eq!(
            bucket(&["standing", "postgres", "db-1", "forge"]),
            bucket(&["standing", "postgres", "db-1", "forge"])
        );
        assert_ne!(
            bucket(&["standing", "a", "bc"]),
            bucket(&["standing", "ab", "c"])
        );
        for n in 0..10_000 {
            let b = bucket(&["standing", "p", "m", &format!("c{n}")]);
            assert!((0..LOCK_BUCKETS as i32).contains(&b));
        }
    }

    #[test]
    fn nul_characters_are_replaced() {
        assert_eq!(text("a\0b"), "a\u{FFFD}b");
        assert_eq!(text("plain"), "plain");
    }
}
