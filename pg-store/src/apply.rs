//! Writing a round of events: the newest event per key and kind (see
//! [`mesh_status::model::reduce`]) as one multi-row statement per kind
//! ([`super::columns`], prepared on each connection: [`super::statements`]),
//! after the round's key locks ([`super::locks`]), with the transitions the
//! round makes ([`super::history`]), in one transaction.

use std::pin::Pin;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use futures::future::{join_all, maybe_done, MaybeDone};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use super::columns::{
    AliveColumns, FailingColumns, GrantColumns, GrantsReadColumns, RecoveredColumns, RepairColumns,
    RetirementColumns,
};
use super::connection::{PgStore, CONNECT_TIMEOUT, STATEMENT_TIMEOUT};
use super::history::{HistoryColumns, Keys};
use super::locks::{bucket, LOCK_CLASS};
use super::statements::Statements;
use super::PgError;
use mesh_protocol::{ModuleId, Name};
use mesh_status::model::history::Transitions;
use mesh_status::model::reduce::reduce;
use mesh_status::model::Received;
use mesh_status::store::ControllerRecordUpdate;
use mesh_status::{Store, StoreError};

/// What a round's transaction begins with. Its statements are prepared
/// on each connection (and again as the tables fill:
/// [`super::statements::Replan`]) and run every round with arrays of a
/// different length: PostgreSQL would plan some of them anew each time (the
/// `recovered` statement's custom plan looks cheaper than the generic
/// one, which guesses 10 rows for an `unnest`): 0.13–0.16 ms a round in
/// the ingest benchmark, for the plan it already had. The generic plans
/// are the same index lookups, so the round uses them.
const BEGIN: &str = "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan";

/// Before the statements are prepared again
/// ([`super::statements::Replan`]): the statistics of the tables a round
/// looks its keys up in, as they are now. A table autovacuum has not yet
/// analyzed (a store made anew, for up to a minute or more of a backlog)
/// has none: its lookups of a standing were planned on `failing_by_cause`
/// (provider, class, error, consumer) rather than the primary key, both
/// costed alike for a table that looked small, which reads every standing
/// of the provider for each key: 0.5 ms a key at 5,000 standings a
/// provider, rounds 6 to 9 times slower until autovacuum's analyze. Those
/// who may not analyze a table (not its owner) are told so in a warning,
/// and prepare as before.
const ANALYZE_LOOKED_UP: &str =
    "ANALYZE failing, recovered, alive, repair, retirement, grant_event";

/// A round as the columns of its statements.
#[derive(Default)]
struct Round<'a> {
    failing: FailingColumns<'a>,
    recovered: RecoveredColumns<'a>,
    repairs: RepairColumns<'a>,
    retirements: RetirementColumns<'a>,
    alive: AliveColumns<'a>,
    grants: GrantColumns<'a>,
    grants_read: GrantsReadColumns<'a>,
}

impl<'a> Round<'a> {
    fn of(events: &'a [Received]) -> Round<'a> {
        let reduced = reduce(events);
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
        reduced
            .grants_read
            .iter()
            .for_each(|k| round.grants_read.push(k));
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
        for machine in &self.grants_read.machine {
            buckets.push(bucket(&["grants-read", machine]));
        }
        buckets.sort_unstable();
        buckets.dedup();
        buckets
    }

    /// The statements to run after the key locks: `recovered` before
    /// `failing` (see [`mesh_status::model::reduce`]), those with no event left out.
    fn statements<'s>(
        &'s self,
        prepared: &'s Statements,
    ) -> Vec<(&'s Statement, Vec<&'s (dyn ToSql + Sync)>)> {
        let mut statements = Vec::with_capacity(8);
        if !self.recovered.consumer.is_empty() {
            statements.push((&prepared.recovered, self.recovered.params()));
        }
        if !self.failing.consumer.is_empty() {
            statements.push((&prepared.failing, self.failing.params()));
        }
        if !self.repairs.fault.is_empty() {
            statements.push((&prepared.repair, self.repairs.params()));
        }
        if !self.retirements.consumer.is_empty() {
            statements.push((&prepared.retirement, self.retirements.params()));
        }
        if !self.alive.said_at.is_empty() {
            statements.push((&prepared.alive, self.alive.params()));
        }
        if !self.grants.said_at.is_empty() {
            statements.push((&prepared.grant, self.grants.params()));
        }
        if !self.grants_read.said_at.is_empty() {
            statements.push((&prepared.grants_read, self.grants_read.params()));
        }
        statements
    }
}

