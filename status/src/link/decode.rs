//! A message of the stream into a [`Received`] event (pure).

use mesh_protocol::subject::parse_event_subject;
use mesh_protocol::{Event, ModuleId};

use crate::model::text::{cut_event, cut_text};
use crate::model::Received;

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

/// Reads a message into an event received at its place in the stream
/// `(epoch, seq)`. The emitter (machine, module) comes from the
/// subject only; whatever the body claims about it is ignored. Free text is
/// cut to its start ([`cut_text`]), and so is what is reported of a
/// malformed body (a parser's message may quote the body).
///
/// # Errors
/// [`Malformed`] when the subject or the body is not a valid event.
pub fn decode(subject: &str, body: &[u8], epoch: u64, seq: u64) -> Result<Received, Malformed> {
    let (machine, module, kind) = parse_event_subject(subject).ok_or(Malformed::Subject)?;
    let mut event =
        Event::parse(kind, body).map_err(|e| Malformed::Body(cut_text(&e.to_string()).into()))?;
    cut_event(&mut event);
    Ok(Received {
        epoch,
        seq,
        stored_at: None,
        emitter: ModuleId::new(module, machine),
        event,
    })
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
            let got = decode(subject, body.as_bytes(), 1, 7);
            match (got, expected) {
                (Ok(received), Ok((module, machine))) => {
                    assert_eq!(received.emitter.module.as_str(), *module);
                    assert_eq!(received.emitter.machine.as_str(), *machine);
                    assert_eq!(received.seq, 7);
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
        let received = decode(
            "mesh.event.db-1.postgres.provisioner.failing",
            body.as_bytes(),
            1,
            1,
        )
        .unwrap();
        assert_eq!(received.emitter.to_string(), "postgres@db-1");
    }

    #[test]
    fn huge_text_is_cut_before_it_goes_anywhere() {
        use crate::model::text::MAX_TEXT_BYTES;
        let huge = "é".repeat(300_000);
        let body = FAILING.replace("password authentication failed", &huge);
        let received = decode(
            "mesh.event.db-1.postgres.provisioner.failing",
            body.as_bytes(),
            1,
            1,
        )
        .unwrap();
        let Event::Failing(f) = received.event else {
            panic!("a failing event")
        };
        assert!(f.error.len() <= MAX_TEXT_BYTES && f.error.ends_with('…'));
        // A bad field of 600 KB: the parser's message quotes it; cut too.
        let bad = FAILING.replace(r#""attempts":61"#, &format!(r#""attempts":"{huge}""#));
        let Err(Malformed::Body(reason)) = decode(
            "mesh.event.db-1.postgres.provisioner.failing",
            bad.as_bytes(),
            1,
            2,
        ) else {
            panic!("malformed")
        };
        assert!(reason.len() <= MAX_TEXT_BYTES, "{}", reason.len());
    }
}
