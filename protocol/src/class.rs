//! The four classes of failure a person reading `status` needs first.

/// Why a consumer's provision failed, as the mesh reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// The backend refused a login: a password or secret was rejected.
    CredentialsRejected,
    /// The backend could not be reached in time (refused, reset, timed out, shutting down).
    Unreachable,
    /// The consumer's minted secret was missing, unreadable or empty.
    SecretUnreadable,
    /// Any other refusal.
    Refused,
}

impl Class {
    /// Every class, in a stable order.
    pub const ALL: [Class; 4] = [
        Class::CredentialsRejected,
        Class::Unreachable,
        Class::SecretUnreadable,
        Class::Refused,
    ];

    /// The class as it is written on the bus and in `status`.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::CredentialsRejected => "credentials-rejected",
            Class::Unreachable => "unreachable",
            Class::SecretUnreadable => "secret-unreadable",
            Class::Refused => "refused",
        }
    }
}

crate::wire_words!(Class, "a failure class");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_names_round_trip() {
        for class in Class::ALL {
            let json = serde_json::to_string(&class).unwrap();
            assert_eq!(json, format!("\"{}\"", class.as_str()));
            assert_eq!(serde_json::from_str::<Class>(&json).unwrap(), class);
            assert_eq!(class.as_str().parse::<Class>().unwrap(), class);
        }
        let error = "bogus".parse::<Class>().unwrap_err().to_string();
        assert_eq!(
            error,
            "\"bogus\" is not a failure class (one of credentials-rejected, unreachable, \
             secret-unreadable, refused)"
        );
    }
}
