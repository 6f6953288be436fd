//! A consumer's network namespace joined to the machine by a veth pair, for
//! the tests that check grants from a consumer's own network position (as
//! root). Where the kernel refuses namespaces, [`Bed::new`] says so loudly
//! (`SKIPPED: ...`) and returns `None`.
//!
//! Beds of any number of processes live side by side (tests run in
//! parallel, two copies of a suite may run at once, and a run killed before
//! its drops leaves its beds behind): each bed claims its names and its
//! subnet from the kernel, which grants each claim to one bed only, and
//! tries the next on a claim refused.
//!
//! - Its names (`mgt-PID-N` for the namespace, `mghPID-N` and `mgcPID-N` for
//!   the pair): `ip netns add` creates `/run/netns/NAME` exclusively, and
//!   `ip link add` fails on a name taken. A name taken is another process's
//!   (a pid reused after a killed run, or one of another pid namespace).
//! - Its subnet, a /30 of 198.18.0.0/15 (RFC 2544's range for benchmarks,
//!   no real network's): a route to it, `ip route add` (it fails when the
//!   main table already has a route to that very prefix, another bed's or
//!   an address's prefix route), then the machine's address with no prefix
//!   route of its own (`noprefixroute`). A subnet with an address of this
//!   machine in it, or inside a network this machine routes to (but for the
//!   default route), is not tried. Two links in one subnet would route one
//!   bed's packets to the other.
//!
//! A bed removes its links (its route with them) and its namespace on drop,
//! also when a test panics, or setting it up fails half way.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

static BEDS: AtomicU32 = AtomicU32::new(0);

/// The /30 subnets of 198.18.0.0/15.
const SUBNETS: u32 = 1 << 15;

/// The `k`th /30 of 198.18.0.0/15 (modulo their number): its prefix, the
/// machine's address and the consumer's.
fn subnet(k: u32) -> (String, String, String) {
    let base = u32::from(Ipv4Addr::new(198, 18, 0, 0)) + ((k % SUBNETS) << 2);
    let at = |i: u32| Ipv4Addr::from(base + i).to_string();
    (format!("{}/30", at(0)), at(1), at(2))
}

/// What `ip` printed on failing, and whether it said the thing to make was
/// there already (`File exists`: a name or a route claimed by another).
struct IpError {
    message: String,
    exists: bool,
}

/// `ip ARGS`, its messages in English (`File exists` is strerror's, which
/// a locale translates).
fn ip_command(args: &[&str]) -> Command {
    let mut command = Command::new("ip");
    command.args(args).env("LC_ALL", "C");
    command
}

/// Runs `ip ARGS`; its error when it fails.
fn ip(args: &[&str]) -> Result<(), IpError> {
    let out = ip_command(args).output().map_err(|e| IpError {
        message: format!("cannot run ip: {e}"),
        exists: false,
    })?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    Err(IpError {
        message: format!("ip {}: {}", args.join(" "), stderr.trim()),
        exists: stderr.contains("File exists"),
    })
}

/// Runs `ip ARGS`; panics with its message when it fails.
fn run(args: &[&str]) {
    if let Err(e) = ip(args) {
        panic!("a bed's `ip` failed: {}", e.message)
    }
}

/// What `ip ARGS` prints (nothing when it fails).
fn ip_out(args: &[&str]) -> String {
    ip_command(args)
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_default()
}

/// Whether a subnet is worth claiming: no address of this machine in it,
/// and no route to a network holding it but the default one.
fn looks_free(prefix: &str) -> bool {
    ip_out(&["-4", "-o", "addr", "show", "to", prefix])
        .trim()
        .is_empty()
        && ip_out(&["-4", "route", "show", "match", prefix])
            .lines()
            .all(|route| route.starts_with("default "))
}

/// A consumer's network namespace joined to the machine by a veth pair:
/// the machine's side has `host_ip`, the consumer's `ns_ip`.
pub struct Bed {
    /// The namespace's name (`ip netns`).
    pub name: String,
    host_link: String,
    /// The machine's side of the pair.
    pub host_ip: String,
    /// The consumer's side of the pair, inside the namespace.
    pub ns_ip: String,
}

