//! The write statements and the typed columns each takes: one multi-row
//! statement per kind of event, its parameters parallel arrays, one per
//! column, filled from one typed struct of its own. Enums are written as
//! their words (`as_str`), which the read decodes back.

use std::time::SystemTime;

use mesh_protocol::event::{Alive, Failing, Recovered, RepairReport, Retirement};
use mesh_protocol::Event;
use tokio_postgres::types::ToSql;

use mesh_status::model::reduce::Keyed;

/// The statement that applies a round's `failing` events (the newest per
/// key), its parameters the columns of one typed struct (module, machine,
/// consumer, ... stream sequence, in the order below). An event is kept
/// unless a newer `recovered` of its key is stored, and replaces only an
/// older `failing`. `first_since` is the first `since` of the interval it
/// is failing in (from the round's history walk: a provider restarted
/// while failing says a new `since`). Public for the ingest benchmark, which runs it
/// through pgbench.
pub const UPSERT_FAILING: &str = "
INSERT INTO failing AS f (provider_module, provider_machine, consumer, consumer_machine,
                          provision, class, error, since, attempts, said_at, stream_seq, stream_epoch,
                          stored_at, first_since)
SELECT w.* FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                       $7::text[], $8::timestamptz[], $9::int8[], $10::timestamptz[], $11::int8[], $12::int8[],
                       $13::timestamptz[], $14::timestamptz[])
    AS w(provider_module, provider_machine, consumer, consumer_machine, provision, class,
         error, since, attempts, said_at, stream_seq, stream_epoch, stored_at, first_since)
WHERE NOT EXISTS (
    SELECT 1 FROM recovered r
    WHERE r.provider_module = w.provider_module AND r.provider_machine = w.provider_machine
      AND r.consumer = w.consumer AND (r.stream_epoch, r.stream_seq) > (w.stream_epoch, w.stream_seq))
ON CONFLICT (provider_module, provider_machine, consumer) DO UPDATE SET
    consumer_machine = EXCLUDED.consumer_machine, provision = EXCLUDED.provision,
    class = EXCLUDED.class, error = EXCLUDED.error, since = EXCLUDED.since,
    attempts = EXCLUDED.attempts, said_at = EXCLUDED.said_at, stream_seq = EXCLUDED.stream_seq,
    stream_epoch = EXCLUDED.stream_epoch, stored_at = EXCLUDED.stored_at,
    first_since = EXCLUDED.first_since
WHERE (f.stream_epoch, f.stream_seq) < (EXCLUDED.stream_epoch, EXCLUDED.stream_seq)";

/// Applies a round's `recovered` events ([`RecoveredColumns`]): each
/// deletes its key's `failing` when older than itself, and is kept as its
/// key's newest `recovered`.
pub(super) const RECOVERED: &str = "
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

/// Applies a round's `repair` events ([`RepairColumns`]), the newest per
/// provider and fault.
pub(super) const UPSERT_REPAIR: &str = "
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

/// Applies a round's `retirement` events ([`RetirementColumns`]), the newest
/// per provider, consumer and action.
pub(super) const UPSERT_RETIREMENT: &str = "
INSERT INTO retirement AS t (provider_module, provider_machine, consumer, action, detail,
                             said_at, stream_seq, stream_epoch, retire_at)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
                     $6::timestamptz[], $7::int8[], $8::int8[], $9::timestamptz[])
ON CONFLICT (provider_module, provider_machine, consumer, action) DO UPDATE SET
    detail = EXCLUDED.detail, said_at = EXCLUDED.said_at, stream_seq = EXCLUDED.stream_seq,
    stream_epoch = EXCLUDED.stream_epoch, retire_at = EXCLUDED.retire_at
WHERE (t.stream_epoch, t.stream_seq) < (EXCLUDED.stream_epoch, EXCLUDED.stream_seq)";

/// Applies a round's `alive` events ([`AliveColumns`]), the newest per provider.
pub(super) const UPSERT_ALIVE: &str = "
INSERT INTO alive AS a (provider_module, provider_machine, started_at, alive_every_seconds,
                        failing_after_seconds, settled_at, consumers, failing, pass_seconds,
                        said_at, stream_seq, stream_epoch, repeat_every_seconds, stored_at,
                        fault_class, fault_error, fault_since)
SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::int8[], $5::int8[],
                     $6::timestamptz[], $7::int8[], $8::int8[], $9::float8[],
                     $10::timestamptz[], $11::int8[], $12::int8[], $13::int8[], $14::timestamptz[],
                     $15::text[], $16::text[], $17::timestamptz[])
