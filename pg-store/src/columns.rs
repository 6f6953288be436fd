//! The write statements and the typed columns each takes: one multi-row
//! statement per kind of event, its parameters parallel arrays, one per
//! column, filled from one typed struct of its own. Enums are written as
//! their text (`as_str`), which the read decodes back.

use std::sync::LazyLock;
use std::time::SystemTime;

use mesh_protocol::event::{
    Alive, ContributionsRead, Failing, GrantsRead, Recovered, RepairReport, Retirement,
};
use mesh_protocol::Event;

use mesh_status::model::reduce::Keyed;

use super::column_list::{column_list, names, unnest, updates, Column};

/// `INSERT INTO table AS alias (columns) SELECT w.* FROM unnest(…) AS
/// w(…) filter ON CONFLICT (keys) DO UPDATE SET` every other column, where
/// the stored row (`alias`) is older in the stream than the new one.
fn upsert(table: &str, alias: &str, columns: &[Column], keys: &[&str], filter: &str) -> String {
    format!(
        "INSERT INTO {table} AS {alias} ({names})
SELECT w.* FROM {unnest}
{filter}
ON CONFLICT ({conflict}) DO UPDATE SET {updates}
WHERE ({alias}.stream_epoch, {alias}.stream_seq) < (EXCLUDED.stream_epoch, EXCLUDED.stream_seq)",
        names = names(columns),
        unnest = unnest(columns),
        conflict = keys.join(", "),
        updates = updates(columns, keys),
    )
}

/// The statement that applies a round's `failing` events (the newest per
/// key), its parameters the columns of `FailingColumns`. An event is kept
/// unless a newer `recovered` of its key is stored, and replaces only an
/// older `failing`. `first_since` is the first `since` of the interval it
/// is failing in (from the round's history walk: a provider restarted
/// while failing says a new `since`). Public for the ingest benchmark, which runs it
/// through pgbench.
#[cfg_attr(not(feature = "bench"), allow(unreachable_pub, dead_code))]
pub static UPSERT_FAILING: LazyLock<String> = LazyLock::new(|| {
    upsert(
        "failing",
        "f",
        FailingColumns::COLUMNS,
        &["provider_module", "provider_machine", "consumer"],
        "WHERE NOT EXISTS (
    SELECT 1 FROM recovered r
    WHERE r.provider_module = w.provider_module AND r.provider_machine = w.provider_machine
      AND r.consumer = w.consumer AND (r.stream_epoch, r.stream_seq) > (w.stream_epoch, w.stream_seq))",
    )
});

/// Applies a round's `recovered` events ([`RecoveredColumns`]): each
/// deletes its key's `failing` when older than itself, and is kept as its
/// key's newest `recovered`.
pub(super) static RECOVERED: LazyLock<String> = LazyLock::new(|| {
    let columns = RecoveredColumns::COLUMNS;
    let keys = ["provider_module", "provider_machine", "consumer"];
    format!(
        "WITH w AS (SELECT * FROM {unnest}),
gone AS (
    DELETE FROM failing f USING w
    WHERE f.provider_module = w.provider_module AND f.provider_machine = w.provider_machine
      AND f.consumer = w.consumer AND (f.stream_epoch, f.stream_seq) < (w.stream_epoch, w.stream_seq)
)
INSERT INTO recovered AS r ({names})
SELECT * FROM w
ON CONFLICT ({conflict}) DO UPDATE SET {updates}
WHERE (r.stream_epoch, r.stream_seq) < (EXCLUDED.stream_epoch, EXCLUDED.stream_seq)",
        unnest = unnest(columns),
        names = names(columns),
        conflict = keys.join(", "),
        updates = updates(columns, &keys),
    )
});

/// Applies a round's `repair` events ([`RepairColumns`]), the newest per
/// provider and fault.
pub(super) static UPSERT_REPAIR: LazyLock<String> = LazyLock::new(|| {
    upsert(
        "repair",
        "p",
        RepairColumns::COLUMNS,
        &["provider_module", "provider_machine", "fault"],
        "",
    )
});

/// Applies a round's `retirement` events ([`RetirementColumns`]), the newest
/// per provider, consumer and action.
pub(super) static UPSERT_RETIREMENT: LazyLock<String> = LazyLock::new(|| {
    upsert(
        "retirement",
        "t",
        RetirementColumns::COLUMNS,
        &["provider_module", "provider_machine", "consumer", "action"],
        "",
    )
});

/// Applies a round's `alive` events ([`AliveColumns`]), the newest per provider.
pub(super) static UPSERT_ALIVE: LazyLock<String> = LazyLock::new(|| {
    upsert(
        "alive",
        "a",
        AliveColumns::COLUMNS,
        &["provider_module", "provider_machine"],
        "",
    )
});

/// Applies a round's grant events ([`GrantColumns`]), the newest per
/// (machine, consumer, provision, from), whatever their kind.
pub(super) static UPSERT_GRANT: LazyLock<String> = LazyLock::new(|| {
    upsert(
        "grant_event",
        "g",
        GrantColumns::COLUMNS,
        &["machine", "consumer", "provision", "provider"],
        "",
    )
});

/// Applies a round's grant agents' `read` words ([`GrantsReadColumns`]),
/// the newest per machine.
pub(super) static UPSERT_GRANTS_READ: LazyLock<String> = LazyLock::new(|| {
    upsert(
        "grants_read",
        "r",
        GrantsReadColumns::COLUMNS,
        &["machine"],
        "",
    )
});

