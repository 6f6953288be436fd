//! A transition as a row of `history` (migration V10, `by_name` V17), pure:
//! its [`Change`] flattened into the row's columns ([`HistoryRow::of`])
//! and made again from them ([`HistoryRow::transition`]). The row is the
//! only place a transition is flat; `history` writes and `history_read`
//! reads the columns.
//!
//! A row read back must hold every column its kind carries, each
//! decodable (a name a valid name, a count not negative), or it is a
//! [`Misfit`] naming the column and the kind: the read fails as for any
//! value this release cannot decode, never a panic, never a row made up.
//! Columns its kind does not carry are not read.

use mesh_protocol::{Class, ModuleId, Name, Timestamp};

use mesh_status::model::history::{
    ActionChange, Change, RepairChange, RetirementChange, Transition, TransitionKind,
};
use mesh_status::model::reduce::Place;

/// One row of `history`, but its id and `recorded_at`: each column typed
/// as the store holds it, `None` for null.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct HistoryRow {
    pub(super) kind: TransitionKind,
    pub(super) at: Timestamp,
    /// `provider_module` and `provider_machine`.
    pub(super) provider: Option<ModuleId>,
    pub(super) consumer: Option<String>,
    pub(super) consumer_machine: Option<String>,
    pub(super) provision: Option<String>,
    pub(super) class: Option<Class>,
    pub(super) error: Option<String>,
    pub(super) since: Option<Timestamp>,
    pub(super) attempts: Option<i64>,
    pub(super) reason: Option<String>,
    pub(super) fault: Option<String>,
    pub(super) detail: Option<String>,
    /// `stream_epoch`, `stream_seq` and `stored_at` (its `said_at` is `at`).
    pub(super) place: Option<Place>,
    /// `by_name`.
    pub(super) by: Option<String>,
    /// `done` (V18): whether the provider did what an action asked.
    pub(super) done: Option<bool>,
    /// `until` (V18): until when an acknowledgement holds.
    pub(super) until: Option<Timestamp>,
}

/// A row whose columns do not fit its kind: `column` is null where its
/// kind carries it, or does not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Misfit {
    /// `history.<column>`.
    pub(super) column: &'static str,
    /// Why, naming the kind.
    pub(super) reason: String,
}

/// PostgreSQL text holds no NUL character.
fn text(value: &str) -> Option<String> {
    Some(value.replace('\0', "\u{FFFD}"))
}

fn count(value: u64) -> Option<i64> {
    Some(i64::try_from(value).unwrap_or(i64::MAX))
}

impl HistoryRow {
    /// The row `t` is written as.
    pub(super) fn of(t: &Transition) -> HistoryRow {
        let mut r = HistoryRow {
            kind: t.kind(),
            at: t.at,
            provider: t.provider().cloned(),
            consumer: None,
            consumer_machine: None,
            provision: None,
            class: None,
            error: None,
            since: None,
            attempts: None,
            reason: None,
            fault: None,
            detail: None,
            place: t.place,
            by: None,
            done: None,
            until: None,
        };
        match &t.change {
            Change::FailingBegan {
                provider: _,
                consumer,
                consumer_machine,
                provision,
                class,
                error,
                since,
                attempts,
            } => {
                r.consumer_of(consumer, consumer_machine.as_ref());
                r.provision = provision.as_deref().and_then(text);
                (r.class, r.error, r.since) = (Some(*class), text(error), Some(*since));
                r.attempts = count(*attempts);
            }
            Change::Recovered {
                provider: _,
                consumer,
                consumer_machine,
                provision,
                since,
                reason,
            } => {
                r.consumer_of(consumer, consumer_machine.as_ref());
                r.provision = provision.as_deref().and_then(text);
                (r.since, r.reason) = (Some(*since), text(reason));
            }
            Change::Retired(c) | Change::ReEnabled(c) | Change::Deleted(c) => {
                let RetirementChange {
                    provider: _,
                    consumer,
                    detail,
                } = c;
                r.consumer_of(consumer, None);
                r.detail = text(detail);
            }
            Change::RepairDone(c) | Change::RepairBraked(c) => {
                let RepairChange {
                    provider: _,
                    fault,
                    detail,
                } = c;
                (r.fault, r.detail) = (Some(fault.to_string()), text(detail));
            }
            Change::HeardAgain { provider: _, since } | Change::FollowingAgain { since } => {
                r.since = Some(*since);
            }
            Change::GrantUnreachable {
                provider: _,
                consumer,
                provision,
                error,
                since,
                attempts,
                address,
            } => {
                r.consumer_of(&consumer.module, Some(&consumer.machine));
                (r.provision, r.error, r.detail) = (text(provision), text(error), text(address));
                (r.since, r.attempts) = (Some(*since), count(*attempts));
            }
            Change::GrantReachable {
                provider: _,
                consumer,
                provision,
                reason,
            } => {
                r.consumer_of(&consumer.module, Some(&consumer.machine));
                (r.provision, r.reason) = (text(provision), text(reason));
            }
            Change::ProviderFaultBegan {
                provider: _,
                class,
                error,
                since,
            } => (r.class, r.error, r.since) = (Some(*class), text(error), Some(*since)),
            Change::ProviderFaultCleared {
                provider: _,
                class,
                since,
            } => (r.class, r.since) = (Some(*class), Some(*since)),
            Change::Note {
                provider: _,
                consumer,
                text: note,
                by,
            } => {
                r.consumer_of(&consumer.module, Some(&consumer.machine));
                (r.detail, r.by) = (text(note), text(by));
            }
            Change::Action(a) => {
                r.consumer_of(&a.consumer, a.consumer_machine.as_ref());
                r.until = a.until;
                r.reason = text(a.action.as_str());
                (r.detail, r.by, r.done) = (text(&a.answer), text(&a.by), Some(a.ok));
            }
        }
        r
    }

