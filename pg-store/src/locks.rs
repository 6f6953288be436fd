//! The key locks a round takes first, so that several controllers can
//! apply rounds to one store at once (the comment on `LOCK_KEYS` says why).

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
pub(super) const LOCK_KEYS: &str =
    "SELECT pg_advisory_xact_lock($1::int4, b) FROM unnest($2::int4[]) AS b";

/// The first key of the round locks ("mesh" in ASCII); their second is a
/// bucket. The migrations' lock is a one-key (bigint) lock: another space.
pub(super) const LOCK_CLASS: i32 = 0x6d65_7368;

/// How many buckets keys are hashed into: a round holds at most this many
/// locks, whatever its size (PostgreSQL's lock table is bounded, by default
/// 64 × max_connections entries for the whole server).
pub(crate) const LOCK_BUCKETS: u32 = 1024;

/// The bucket of a key made of `parts` (FNV-1a: the same in every build
/// of every controller sharing the store).
pub(super) fn bucket(parts: &[&str]) -> i32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain(std::iter::once(0)) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    i32::try_from(hash % u64::from(LOCK_BUCKETS)).unwrap_or(0)
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
}
