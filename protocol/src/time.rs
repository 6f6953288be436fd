//! Times in bodies: UTC, written as RFC 3339 with whole seconds.

use std::fmt;
use std::time::SystemTime;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A UTC time, written as RFC 3339 with whole seconds (`2026-10-05T00:04:00Z`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(SystemTime);

impl Timestamp {
    /// The time `at` (kept to the nanosecond; written with whole seconds).
    pub const fn from_system(at: SystemTime) -> Timestamp {
        Timestamp(at)
    }

    /// The system clock's time now.
    pub fn now() -> Timestamp {
        Timestamp(SystemTime::now())
    }

    /// The time as a `SystemTime`.
    pub const fn system_time(self) -> SystemTime {
        self.0
    }

    /// Parses an RFC 3339 UTC time (`Z`, optional fractional seconds).
    ///
    /// # Errors
    /// When `text` is not such a time.
    pub fn parse(text: &str) -> Result<Timestamp, humantime::TimestampError> {
        humantime::parse_rfc3339_weak(text).map(Timestamp)
    }
}

impl From<SystemTime> for Timestamp {
    fn from(at: SystemTime) -> Timestamp {
        Timestamp(at)
    }
}

impl From<Timestamp> for SystemTime {
    fn from(at: Timestamp) -> SystemTime {
        at.0
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_rfc3339_seconds(self.0))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Timestamp::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_rfc3339() {
        let t = Timestamp::parse("2026-10-05T00:04:00Z").unwrap();
        assert_eq!(t.to_string(), "2026-10-05T00:04:00Z");
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, "\"2026-10-05T00:04:00Z\"");
        assert_eq!(serde_json::from_str::<Timestamp>(&json).unwrap(), t);
        assert!(Timestamp::parse("yesterday").is_err());
    }
}
