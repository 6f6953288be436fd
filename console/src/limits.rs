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
//!   login answers 429 with when to try again. An IPv6 client counts by
//!   its /64 (one host's share: a client that takes a new address of its
//!   own for each try is still one client). At most `cap` clients are
//!   remembered (the one whose bucket fills first is forgotten first).

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv6Addr};
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

/// Wrong logins per client (see the module).
#[derive(Debug)]
pub(crate) struct LoginLimit {
    burst: u32,
    every: Duration,
    cap: usize,
    /// Per client, when its bucket is full again: whole nanoseconds, no
    /// rounding, so a client that waits what [`LoginLimit::check`] said is
    /// let in then.
    full_at: HashMap<IpAddr, Instant>,
}

/// Wrong tokens allowed at once from one client.
pub(crate) const LOGIN_BURST: u32 = 5;
/// Then one more each.
pub(crate) const LOGIN_EVERY: Duration = Duration::from_secs(10);
/// Clients remembered.
pub(crate) const LOGIN_ADDRESSES: usize = 4096;

/// The client `ip` counts as for the login's limit: an IPv4 address (an
/// IPv4-mapped IPv6 one as its IPv4 address) as itself, an IPv6 address as
/// its /64.
fn client(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from_bits(v6.to_bits() & !u128::from(u64::MAX))),
        },
    }
}

impl LoginLimit {
    /// `burst` wrong tokens at once, one more each `every`, `cap`
    /// clients remembered.
    pub(crate) fn new(burst: u32, every: Duration, cap: usize) -> LoginLimit {
        LoginLimit {
            burst: burst.max(1),
            every: every.max(Duration::from_millis(1)),
            cap: cap.max(1),
            full_at: HashMap::new(),
        }
    }

    /// Whether `ip` may try a token now; when not, how long until it may.
    ///
    /// The bucket (`burst` tokens, one back each `every`) is kept as the
    /// instant it is full again: a token is left while that instant is at
    /// most `(burst - 1) * every` away.
    pub(crate) fn check(&self, ip: IpAddr, now: Instant) -> Result<(), Duration> {
        let Some(&full_at) = self.full_at.get(&client(ip)) else {
            return Ok(());
        };
        let spent = full_at.saturating_duration_since(now);
        match spent.checked_sub(self.every * (self.burst - 1)) {
            Some(wait) if !wait.is_zero() => Err(wait),
            _ => Ok(()),
        }
    }

    /// `ip` sent a wrong token at `now`: one token spent.
    pub(crate) fn failed(&mut self, ip: IpAddr, now: Instant) {
        let ip = client(ip);
        if !self.full_at.contains_key(&ip) && self.full_at.len() >= self.cap {
            // The client whose bucket fills first is the least missed.
            let soonest = self
                .full_at
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(k, _)| *k);
            if let Some(soonest) = soonest {
                self.full_at.remove(&soonest);
            }
        }
        let full_at = self.full_at.entry(ip).or_insert(now);
        *full_at = (*full_at).max(now) + self.every;
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
    fn an_ipv6_client_counts_by_its_64_and_a_mapped_ipv4_as_itself() {
        let t0 = Instant::now();
        let mut limit = LoginLimit::new(2, Duration::from_secs(10), 16);
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        limit.failed(ip("2001:db8:1:2::1"), t0);
        limit.failed(ip("2001:db8:1:2:ffff:ffff:ffff:ffff"), t0);
        assert!(
            limit.check(ip("2001:db8:1:2::abcd"), t0).is_err(),
            "the same /64"
        );
        assert_eq!(
            limit.check(ip("2001:db8:1:3::1"), t0),
            Ok(()),
            "another /64"
        );
        limit.failed(ip("::ffff:192.0.2.7"), t0);
        limit.failed(ip("192.0.2.7"), t0);
        assert!(limit.check(ip("192.0.2.7"), t0).is_err());
        assert!(limit.check(ip("::ffff:192.0.2.7"), t0).is_err());
        assert_eq!(limit.check(ip("192.0.2.8"), t0), Ok(()));
    }

    /// Every burst, pace and rhythm of wrong tokens, 200 tries each: what
    /// `check` lets through never exceeds `burst` plus one per `every`
    /// since the first try; a client held is let in after exactly the wait
    /// `check` said, not a nanosecond before; one that keeps to the pace
    /// is never held.
    #[test]
    fn the_bucket_never_lets_more_through_than_its_rate_and_its_wait_is_exact() {
        let t0 = Instant::now();
        let ip: IpAddr = "192.0.2.9".parse().unwrap();
        for burst in 1..=6u32 {
            for every_ms in [1u64, 999, 3_000, 10_000] {
                let every = Duration::from_millis(every_ms);
                for step_ms in [0u64, 1, 100, 250, 999, 1_000, 2_500, 10_000] {
                    let mut limit = LoginLimit::new(burst, every, 4);
                    let mut let_in = 0u64;
                    for n in 0..200u64 {
                        let now = t0 + Duration::from_millis(n * step_ms);
                        let elapsed = now - t0;
                        match limit.check(ip, now) {
                            Ok(()) => {
                                let_in += 1;
                                limit.failed(ip, now);
                                let most = u64::from(burst)
                                    + u64::try_from(elapsed.as_millis()).unwrap() / every_ms;
                                assert!(
                                    let_in <= most,
                                    "burst {burst}, every {every_ms} ms, a try each {step_ms} ms: \
                                     {let_in} let in by {elapsed:?}, at most {most}"
                                );
                            }
                            Err(wait) => {
                                assert!(wait > Duration::ZERO && wait <= every, "{wait:?}");
                                let at = now + wait;
                                assert!(
                                    limit.check(ip, at).is_ok(),
                                    "burst {burst}, every {every_ms} ms: held after {wait:?}"
                                );
                                assert!(
                                    limit.check(ip, at - Duration::from_nanos(1)).is_err(),
                                    "burst {burst}, every {every_ms} ms: let in before {wait:?}"
                                );
                            }
                        }
                    }
                    if step_ms >= every_ms {
                        assert_eq!(let_in, 200, "at the pace, never held");
                    }
                }
            }
        }
    }

    #[test]
    fn at_most_cap_addresses_are_remembered_the_oldest_forgotten() {
        let t0 = Instant::now();
        let mut limit = LoginLimit::new(1, Duration::from_secs(60), 2);
        let ip = |n: u8| IpAddr::from([192, 0, 2, n]);
        limit.failed(ip(1), t0);
        limit.failed(ip(2), t0 + Duration::from_secs(1));
        limit.failed(ip(3), t0 + Duration::from_secs(2));
        assert_eq!(limit.full_at.len(), 2);
        assert_eq!(
            limit.check(ip(1), t0 + Duration::from_secs(2)),
            Ok(()),
            "forgotten"
        );
        assert!(limit.check(ip(3), t0 + Duration::from_secs(2)).is_err());
    }
}
