//! What the console lets clients without its token hold (pure: every
//! decision takes `now` and says what to do; `conns` and `server` act).
//!
//! - [`Unproven`]: the connections that have not yet sent a request with
//!   the token or the session cookie, in arrival order. At most `cap` of
//!   them are held: a new one past the cap closes the oldest, so clients
//!   that open connections and never finish a request cannot keep the
//!   token holder's new connection out (it sends its request at once and
//!   leaves this pool).
//! - [`LoginLimit`]: wrong tokens at `POST /login` per client address, a
//!   token bucket: `burst` at once, then one each `every`; beyond it the
//!   login answers 429 with when to try again. At most `cap` addresses are
//!   remembered (the one seen longest ago is forgotten first).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// The connections not proven yet, oldest first.
#[derive(Debug)]
pub(crate) struct Unproven {
    cap: usize,
    order: VecDeque<u64>,
}

impl Unproven {
    /// At most `cap` held (at least 1).
    pub(crate) fn new(cap: usize) -> Unproven {
        Unproven {
            cap: cap.max(1),
            order: VecDeque::new(),
        }
    }

    /// Connection `id` arrives: held; returns the one to close to make
    /// room (the oldest), if the pool was full.
    pub(crate) fn admit(&mut self, id: u64) -> Option<u64> {
        let evicted = (self.order.len() >= self.cap)
            .then(|| self.order.pop_front())
            .flatten();
        self.order.push_back(id);
        evicted
    }

    /// Connection `id` sent the token or the session: it leaves the pool
    /// (never closed to make room). Whether it was in it.
    pub(crate) fn prove(&mut self, id: u64) -> bool {
        self.leave(id)
    }

    /// Connection `id` ended. Whether it was in the pool.
    pub(crate) fn leave(&mut self, id: u64) -> bool {
        match self.order.iter().position(|&x| x == id) {
            Some(at) => {
                self.order.remove(at);
                true
            }
            None => false,
        }
    }

    /// The oldest held, to close when the process runs out of file
    /// descriptors.
    pub(crate) fn oldest(&mut self) -> Option<u64> {
        self.order.pop_front()
    }

    /// How many are held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }
}

/// One address's bucket: tokens left as of `at`.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Wrong logins per client address (see the module).
#[derive(Debug)]
pub(crate) struct LoginLimit {
    burst: u32,
    every: Duration,
    cap: usize,
    buckets: HashMap<IpAddr, Bucket>,
}

/// Wrong tokens allowed at once from one address.
pub(crate) const LOGIN_BURST: u32 = 5;
/// Then one more each.
pub(crate) const LOGIN_EVERY: Duration = Duration::from_secs(10);
/// Addresses remembered.
pub(crate) const LOGIN_ADDRESSES: usize = 4096;

impl LoginLimit {
    /// `burst` wrong tokens at once, one more each `every`, `cap`
    /// addresses remembered.
    pub(crate) fn new(burst: u32, every: Duration, cap: usize) -> LoginLimit {
        LoginLimit {
            burst: burst.max(1),
            every: every.max(Duration::from_millis(1)),
            cap: cap.max(1),
            buckets: HashMap::new(),
        }
    }

    fn refilled(&self, b: Bucket, now: Instant) -> f64 {
        let gained = now.saturating_duration_since(b.at).as_secs_f64() / self.every.as_secs_f64();
        (b.tokens + gained).min(f64::from(self.burst))
    }

    /// Whether `ip` may try a token now; when not, how long until it may.
    pub(crate) fn check(&self, ip: IpAddr, now: Instant) -> Result<(), Duration> {
        let Some(&b) = self.buckets.get(&ip) else {
            return Ok(());
        };
        let tokens = self.refilled(b, now);
        if tokens >= 1.0 {
            Ok(())
        } else {
            Err(self.every.mul_f64(1.0 - tokens))
        }
    }