column_list! {
    /// The columns of [`UPSERT_GRANTS_READ`], `$1` first.
    struct GrantsReadColumns<'a> {
        machine: &'a str = "text",
        file: String = "text",
        readable: bool = "bool",
        problem: Option<String> = "text",
        refused: serde_json::Value = "jsonb",
        more: i64 = "int8",
        said_at: SystemTime = "timestamptz",
        stored_at: Option<SystemTime> = "timestamptz",
        stream_seq: i64 = "int8",
        stream_epoch: i64 = "int8",
    }
}

impl<'a> GrantsReadColumns<'a> {
    pub(super) fn push(&mut self, k: &Keyed<'a, GrantsRead>) {
        let b = k.body;
        let read = texts(&b.read);
        self.machine.push(k.emitter.machine.as_str());
        self.file.push(text(&b.file));
        self.readable.push(read.readable);
        self.problem.push(read.problem);
        self.refused
            .push(serde_json::to_value(read.refused).expect("refused entries serialize"));
        self.more.push(int(read.more));
        self.said_at.push(b.said_at.system_time());
        self.stored_at.push(k.stored_at.map(|t| t.system_time()));
        self.stream_seq.push(seq(k.seq));
        self.stream_epoch.push(seq(k.epoch));
    }
}

/// A read of a file with its texts as PostgreSQL holds them ([`text`]).
fn texts(read: &ContributionsRead) -> ContributionsRead {
    let mut read = read.clone();
    read.problem = read.problem.map(|p| text(&p));
    read.refused
        .iter_mut()
        .for_each(|r| r.reason = text(&r.reason));
    read
}

column_list! {
    /// The columns of [`UPSERT_GRANT`], `$1` first.
    struct GrantColumns<'a> {
        machine: &'a str = "text",
        consumer: &'a str = "text",
        provision: String = "text",
        provider: String = "text",
        kind: &'static str = "text",
        address: Option<String> = "text",
        port: Option<i32> = "int4",
        failures: Option<i64> = "int8",
        failing_since: Option<SystemTime> = "timestamptz",
        last_reachable_at: Option<SystemTime> = "timestamptz",
        error: Option<String> = "text",
        reason: Option<String> = "text",
        said_at: SystemTime = "timestamptz",
        stream_seq: i64 = "int8",
        stream_epoch: i64 = "int8",
    }
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

column_list! {
    /// The columns of [`UPSERT_FAILING`], `$1` first.
    struct FailingColumns<'a> {
        provider_module: &'a str = "text",
        provider_machine: &'a str = "text",
        consumer: &'a str = "text",
        consumer_machine: Option<&'a str> = "text",
        provision: Option<String> = "text",
        class: &'a str = "text",
        error: String = "text",
        since: SystemTime = "timestamptz",
        attempts: i64 = "int8",
        said_at: SystemTime = "timestamptz",
        stream_seq: i64 = "int8",
        stream_epoch: i64 = "int8",
        stored_at: Option<SystemTime> = "timestamptz",
        first_since: SystemTime = "timestamptz",
    }
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
}

column_list! {
    /// The columns of [`RECOVERED`], `$1` first.
    struct RecoveredColumns<'a> {
        provider_module: &'a str = "text",
        provider_machine: &'a str = "text",
        consumer: &'a str = "text",
        consumer_machine: Option<&'a str> = "text",
        provision: Option<String> = "text",
        reason: &'a str = "text",
        said_at: SystemTime = "timestamptz",
        stream_seq: i64 = "int8",
        stream_epoch: i64 = "int8",
    }
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
}

column_list! {
    /// The columns of [`UPSERT_REPAIR`], `$1` first.
    struct RepairColumns<'a> {
        provider_module: &'a str = "text",
        provider_machine: &'a str = "text",
        fault: &'a str = "text",
        outcome: &'static str = "text",
        detail: String = "text",
        next_attempt_at: Option<SystemTime> = "timestamptz",
        said_at: SystemTime = "timestamptz",
        stream_seq: i64 = "int8",
        stream_epoch: i64 = "int8",
    }
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
}

column_list! {
    /// The columns of [`UPSERT_RETIREMENT`], `$1` first.
    struct RetirementColumns<'a> {
        provider_module: &'a str = "text",
        provider_machine: &'a str = "text",
        consumer: &'a str = "text",
        action: &'a str = "text",
        detail: String = "text",
        said_at: SystemTime = "timestamptz",
        stream_seq: i64 = "int8",
        stream_epoch: i64 = "int8",
        retire_at: Option<SystemTime> = "timestamptz",
    }
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
}

column_list! {
    /// The columns of [`UPSERT_ALIVE`], `$1` first.
    struct AliveColumns<'a> {
        provider_module: &'a str = "text",
        provider_machine: &'a str = "text",
        started_at: SystemTime = "timestamptz",
        alive_every_seconds: i64 = "int8",
        failing_after_seconds: i64 = "int8",
        settled_at: Option<SystemTime> = "timestamptz",
        consumers: i64 = "int8",
        failing: i64 = "int8",
        pass_seconds: f64 = "float8",
        said_at: SystemTime = "timestamptz",
        stream_seq: i64 = "int8",
        stream_epoch: i64 = "int8",
        repeat_every_seconds: Option<i64> = "int8",
        stored_at: Option<SystemTime> = "timestamptz",
        fault_class: Option<&'static str> = "text",
        fault_error: Option<String> = "text",
        fault_since: Option<SystemTime> = "timestamptz",
        contributions: Option<serde_json::Value> = "jsonb",
    }
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
        self.contributions.push(
            b.contributions
                .as_ref()
                .map(|c| serde_json::to_value(texts(c)).expect("contributions read serialize")),
        );
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
