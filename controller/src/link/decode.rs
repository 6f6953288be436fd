//! Pure pieces of the link: a message into a [`Word`], and the growing NAK delay.

use std::time::Duration;

use mesh_sdk::event::parse_event_subject;
use mesh_sdk::Event;

use crate::model::{ModuleId, Word};

/// A message that is not an event the store can take: logged and terminated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    /// The subject is not `mesh.event.<machine>.<module>.provisioner.<kind>`
    /// with valid names and a known kind.
    #[error("subject is not a provider event subject")]
    Subject,
    /// The body does not parse as the kind its subject names.
    #[error("{0}")]
    Body(String),
}

/// Reads a message into a word. The emitter (machine, module) comes from the
/// subject only; whatever the body claims about it is ignored.
///
/// # Errors
/// [`Malformed`] when the subject or the body is not a valid event.
pub fn decode(subject: &str, body: &[u8], seq: u64) -> Result<Word, Malformed> {
    let (machine, module, kind) = parse_event_subject(subject).ok_or(Malformed::Subject)?;
    let event = Event::parse(kind, body).map_err(|e| Malformed::Body(e.to_string()))?;
    Ok(Word {
        seq,
        emitter: ModuleId::new(module, machine),
        event,
    })
}

/// The NAK delay while the store is away: `first`, doubling, at most `max`;
/// back to `first` once the store took words again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    streak: u32,
}

impl Backoff {
    /// A backoff starting at `first`, capped at `max`.
    pub fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            max: max.max(first),
            streak: 0,
        }
    }

    /// The delay for the next failure in a row.
    pub fn next_delay(&mut self) -> Duration {
        let factor = 1u32 << self.streak.min(20);
        self.streak = self.streak.saturating_add(1);
        self.first.saturating_mul(factor).min(self.max)
    }

    /// Failures in a row so far.
    pub fn streak(&self) -> u32 {
        self.streak
    }

    /// The store took words: start again from `first`.
    pub fn reset(&mut self) {
        self.streak = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAILING: &str = r#"{"v":1,"consumer":"forge","consumer_machine":"app-1","provision":"postgres-database","class":"credentials-rejected","error":"password authentication failed","since":"2026-10-05T00:04:00Z","attempts":61,"said_at":"2026-10-05T00:09:00Z"}"#;

    #[test]
    fn decoding_table() {
        type Case<'a> = (&'a str, &'a str, Result<(&'a str, &'a str), Malformed>);
        let cases: &[Case] = &[
            (
                "mesh.event.db-1.postgres.provisioner.failing",
                FAILING,
                Ok(("postgres", "db-1")),
            ),
            (
                "mesh.event.db-1.postgres.provisioner.recovered",
                FAILING,
                Err(Malformed::Body(String::new())),
            ),
            (
                "mesh.event.db-1.postgres.provisioner.failing",
                "not json",
                Err(Malformed::Body(String::new())),
            ),
            (
                "mesh.event.db-1.postgres.provisioner.other",
                FAILING,
                Err(Malformed::Subject),
            ),
            (
                "mesh.event.DB.postgres.provisioner.failing",
                FAILING,
                Err(Malformed::Subject),
            ),
            ("mesh.event.db-1.postgres", FAILING, Err(Malformed::Subject)),
        ];
        for (subject, body, expected) in cases {
            let got = decode(subject, body.as_bytes(), 7);
            match (got, expected) {
                (Ok(word), Ok((module, machine))) => {
                    assert_eq!(word.emitter.module.as_str(), *module);
                    assert_eq!(word.emitter.machine.as_str(), *machine);
                    assert_eq!(word.seq, 7);
                }
                (Err(Malformed::Body(_)), Err(Malformed::Body(_))) => {}
                (Err(Malformed::Subject), Err(Malformed::Subject)) => {}
                (got, expected) => panic!("{subject} {body}: {got:?} vs {expected:?}"),
            }
        }
    }

    #[test]
    fn a_claimed_emitter_in_the_body_is_ignored() {
        let body = FAILING.replace(r#""v":1,"#, r#""v":1,"module":"other","machine":"x","#);
        let word = decode(
            "mesh.event.db-1.postgres.provisioner.failing",
            body.as_bytes(),
            1,
        )
        .unwrap();
        assert_eq!(word.emitter.to_string(), "postgres@db-1");
    }

    #[test]
    fn backoff_doubles_to_its_cap_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(250), Duration::from_secs(2));
        let delays: Vec<u128> = (0..6).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(delays, [250, 500, 1000, 2000, 2000, 2000]);
        assert_eq!(b.streak(), 6);
        b.reset();
        assert_eq!(b.next_delay(), Duration::from_millis(250));
        let mut long = Backoff::new(Duration::from_secs(1), Duration::from_secs(30));
        for _ in 0..100 {
            assert!(long.next_delay() <= Duration::from_secs(30));
        }
    }
}
