//! A consumer's network namespace joined to the machine by a veth pair, for
//! the tests that check grants from a consumer's own network position (as
//! root). Each bed has unique names and addresses (tests run in parallel),
//! and removes its namespace and links on drop. Where the kernel refuses
//! namespaces, [`Bed::new`] says so loudly (`SKIPPED: ...`) and returns
//! `None`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

static BEDS: AtomicU32 = AtomicU32::new(0);

/// The second and third bytes of a `10.a.b.0/30` no address of this
/// machine is in, trying from `a`, `1 + n % 250` on: a bed of another test
/// process (or one a killed run left behind) may hold the first choice, and
/// two links in one subnet would route the bed's packets to the other.
fn free_subnet(a: u32, n: u32) -> (u32, u32) {
    for step in 0..250 * 150 {
        let (a, b) = (100 + (a - 100 + step / 250) % 150, 1 + (n + step) % 250);
        let taken = Command::new("ip")
            .args([
                "-4",
                "-o",
                "addr",
                "show",
                "to",
                &format!("10.{a}.{b}.0/30"),
            ])
            .output()
            .map(|out| !out.stdout.is_empty())
            .unwrap_or(false);
        if !taken {
            return (a, b);
        }
    }
    (a, 1 + n % 250)
}

/// Runs `ip ARGS`; its error message when it fails.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
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
        let n = BEDS.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let tag = format!("{:x}{n:x}", pid % 0xffff);
        let (a, b) = free_subnet(100 + pid % 150, n);
        let bed = Bed {
            name: format!("mgt-{tag}"),
            host_link: format!("mgh{tag}"),
            host_ip: format!("10.{a}.{b}.1"),
            ns_ip: format!("10.{a}.{b}.2"),
        };
        if let Err(e) = ip(&["netns", "add", &bed.name]) {
            eprintln!("SKIPPED: the kernel refuses network namespaces here ({e}); grants are not checked from a consumer's position in this run");
            return None;
        }
        let peer = format!("mgc{tag}");
        let (host_cidr, ns_cidr) = (format!("{}/30", bed.host_ip), format!("{}/30", bed.ns_ip));
        let setup = [
            vec![
                "link",
                "add",
                &bed.host_link,
                "type",
                "veth",
                "peer",
                "name",
                &peer,
            ],
            vec!["link", "set", &peer, "netns", &bed.name],
            vec!["addr", "add", &host_cidr, "dev", &bed.host_link],
            vec!["link", "set", &bed.host_link, "up"],
            vec!["-n", &bed.name, "addr", "add", &ns_cidr, "dev", &peer],
            vec!["-n", &bed.name, "link", "set", &peer, "up"],
            vec!["-n", &bed.name, "link", "set", "lo", "up"],
        ];
        for args in setup {
            ip(&args).expect("setting up the bed");
        }
        // A veth pair carries packets only once both ends are operational
        // (`state UP`), a few milliseconds after `up`: a first check made
        // before then loses its SYN and times out.
        let up = |args: &[&str]| {
            Command::new("ip")
                .args(args)
                .output()
                .map(|out| String::from_utf8_lossy(&out.stdout).contains("state UP"))
                .unwrap_or(false)
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !(up(&["-o", "link", "show", "dev", &bed.host_link])
            && up(&["-n", &bed.name, "-o", "link", "show", "dev", &peer]))
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the bed's veth pair {} / {peer} is not up after 5 s",
                bed.host_link
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Some(bed)
    }

    /// The namespace's path, as a grant names it.
    pub fn netns(&self) -> PathBuf {
        PathBuf::from(format!("/run/netns/{}", self.name))
    }

    /// Drops the path from the consumer's namespace to `addr` (a blackhole
    /// route inside it); the machine's own path stays open.
    pub fn drop_path(&self, addr: &str) {
        ip(&[
            "-n",
            &self.name,
            "route",
            "add",
            "blackhole",
            &format!("{addr}/32"),
        ])
        .unwrap();
    }

    /// Removes what [`Bed::drop_path`] added.
    pub fn restore_path(&self, addr: &str) {
        ip(&[
            "-n",
            &self.name,
            "route",
            "del",
            "blackhole",
            &format!("{addr}/32"),
        ])
        .unwrap();
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
        let _ = ip(&["link", "del", &self.host_link]);
    }
}