impl PgStore {
    /// The connection with its write statements prepared.
    async fn prepared(&mut self) -> Result<(&Client, &Statements), PgError> {
        let connected = self.connected().await?;
        let mut analyze = false;
        if connected.statements.is_some() && connected.replan.round() {
            connected.statements = None;
            analyze = true;
        }
        if connected.statements.is_none() {
            let client = &connected.client;
            let prepare = async move {
                if analyze {
                    client.batch_execute(ANALYZE_LOOKED_UP).await?;
                }
                Statements::prepare(client).await
            };
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
    async fn apply(&mut self, events: &[Received]) -> Result<(), StoreError> {
        Ok(self.write(events).await?)
    }

    async fn stream_epoch(&mut self, stream: &str, created: SystemTime) -> Result<u64, StoreError> {
        Ok(self.register_stream(stream, created).await?)
    }

    async fn prune_history(&mut self, keep: Duration, limit: u32) -> Result<u64, StoreError> {
        Ok(PgStore::prune_history(self, keep, limit).await?)
    }

    async fn record_begins(
        &mut self,
        acknowledged_before: bool,
    ) -> Result<Option<SystemTime>, StoreError> {
        Ok(self.begin_record(acknowledged_before).await?)
    }

    async fn record(&mut self, update: ControllerRecordUpdate<'_>) -> Result<(), StoreError> {
        Ok(self.record_instance(update).await?)
    }
}

impl PgStore {
    /// Applies `events` in order in one transaction ([`Store::apply`]):
    /// its key locks and what the store holds of its keys first, then the
    /// round's statements and the transitions its events make (history),
    /// each phase pipelined (sent without waiting for each answer).
    async fn write(&mut self, events: &[Received]) -> Result<(), PgError> {
        if events.is_empty() {
            return Ok(());
        }
        let mut round = Round::of(events);
        let buckets = round.buckets();
        let keys = Keys::of(events);
        let (client, prepared) = self.prepared().await?;
        let work = async {
            let begin = client.batch_execute(BEGIN);
            let lock_params: [&(dyn ToSql + Sync); 2] = [&LOCK_CLASS, &buckets];
            let lock = client.execute(&prepared.lock, &lock_params);
            let previous = keys.previous(client, &prepared.history);
            let following = keys.following_since(client, &prepared.history);
            let (begun, locked, previous, following) =
                tokio::join!(begin, lock, previous, following);
            let (previous, following_since) = match begun
                .and(locked)
                .and(previous)
                .and_then(|p| Ok((p, following?)))
            {
                Ok(read) => read,
                Err(error) => {
                    let _ = client.batch_execute("ROLLBACK").await;
                    return Err(error);
                }
            };
            let mut walk = Transitions::new(previous, following_since);
            let history = HistoryColumns::of(&walk.walk(events));
            round.failing.keep_first_since(|module, machine, consumer| {
                let provider = ModuleId::parse(&format!("{module}@{machine}")).ok()?;
                walk.failing_since(&provider, &Name::parse(consumer).ok()?)
                    .map(|t| t.system_time())
            });
            let mut statements = round.statements(prepared);
            if !history.is_empty() {
                statements.push((&prepared.history.insert, history.params()));
            }
            // Each statement is sent on its first poll. One that fails
            // then was never sent (its parameters did not encode, or the
            // connection is gone): the round is rolled back, not committed
            // without it. Otherwise COMMIT goes right behind them, without
            // waiting for their answers: should one of them fail on the
            // server, the transaction is aborted there and PostgreSQL ends
            // it with a rollback at that COMMIT.
            let mut sent: Vec<_> = statements
                .iter()
                .map(|(statement, params)| maybe_done(Box::pin(client.execute(*statement, params))))
                .collect();
            for statement in &mut sent {
                let _ = futures::poll!(&mut *statement);
            }
            let refused = sent
                .iter_mut()
                .find(|s| matches!(**s, MaybeDone::Done(Err(_))));
            if let Some(Some(Err(error))) = refused.map(|s| Pin::new(s).take_output()) {
                let _ = client.batch_execute("ROLLBACK").await;
                return Err(error);
            }
            let (_, committed) =
                tokio::join!(join_all(sent.iter_mut()), client.batch_execute("COMMIT"));
            let applied = sent
                .iter_mut()
                .filter_map(|s| Pin::new(s).take_output())
                .try_for_each(|outcome| outcome.map(drop));
            applied.and(committed)
        };
        let outcome = tokio::time::timeout(STATEMENT_TIMEOUT, work).await;
        self.settle(outcome, STATEMENT_TIMEOUT)
    }
}