    /// `ip` sent a wrong token at `now`.
    pub(crate) fn failed(&mut self, ip: IpAddr, now: Instant) {
        let tokens = match self.buckets.get(&ip) {
            Some(&b) => self.refilled(b, now),
            None => f64::from(self.burst),
        };
        if !self.buckets.contains_key(&ip) && self.buckets.len() >= self.cap {
            let oldest = self
                .buckets
                .iter()
                .min_by_key(|(_, b)| b.at)
                .map(|(k, _)| *k);
            if let Some(oldest) = oldest {
                self.buckets.remove(&oldest);
            }
        }
        self.buckets.insert(
            ip,
            Bucket {
                tokens: (tokens - 1.0).max(0.0),
                at: now,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_unproven_connection_makes_room_and_a_proven_one_never_does() {
        let mut pool = Unproven::new(3);
        assert_eq!(
            [pool.admit(1), pool.admit(2), pool.admit(3)],
            [None, None, None]
        );
        assert!(pool.prove(2));
        assert_eq!(pool.admit(4), None, "2 left: room");
        assert_eq!(pool.admit(5), Some(1), "the oldest goes");
        assert_eq!(pool.admit(6), Some(3));
        assert!(!pool.prove(2), "proven once");
        assert!(!pool.leave(1), "closed already");
        assert!(pool.leave(5));
        assert_eq!(pool.len(), 2);
        assert_eq!(
            (pool.oldest(), pool.oldest(), pool.oldest()),
            (Some(4), Some(6), None)
        );
        let mut one = Unproven::new(0);
        assert_eq!(
            (one.admit(1), one.admit(2)),
            (None, Some(1)),
            "at least one"
        );
    }

    /// A flood of half-sent requests never holds the pool: each new
    /// connection is held, however many came before.
    #[test]
    fn a_new_connection_is_always_held() {
        let mut pool = Unproven::new(256);
        for id in 0..1_100 {
            pool.admit(id);
        }
        assert_eq!(pool.len(), 256);
        assert_eq!(pool.admit(9_999), Some(1_100 - 256));
        assert!(pool.prove(9_999), "the token holder's request is in");
    }

    #[test]
    fn wrong_logins_are_limited_per_address_and_the_bucket_refills() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let (a, b): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        let mut limit = LoginLimit::new(3, Duration::from_secs(10), 16);
        for _ in 0..3 {
            assert_eq!(limit.check(a, at(0)), Ok(()));
            limit.failed(a, at(0));
        }
        assert_eq!(limit.check(a, at(0)), Err(Duration::from_secs(10)));
        assert_eq!(limit.check(a, at(4)), Err(Duration::from_secs(6)));
        assert_eq!(limit.check(b, at(0)), Ok(()), "another address is not held");
        assert_eq!(limit.check(a, at(10)), Ok(()), "one more after 10 s");
        limit.failed(a, at(10));
        assert!(limit.check(a, at(10)).is_err());
        assert_eq!(limit.check(a, at(40)), Ok(()));
        limit.failed(a, at(100));
        limit.failed(a, at(100));
        assert_eq!(limit.check(a, at(100)), Ok(()), "refilled to 3, two spent");
    }

    #[test]
    fn at_most_cap_addresses_are_remembered_the_oldest_forgotten() {
        let t0 = Instant::now();
        let mut limit = LoginLimit::new(1, Duration::from_secs(60), 2);
        let ip = |n: u8| IpAddr::from([192, 0, 2, n]);
        limit.failed(ip(1), t0);
        limit.failed(ip(2), t0 + Duration::from_secs(1));
        limit.failed(ip(3), t0 + Duration::from_secs(2));
        assert_eq!(limit.buckets.len(), 2);
        assert_eq!(
            limit.check(ip(1), t0 + Duration::from_secs(2)),
            Ok(()),
            "forgotten"
        );
        assert!(limit.check(ip(3), t0 + Duration::from_secs(2)).is_err());
    }
}