ON CONFLICT (provider_module, provider_machine) DO UPDATE SET
    started_at = EXCLUDED.started_at, alive_every_seconds = EXCLUDED.alive_every_seconds,
    failing_after_seconds = EXCLUDED.failing_after_seconds, settled_at = EXCLUDED.settled_at,
    repeat_every_seconds = EXCLUDED.repeat_every_seconds,
    consumers = EXCLUDED.consumers, failing = EXCLUDED.failing,
    pass_seconds = EXCLUDED.pass_seconds, said_at = EXCLUDED.said_at,
    stream_seq = EXCLUDED.stream_seq,
    stream_epoch = EXCLUDED.stream_epoch, stored_at = EXCLUDED.stored_at,
    fault_class = EXCLUDED.fault_class, fault_error = EXCLUDED.fault_error,
    fault_since = EXCLUDED.fault_since
WHERE (a.stream_epoch, a.stream_seq) < (EXCLUDED.stream_epoch, EXCLUDED.stream_seq)";

/// Applies a round's grant events ([`GrantColumns`]), the newest per
/// (machine, consumer, provision, from), whatever their kind.
pub(super) const UPSERT_GRANT: &str = "
INSERT INTO grant_event AS g (machine, consumer, provision, provider, kind, address, port,
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
pub(super) struct GrantColumns<'a> {
    pub(super) machine: Vec<&'a str>,
    pub(super) consumer: Vec<&'a str>,
    pub(super) provision: Vec<String>,
    pub(super) provider: Vec<String>,
    pub(super) kind: Vec<&'static str>,
    pub(super) address: Vec<Option<String>>,
    pub(super) port: Vec<Option<i32>>,
    pub(super) failures: Vec<Option<i64>>,
    pub(super) failing_since: Vec<Option<SystemTime>>,
    pub(super) last_reachable_at: Vec<Option<SystemTime>>,
    pub(super) error: Vec<Option<String>>,
    pub(super) reason: Vec<Option<String>>,
    pub(super) said_at: Vec<SystemTime>,
    pub(super) stream_seq: Vec<i64>,
    pub(super) stream_epoch: Vec<i64>,
}

impl<'a> GrantColumns<'a> {
    pub(super) fn push(&mut self, k: &Keyed<'a, Event>) {
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

    pub(super) fn params(&self) -> [&(dyn ToSql + Sync); 15] {
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

/// PostgreSQL text holds no NUL character: replace it rather than refuse the event.
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

/// The columns of [`UPSERT_FAILING`], `$1` to `$14` in field order.
#[derive(Default)]
pub(super) struct FailingColumns<'a> {
    pub(super) provider_module: Vec<&'a str>,
    pub(super) provider_machine: Vec<&'a str>,
    pub(super) consumer: Vec<&'a str>,
    pub(super) consumer_machine: Vec<Option<&'a str>>,
    pub(super) provision: Vec<Option<String>>,
    pub(super) class: Vec<&'a str>,
    pub(super) error: Vec<String>,
    pub(super) since: Vec<SystemTime>,
    pub(super) attempts: Vec<i64>,
    pub(super) said_at: Vec<SystemTime>,
    pub(super) stream_seq: Vec<i64>,
    pub(super) stream_epoch: Vec<i64>,
    pub(super) stored_at: Vec<Option<SystemTime>>,
    pub(super) first_since: Vec<SystemTime>,
}

impl<'a> FailingColumns<'a> {
    pub(super) fn push(&mut self, k: &Keyed<'a, Failing>) {
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
        self.stored_at.push(k.stored_at.map(|t| t.system_time()));
        self.first_since.push(b.since.system_time());
    }

    /// Sets each row's `first_since` to what `first` says of its key
    /// (provider module, machine, consumer), where it says anything.
    pub(super) fn keep_first_since(
        &mut self,
        first: impl Fn(&str, &str, &str) -> Option<SystemTime>,
    ) {
        for (i, since) in self.first_since.iter_mut().enumerate() {
            let key = (
                self.provider_module[i],
                self.provider_machine[i],
                self.consumer[i],
            );
            if let Some(first) = first(key.0, key.1, key.2) {
                *since = first;
            }
        }
    }

    pub(super) fn params(&self) -> [&(dyn ToSql + Sync); 14] {
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
            &self.stored_at,
            &self.first_since,
        ]
    }
}

/// The columns of [`RECOVERED`], `$1` to `$9` in field order.
#[derive(Default)]
pub(super) struct RecoveredColumns<'a> {
    pub(super) provider_module: Vec<&'a str>,
    pub(super) provider_machine: Vec<&'a str>,
    pub(super) consumer: Vec<&'a str>,
    pub(super) consumer_machine: Vec<Option<&'a str>>,
    pub(super) provision: Vec<Option<String>>,
    pub(super) reason: Vec<&'a str>,
    pub(super) said_at: Vec<SystemTime>,
    pub(super) stream_seq: Vec<i64>,
    pub(super) stream_epoch: Vec<i64>,
}