impl Bed {
    /// A new bed, or `None` (said loudly) where the kernel refuses namespaces.
    pub fn new() -> Option<Bed> {
        let pid = std::process::id();
        for _ in 0..100 {
            let n = BEDS.fetch_add(1, Ordering::Relaxed);
            let tag = format!("{pid:x}-{n:x}");
            let name = format!("mgt-{tag}");
            match ip(&["netns", "add", &name]) {
                Ok(()) => {}
                // Another's: the next name.
                Err(e) if e.exists => continue,
                Err(e) => {
                    eprintln!("SKIPPED: the kernel refuses network namespaces here ({}); grants are not checked from a consumer's position in this run", e.message);
                    return None;
                }
            }
            // From here on, dropping `bed` removes what it holds.
            let mut bed = Bed {
                name,
                host_link: String::new(),
                host_ip: String::new(),
                ns_ip: String::new(),
            };
            let (host_link, peer) = (format!("mgh{tag}"), format!("mgc{tag}"));
            match ip(&[
                "link", "add", &host_link, "type", "veth", "peer", "name", &peer,
            ]) {
                Ok(()) => bed.host_link = host_link,
                // Another's (never deleted): the namespace goes, the next name.
                Err(e) if e.exists => continue,
                Err(e) => panic!("a bed's `ip` failed: {}", e.message),
            }
            bed.set_up(pid, n, &peer);
            return Some(bed);
        }
        panic!("no bed: 100 names in a row were taken (mgt-{pid:x}-*)");
    }