    fn consumer_of(&mut self, consumer: &Name, machine: Option<&Name>) {
        self.consumer = Some(consumer.to_string());
        self.consumer_machine = machine.map(Name::to_string);
    }

    /// The transition the row holds.
    ///
    /// # Errors
    /// [`Misfit`] when a column its kind carries is null or does not decode.
    pub(super) fn transition(self) -> Result<Transition, Misfit> {
        let kind = self.kind;
        let a = if kind.as_str().starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        let misfit = |column: &'static str, why: &str| Misfit {
            column,
            reason: format!("{why} in {a} {kind} row"),
        };
        let need = |column: &'static str| misfit(column, "null");
        let name = |value: &Option<String>, column: &'static str| -> Result<Name, Misfit> {
            let value = value.as_deref().ok_or_else(|| need(column))?;
            Name::parse(value).map_err(|e| misfit(column, &e.to_string()))
        };
        let counted = |value: Option<i64>| -> Result<u64, Misfit> {
            let value = value.ok_or_else(|| need("history.attempts"))?;
            u64::try_from(value).map_err(|_| misfit("history.attempts", "a negative count"))
        };
        let provider = || {
            self.provider
                .clone()
                .ok_or_else(|| need("history.provider_module"))
        };
        let consumer = || name(&self.consumer, "history.consumer");
        let consumer_machine = || match &self.consumer_machine {
            Some(_) => name(&self.consumer_machine, "history.consumer_machine").map(Some),
            None => Ok(None),
        };
        let agent = || {
            Ok::<_, Misfit>(ModuleId::new(
                consumer()?,
                name(&self.consumer_machine, "history.consumer_machine")?,
            ))
        };
        let some = |value: &Option<String>, column: &'static str| {
            value.clone().ok_or_else(|| need(column))
        };
        let class = || self.class.ok_or_else(|| need("history.class"));
        let since = || self.since.ok_or_else(|| need("history.since"));
        let error = || some(&self.error, "history.error");
        let reason = || some(&self.reason, "history.reason");
        let detail = || some(&self.detail, "history.detail");
        let retirement = || {
            Ok::<_, Misfit>(RetirementChange {
                provider: provider()?,
                consumer: consumer()?,
                detail: detail()?,
            })
        };
        let repair = || {
            Ok::<_, Misfit>(RepairChange {
                provider: provider()?,
                fault: name(&self.fault, "history.fault")?,
                detail: detail()?,
            })
        };
        use TransitionKind as K;
        let change = match kind {
            K::FailingBegan => Change::FailingBegan {
                provider: provider()?,
                consumer: consumer()?,
                consumer_machine: consumer_machine()?,
                provision: self.provision.clone(),
                class: class()?,
                error: error()?,
                since: since()?,
                attempts: counted(self.attempts)?,
            },
            K::Recovered => Change::Recovered {
                provider: provider()?,
                consumer: consumer()?,
                consumer_machine: consumer_machine()?,
                provision: self.provision.clone(),
                since: since()?,
                reason: reason()?,
            },
            K::Retired => Change::Retired(retirement()?),
            K::ReEnabled => Change::ReEnabled(retirement()?),
            K::Deleted => Change::Deleted(retirement()?),
            K::HeardAgain => Change::HeardAgain {
                provider: provider()?,
                since: since()?,
            },
            K::FollowingAgain => Change::FollowingAgain { since: since()? },
            K::RepairDone => Change::RepairDone(repair()?),
            K::RepairBraked => Change::RepairBraked(repair()?),
            K::GrantUnreachable => Change::GrantUnreachable {
                provider: self.provider.clone(),
                consumer: agent()?,
                provision: some(&self.provision, "history.provision")?,
                error: error()?,
                since: since()?,
                attempts: counted(self.attempts)?,
                address: detail()?,
            },
            K::GrantReachable => Change::GrantReachable {
                provider: self.provider.clone(),
                consumer: agent()?,
                provision: some(&self.provision, "history.provision")?,
                reason: reason()?,
            },
            K::ProviderFaultBegan => Change::ProviderFaultBegan {
                provider: provider()?,
                class: class()?,
                error: error()?,
                since: since()?,
            },
            K::ProviderFaultCleared => Change::ProviderFaultCleared {
                provider: provider()?,
                class: class()?,
                since: since()?,
            },
            K::Note => Change::Note {
                provider: provider()?,
                consumer: agent()?,
                text: detail()?,
                by: some(&self.by, "history.by_name")?,
            },
            K::Action => Change::Action(ActionChange {
                provider: provider()?,
                consumer: consumer()?,
                action: reason()?.parse().map_err(|e: mesh_protocol::NotOneOf| {
                    misfit("history.reason", &e.to_string())
                })?,
                by: some(&self.by, "history.by_name")?,
                ok: self.done.ok_or_else(|| need("history.done"))?,
                answer: detail()?,
                consumer_machine: consumer_machine()?,
                until: self.until,
            }),
        };
        Ok(Transition {
            at: self.at,
            place: self.place,
            change,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mesh_status::model::history::ActionWord;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn name(s: &str) -> Name {
        Name::parse(s).unwrap()
    }

    fn id(s: &str) -> ModuleId {
        ModuleId::parse(s).unwrap()
    }

    /// One transition of every kind, as the engine makes them.
    fn one_of_each() -> Vec<Transition> {
        let (provider, since) = (id("postgres@db-1"), ts("2026-11-27T00:12:00Z"));
        let retirement = RetirementChange {
            provider: provider.clone(),
            consumer: name("wiki"),
            detail: "disabled, nothing deleted".into(),
        };
        let repair = RepairChange {
            provider: provider.clone(),
            fault: name("admin-refused"),
            detail: "next in 10 min".into(),
        };
        let changes = vec![
            Change::FailingBegan {
                provider: provider.clone(),
                consumer: name("wiki"),
                consumer_machine: Some(name("app-1")),
                provision: Some("postgres-database".into()),
                class: Class::CredentialsRejected,
                error: "password authentication failed".into(),
                since,
                attempts: 61,
            },
            Change::Recovered {
                provider: provider.clone(),
                consumer: name("wiki"),
                consumer_machine: None,
                provision: None,
                since,
                reason: "success".into(),
            },
            Change::Retired(retirement.clone()),
            Change::ReEnabled(retirement.clone()),
            Change::Deleted(retirement),
            Change::HeardAgain {
                provider: provider.clone(),
                since,
            },
            Change::FollowingAgain { since },
            Change::RepairDone(repair.clone()),
            Change::RepairBraked(repair),
            Change::GrantUnreachable {
                provider: None,
                consumer: id("wiki@app-1"),
                provision: "postgres-database".into(),
                error: "connect timed out".into(),
                since,
                attempts: 3,
                address: "10.0.0.1:5432".into(),
            },
            Change::GrantReachable {
                provider: Some(provider.clone()),
                consumer: id("wiki@app-1"),
                provision: "postgres-database".into(),
                reason: "success".into(),
            },
            Change::ProviderFaultBegan {
                provider: provider.clone(),
                class: Class::Unreachable,
                error: "connection refused".into(),
                since,
            },
            Change::ProviderFaultCleared {
                provider: provider.clone(),
                class: Class::Unreachable,
                since,
            },
            Change::Note {
                provider: provider.clone(),
                consumer: id("wiki@app-1"),
                text: "the password was rotated by hand".into(),
                by: "ana".into(),
            },
            Change::Action(ActionChange {
                provider,
                consumer: Name::parse("docs").unwrap(),
                consumer_machine: None,
                action: ActionWord::ApproveDelete,
                by: "ana".into(),
                ok: false,
                answer: "docs is not retired".into(),
                until: None,
            }),
        ];
        let at = ts("2026-11-27T00:17:00Z");
        changes
            .into_iter()
            .enumerate()
            .map(|(seq, change)| Transition {
                at,
                place: Some(Place {
                    epoch: 1,
                    seq: seq as u64,
                    said_at: at,
                    stored_at: None,
                }),
                change,
            })
            .collect()
    }

    #[test]
    fn every_kind_reads_back_as_it_was_written() {
        let all = one_of_each();
        let kinds: Vec<_> = all.iter().map(Transition::kind).collect();
        assert_eq!(kinds, TransitionKind::ALL, "one transition of each kind");
        for t in all {
            assert_eq!(HistoryRow::of(&t).transition(), Ok(t));
        }
        let acknowledged = Transition {
            at: ts("2026-11-27T00:17:00Z"),
            place: None,
            change: Change::Action(ActionChange {
                provider: id("postgres@db-1"),
                consumer: Name::parse("wiki").unwrap(),
                consumer_machine: Some(Name::parse("app-1").unwrap()),
                action: ActionWord::Acknowledge,
                by: "ana".into(),
                ok: true,
                answer: "restoring from the backup".into(),
                until: Some(ts("2026-11-27T04:17:00Z")),
            }),
        };
        assert_eq!(HistoryRow::of(&acknowledged).transition(), Ok(acknowledged));
    }

    #[test]
    fn a_row_whose_columns_do_not_fit_its_kind_is_a_misfit_naming_the_column() {
        let row = |i: usize| HistoryRow::of(&one_of_each()[i]);
        let mut no_consumer = row(0);
        no_consumer.consumer = None;
        let mut bad_machine = row(0);
        bad_machine.consumer_machine = Some("App 1".into());
        let mut negative = row(9);
        negative.attempts = Some(-1);
        let mut no_by = row(13);
        no_by.by = None;
        let mut no_provider = row(5);
        no_provider.provider = None;
        let mut no_since = row(6);
        no_since.since = None;
        let mut no_done = row(14);
        no_done.done = None;
        let mut bad_action = row(14);
        bad_action.reason = Some("approve-everything".into());
        // A row written with another kind's columns.
        let mut other = row(7);
        other.kind = TransitionKind::FailingBegan;
        let cases = [
            (
                no_consumer,
                "history.consumer",
                "null in a failing-began row",
            ),
            (bad_machine, "history.consumer_machine", "not a valid name"),
            (
                negative,
                "history.attempts",
                "a negative count in a grant-unreachable row",
            ),
            (no_by, "history.by_name", "null in a note row"),
            (
                no_provider,
                "history.provider_module",
                "null in a heard-again row",
            ),
            (no_since, "history.since", "null in a following-again row"),
            (no_done, "history.done", "null in an action row"),
            (bad_action, "history.reason", "an action"),
            (other, "history.consumer", "null in a failing-began row"),
        ];
        for (row, column, reason) in cases {
            let misfit = row.clone().transition().unwrap_err();
            assert_eq!(misfit.column, column, "{row:?}");
            assert!(misfit.reason.contains(reason), "{misfit:?}");
        }
    }

    #[test]
    fn a_nul_is_written_as_a_replacement_character() {
        let mut t = one_of_each().swap_remove(0);
        if let Change::FailingBegan { error, .. } = &mut t.change {
            *error = "bad\0byte".into();
        }
        assert_eq!(HistoryRow::of(&t).error.as_deref(), Some("bad\u{FFFD}byte"));
    }
}