impl<'a> RecoveredColumns<'a> {
    pub(super) fn push(&mut self, k: &Keyed<'a, Recovered>) {
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

    pub(super) fn params(&self) -> [&(dyn ToSql + Sync); 9] {
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
pub(super) struct RepairColumns<'a> {
    pub(super) provider_module: Vec<&'a str>,
    pub(super) provider_machine: Vec<&'a str>,
    pub(super) fault: Vec<&'a str>,
    pub(super) outcome: Vec<&'static str>,
    pub(super) detail: Vec<String>,
    pub(super) next_attempt_at: Vec<Option<SystemTime>>,
    pub(super) said_at: Vec<SystemTime>,
    pub(super) stream_seq: Vec<i64>,
    pub(super) stream_epoch: Vec<i64>,
}

impl<'a> RepairColumns<'a> {
    pub(super) fn push(&mut self, k: &Keyed<'a, RepairReport>) {
        let b = k.body;
        self.provider_module.push(k.emitter.module.as_str());
        self.provider_machine.push(k.emitter.machine.as_str());
        self.fault.push(b.fault.as_str());
        self.outcome.push(b.outcome.as_str());
        self.detail.push(text(&b.detail));
        self.next_attempt_at
            .push(b.next_attempt_at.map(|t| t.system_time()));
        self.said_at.push(b.said_at.system_time());
        self.stream_seq.push(seq(k.seq));
        self.stream_epoch.push(seq(k.epoch));
    }

    pub(super) fn params(&self) -> [&(dyn ToSql + Sync); 9] {
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

/// The columns of [`UPSERT_RETIREMENT`], `$1` to `$9` in field order.
#[derive(Default)]
pub(super) struct RetirementColumns<'a> {
    pub(super) provider_module: Vec<&'a str>,
    pub(super) provider_machine: Vec<&'a str>,
    pub(super) consumer: Vec<&'a str>,
    pub(super) action: Vec<&'a str>,
    pub(super) detail: Vec<String>,
    pub(super) said_at: Vec<SystemTime>,
    pub(super) stream_seq: Vec<i64>,
    pub(super) stream_epoch: Vec<i64>,
    pub(super) retire_at: Vec<Option<SystemTime>>,
}

impl<'a> RetirementColumns<'a> {
    pub(super) fn push(&mut self, k: &Keyed<'a, Retirement>) {
        let b = k.body;
        self.provider_module.push(k.emitter.module.as_str());
        self.provider_machine.push(k.emitter.machine.as_str());
        self.consumer.push(b.consumer.as_str());
        self.action.push(b.action.as_str());
        self.detail.push(text(&b.detail));
        self.said_at.push(b.said_at.system_time());
        self.stream_seq.push(seq(k.seq));
        self.stream_epoch.push(seq(k.epoch));
        self.retire_at.push(b.retire_at.map(|t| t.system_time()));
    }

    pub(super) fn params(&self) -> [&(dyn ToSql + Sync); 9] {
        [
            &self.provider_module,
            &self.provider_machine,
            &self.consumer,
            &self.action,
            &self.detail,
            &self.said_at,
            &self.stream_seq,
            &self.stream_epoch,
            &self.retire_at,
        ]
    }
}

/// The columns of [`UPSERT_ALIVE`], `$1` to `$17` in field order.
#[derive(Default)]
pub(super) struct AliveColumns<'a> {
    pub(super) provider_module: Vec<&'a str>,
    pub(super) provider_machine: Vec<&'a str>,
    pub(super) started_at: Vec<SystemTime>,
    pub(super) alive_every_seconds: Vec<i64>,
    pub(super) failing_after_seconds: Vec<i64>,
    pub(super) settled_at: Vec<Option<SystemTime>>,
    pub(super) consumers: Vec<i64>,
    pub(super) failing: Vec<i64>,
    pub(super) pass_seconds: Vec<f64>,
    pub(super) said_at: Vec<SystemTime>,
    pub(super) stream_seq: Vec<i64>,
    pub(super) stream_epoch: Vec<i64>,
    pub(super) repeat_every_seconds: Vec<Option<i64>>,
    pub(super) stored_at: Vec<Option<SystemTime>>,
    pub(super) fault_class: Vec<Option<&'static str>>,
    pub(super) fault_error: Vec<Option<String>>,
    pub(super) fault_since: Vec<Option<SystemTime>>,
}

fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl<'a> AliveColumns<'a> {
    pub(super) fn push(&mut self, k: &Keyed<'a, Alive>) {
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
        self.repeat_every_seconds
            .push(b.repeat_every_seconds.map(int));
        self.stored_at.push(k.stored_at.map(|t| t.system_time()));
        let fault = b.fault.as_ref();
        self.fault_class.push(fault.map(|f| f.class.as_str()));
        self.fault_error.push(fault.map(|f| text(&f.error)));
        self.fault_since.push(fault.map(|f| f.since.system_time()));
    }

    pub(super) fn params(&self) -> [&(dyn ToSql + Sync); 17] {
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
            &self.repeat_every_seconds,
            &self.stored_at,
            &self.fault_class,
            &self.fault_error,
            &self.fault_since,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_characters_are_replaced() {
        assert_eq!(text("a\0b"), "a\u{FFFD}b");
        assert_eq!(text("plain"), "plain");
    }
}
