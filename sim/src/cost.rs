//! Where a long run's wall time goes: the time spent in each phase of the
//! world's second (the plan's actions, the providers' passes, the
//! controller's turn, the ground truth) and of the check (each
//! invariant's reading), added up, so the scale run can say what a
//! simulated hour cost and on what.
//!
//! This is the one place the simulator reads the wall clock
//! (`std::time::Instant`): it measures the simulator, it decides nothing,
//! and nothing it reads reaches a plan, a check or an outcome, so a seed
//! still replays exactly.

use std::fmt;
use std::time::{Duration, Instant};

/// Wall time spent per phase, in the order the phases were first seen.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Costs {
    spent: Vec<(&'static str, Duration)>,
}

/// A phase being timed: [`Timer::stop`] adds its time to the costs.
#[derive(Debug)]
#[must_use = "a timer adds its time only when stopped"]
pub struct Timer {
    phase: &'static str,
    started: Instant,
}

impl Timer {
    /// Starts timing `phase`.
    pub fn start(phase: &'static str) -> Timer {
        Timer {
            phase,
            started: Instant::now(),
        }
    }

    /// Adds the time since the start to `costs`' phase.
    pub fn stop(self, costs: &mut Costs) {
        costs.add(self.phase, self.started.elapsed());
    }
}

/// The CPU time this thread has run so far, where the system says
/// (`/proc/thread-self/schedstat` on Linux; `None` elsewhere). Unlike the
/// wall time it does not grow when other processes take the cores.
pub fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

impl Costs {
    /// Adds `spent` to `phase`.
    pub fn add(&mut self, phase: &'static str, spent: Duration) {
        match self.spent.iter_mut().find(|(p, _)| *p == phase) {
            Some((_, total)) => *total += spent,
            None => self.spent.push((phase, spent)),
        }
    }

    /// Adds every phase of `other`.
    pub fn add_all(&mut self, other: &Costs) {
        for (phase, spent) in &other.spent {
            self.add(phase, *spent);
        }
    }

    /// The time of every phase together.
    pub fn total(&self) -> Duration {
        self.spent.iter().map(|(_, d)| *d).sum()
    }

    /// The time spent in `phase` (zero if never timed).
    pub fn of(&self, phase: &str) -> Duration {
        self.spent
            .iter()
            .find(|(p, _)| *p == phase)
            .map_or(Duration::ZERO, |(_, d)| *d)
    }

    /// What was spent since `earlier` (costs of the same run, taken before).
    pub fn since(&self, earlier: &Costs) -> Costs {
        Costs {
            spent: self
                .spent
                .iter()
                .map(|(p, d)| (*p, d.saturating_sub(earlier.of(p))))
                .collect(),
        }
    }
}

/// `12.3 s: passes 6.0 s (49 %), check I5 logs 2.1 s (17 %), …`, the
/// dearest phase first.
impl fmt::Display for Costs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.total();
        write!(f, "{:.1} s", total.as_secs_f64())?;
        let mut phases = self.spent.clone();
        phases.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        for (i, (phase, spent)) in phases.iter().enumerate() {
            let share = match total.is_zero() {
                true => 0.0,
                false => 100.0 * spent.as_secs_f64() / total.as_secs_f64(),
            };
            let sep = if i == 0 { ": " } else { ", " };
            write!(
                f,
                "{sep}{phase} {:.1} s ({share:.0} %)",
                spent.as_secs_f64()
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn phases_add_up_and_an_hour_is_what_was_spent_since_the_one_before() {
        let mut costs = Costs::default();
        costs.add("passes", ms(300));
        costs.add("check", ms(100));
        costs.add("passes", ms(300));
        assert_eq!(costs.of("passes"), ms(600));
        assert_eq!(costs.of("never"), Duration::ZERO);
        assert_eq!(costs.total(), ms(700));
        let before = costs.clone();
        costs.add("check", ms(400));
        costs.add("controller", ms(500));
        let hour = costs.since(&before);
        assert_eq!(hour.of("passes"), Duration::ZERO);
        assert_eq!(hour.of("check"), ms(400));
        assert_eq!(hour.of("controller"), ms(500));
        assert_eq!(hour.total(), ms(900));
        let mut both = before.clone();
        both.add_all(&hour);
        assert_eq!(both, costs);
    }

    #[test]
    fn the_line_puts_the_dearest_phase_first_with_its_share() {
        let mut costs = Costs::default();
        costs.add("check", ms(250));
        costs.add("passes", ms(750));
        assert_eq!(
            costs.to_string(),
            "1.0 s: passes 0.8 s (75 %), check 0.2 s (25 %)"
        );
        assert_eq!(Costs::default().to_string(), "0.0 s");
    }

    #[test]
    fn this_threads_cpu_time_grows_as_it_works() {
        let Some(before) = thread_cpu() else {
            return; // not on Linux
        };
        // The kernel adds up a thread's time at its ticks and switches, so
        // work until a reading moves (at most two seconds).
        let started = Instant::now();
        let mut x = 0u64;
        let after = loop {
            for i in 0..1_000_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            let after = thread_cpu().expect("read once, read again");
            if after > before || started.elapsed() > Duration::from_secs(2) {
                break after;
            }
        };
        assert!(after > before, "{before:?} then {after:?} ({x})");
    }

    #[test]
    fn a_timer_adds_its_time_to_its_phase() {
        let mut costs = Costs::default();
        let timer = Timer::start("passes");
        std::thread::sleep(ms(2));
        timer.stop(&mut costs);
        assert!(costs.of("passes") >= ms(2), "{costs}");
    }
}
