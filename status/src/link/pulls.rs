//! What one pull says of pulling (pure): it failed, it proves nothing (it
//! came back empty while the bus was away), or it worked.
//!
//! A pull issued while the client is disconnected comes back empty and
//! without an error once the client's own expiry passes: nothing was
//! asked of the server, so it is no sign that pulling works again. Only a
//! pull that brought a message, or came back without an error while the
//! bus was connected from its start to its end, did.

/// What one pull says of pulling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Pulled {
    /// It ended in an error without a message.
    Failed,
    /// It came back empty while the bus was away at its start or end: it
    /// says nothing of the server.
    Unknown,
    /// It brought messages, or came back empty from a connected server.
    Worked,
}

/// How a pull that brought `messages`, ended in an error (`failed`) or
/// not, with the bus connected at its start (`connected_before`) and at
/// its end (`connected_after`), counts.
pub(super) fn pulled(
    messages: usize,
    failed: bool,
    connected_before: bool,
    connected_after: bool,
) -> Pulled {
    if messages > 0 {
        Pulled::Worked
    } else if failed {
        Pulled::Failed
    } else if connected_before && connected_after {
        Pulled::Worked
    } else {
        Pulled::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_pull_that_reached_the_server_says_pulling_works() {
        use Pulled::{Failed, Unknown, Worked};
        // (messages, failed, connected before, connected after, counts as)
        let cases = [
            (0, false, true, true, Worked),
            (3, false, true, true, Worked),
            // Messages came: the server answered, whatever the end was.
            (2, true, false, false, Worked),
            (1, false, false, true, Worked),
            (0, true, true, true, Failed),
            (0, true, false, false, Failed),
            // Empty and no error, the bus away at either end: the client's
            // own expiry, nothing asked of the server.
            (0, false, false, false, Unknown),
            (0, false, false, true, Unknown),
            (0, false, true, false, Unknown),
        ];
        for (messages, failed, before, after, expected) in cases {
            assert_eq!(
                pulled(messages, failed, before, after),
                expected,
                "{messages} messages, failed {failed}, connected {before} → {after}"
            );
        }
    }
}