    /// Moves `peer` into the namespace, claims a subnet and gives both ends
    /// their addresses; returns once both ends carry packets.
    fn set_up(&mut self, pid: u32, n: u32, peer: &str) {
        run(&["link", "set", peer, "netns", &self.name]);
        // A route's device must be up before the route is added.
        run(&["link", "set", &self.host_link, "up"]);
        let first = pid.wrapping_mul(64).wrapping_add(n);
        let claimed = (0..SUBNETS).any(|k| {
            let (prefix, host_ip, ns_ip) = subnet(first.wrapping_add(k));
            if !looks_free(&prefix) {
                return false;
            }
            let route = [
                "route",
                "add",
                &prefix,
                "dev",
                &self.host_link,
                "scope",
                "link",
            ];
            match ip(&route) {
                Ok(()) => {
                    (self.host_ip, self.ns_ip) = (host_ip, ns_ip);
                    true
                }
                // Another's: the next subnet.
                Err(e) if e.exists => false,
                Err(e) => panic!("a bed's `ip` failed: {}", e.message),
            }
        });
        assert!(claimed, "no /30 of 198.18.0.0/15 is free for a bed");
        let (host_cidr, ns_cidr) = (format!("{}/30", self.host_ip), format!("{}/30", self.ns_ip));
        run(&[
            "addr",
            "add",
            &host_cidr,
            "dev",
            &self.host_link,
            "noprefixroute",
        ]);
        run(&["-n", &self.name, "addr", "add", &ns_cidr, "dev", peer]);
        run(&["-n", &self.name, "link", "set", peer, "up"]);
        run(&["-n", &self.name, "link", "set", "lo", "up"]);
        // A veth pair carries packets only once both ends are operational
        // (`state UP`), a few milliseconds after `up`: a first check made
        // before then loses its SYN and times out.
        let up = |args: &[&str]| ip_out(args).contains("state UP");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !(up(&["-o", "link", "show", "dev", &self.host_link])
            && up(&["-n", &self.name, "-o", "link", "show", "dev", peer]))
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the bed's veth pair {} / {peer} is not up after 5 s",
                self.host_link
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// The namespace's path, as a grant names it.
    pub fn netns(&self) -> PathBuf {
        PathBuf::from(format!("/run/netns/{}", self.name))
    }

    /// Drops the path from the consumer's namespace to `addr` (a blackhole
    /// route inside it); the machine's own path stays open.
    pub fn drop_path(&self, addr: &str) {
        run(&[
            "-n",
            &self.name,
            "route",
            "add",
            "blackhole",
            &format!("{addr}/32"),
        ]);
    }

    /// Removes what [`Bed::drop_path`] added.
    pub fn restore_path(&self, addr: &str) {
        run(&[
            "-n",
            &self.name,
            "route",
            "del",
            "blackhole",
            &format!("{addr}/32"),
        ]);
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        // The pair first: deleting one end deletes both, and the route to
        // the bed's subnet with them, at once (a namespace deleted goes
        // only once nothing holds it any more).
        if !self.host_link.is_empty() {
            let _ = ip(&["link", "del", &self.host_link]);
        }
        let _ = ip(&["netns", "del", &self.name]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What another process holds: a namespace, or a link with a route or
    /// an address; removed on drop.
    struct Another(Vec<Vec<String>>);

    impl Drop for Another {
        fn drop(&mut self) {
            for args in &self.0 {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let _ = ip(&args);
            }
        }
    }

    fn exists(args: &[&str]) -> bool {
        !ip_out(args).trim().is_empty()
    }

    /// The names and the subnet the next bed of this process would take
    /// first are another's (a bed of a killed run, with this pid; a route
    /// of another bed; an address of this machine): the bed takes the next
    /// ones, touches none of the others', and says no `SKIPPED`. (Before
    /// issue 42 a namespace name taken made `Bed::new` say the kernel
    /// refuses namespaces and the test pass unchecked, and two beds could
    /// both check a subnet free before either added its address.)
    #[test]
    fn a_bed_passes_over_names_and_subnets_taken_by_another() {
        if ip(&["netns", "list"]).is_err() {
            eprintln!("SKIPPED: no ip here");
            return;
        }
        let pid = std::process::id();
        // This test alone makes beds in this binary: the counter is ours.
        let n = BEDS.load(Ordering::Relaxed);
        let taken_name = format!("mgt-{pid:x}-{n:x}");
        if ip(&["netns", "add", &taken_name]).is_err() {
            eprintln!("SKIPPED: the kernel refuses network namespaces here");
            return;
        }
        let dummy = format!("mgx{pid:x}");
        let _another = Another(vec![
            vec!["netns".into(), "del".into(), taken_name.clone()],
            vec!["link".into(), "del".into(), dummy.clone()],
        ]);
        // The next bed (n + 1) tries the subnets from pid * 64 + n + 1 on:
        // the first has another's route, the second an address of this
        // machine.
        let first = pid.wrapping_mul(64).wrapping_add(n + 1);
        let (routed, _, _) = subnet(first);
        let (_, addressed, _) = subnet(first + 1);
        let other_end = format!("mgy{pid:x}");
        run(&[
            "link", "add", &dummy, "type", "veth", "peer", "name", &other_end,
        ]);
        run(&["link", "set", &dummy, "up"]);
        run(&["route", "add", &routed, "dev", &dummy]);
        run(&["addr", "add", &format!("{addressed}/32"), "dev", &dummy]);

        let bed = Bed::new().expect("a bed, not SKIPPED, though a name was taken");
        // A process beside this one may claim what this bed would take next:
        // the bed's name is a later one of this pid, its subnet a later one
        // in the order it tries them.
        let later = |of: &str| {
            of.strip_prefix(&format!("mgt-{pid:x}-"))
                .and_then(|k| u32::from_str_radix(k, 16).ok())
                .is_some_and(|k| k > n)
        };
        assert!(later(&bed.name), "{} after {taken_name}", bed.name);
        let k = (u32::from(bed.host_ip.parse::<Ipv4Addr>().unwrap())
            - u32::from(Ipv4Addr::new(198, 18, 0, 0)))
            / 4;
        assert!(
            k.wrapping_sub(first) % SUBNETS >= 2,
            "{} is in a subnet taken by another",
            bed.host_ip
        );
        let (prefix, host_ip, ns_ip) = subnet(k);
        assert_eq!((&bed.host_ip, &bed.ns_ip), (&host_ip, &ns_ip));
        assert!(exists(&["-o", "link", "show", "dev", &bed.host_link]));
        let mine = ip_out(&["-4", "-o", "addr", "show", "dev", &bed.host_link]);
        assert!(mine.contains(&format!("{host_ip}/30")), "{mine}");
        assert!(exists(&["-4", "route", "show", &prefix]));
        let name = bed.name.clone();
        let link = bed.host_link.clone();
        drop(bed);
        assert!(!exists(&["-o", "link", "show", "dev", &link]), "link left");
        assert!(
            !std::path::Path::new(&format!("/run/netns/{name}")).exists(),
            "namespace left"
        );
        assert!(!exists(&["-4", "route", "show", &prefix]), "route left");
        // Another's is untouched.
        assert!(std::path::Path::new(&format!("/run/netns/{taken_name}")).exists());
        assert!(exists(&["-4", "route", "show", &routed]));
    }
}
