//! The calling thread's context switches (`getrusage(RUSAGE_THREAD)`: `ru_nvcsw`,
//! `ru_nivcsw`): the one switch counter, for the checks that a thread really blocked (or
//! never did) and for counting preemptions. See getrusage(2).

use nix::sys::resource::{UsageWho, getrusage};

/// Context switches of one thread: so far ([`Switches::now`]) or between two readings
/// ([`Switches::since`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Switches {
    /// Switches because the thread blocked (gave the CPU up).
    pub voluntary: u64,
    /// Switches because the thread was preempted.
    pub involuntary: u64,
}

impl Switches {
    /// The calling thread's switches so far; zeroes if `getrusage` fails (so a difference of
    /// two failed readings is no switch).
    #[inline(always)]
    pub fn now() -> Switches {
        match getrusage(UsageWho::RUSAGE_THREAD) {
            Ok(u) => Switches {
                voluntary: u.voluntary_context_switches().max(0) as u64,
                involuntary: u.involuntary_context_switches().max(0) as u64,
            },
            Err(_) => Switches::default(),
        }
    }

    /// The switches from `before` to `self` (never negative).
    pub fn since(self, before: Switches) -> Switches {
        Switches {
            voluntary: self.voluntary.saturating_sub(before.voluntary),
            involuntary: self.involuntary.saturating_sub(before.involuntary),
        }
    }

    /// Both kinds.
    pub fn total(self) -> u64 {
        self.voluntary + self.involuntary
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeping_is_a_voluntary_switch() {
        let before = Switches::now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let d = Switches::now().since(before);
        assert!(d.voluntary >= 1, "{d:?}");
        assert_eq!(d.total(), d.voluntary + d.involuntary);
        assert_eq!(before.since(Switches::now()).voluntary, 0, "never negative");
    }
}
