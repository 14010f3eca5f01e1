//! Every random choice of the stress test, as pure functions of a seeded generator and the
//! state they choose from: the same seed and the same state give the same choice, so a seed
//! replays a run's choices (the threads' interleaving aside). The generator is osprim's own
//! (`stats::rng`, xoshiro256** seeded through SplitMix64); each worker draws from its own
//! stream ([`worker_rng`]), the controller from stream 0.

use domain::chain::Kind;
use stats::rng::{Rng, derive_seed};

/// The controller's generator for `seed`.
pub fn controller_rng(seed: u64) -> Rng {
    Rng::new(derive_seed(seed, 0))
}

/// The keeper's generator (which worker to stop).
pub fn keeper_rng(seed: u64) -> Rng {
    Rng::new(derive_seed(seed, u64::MAX))
}

/// The generator of the `serial`-th worker (0, 1, …: the order the controller starts them).
pub fn worker_rng(seed: u64, serial: u64) -> Rng {
    Rng::new(derive_seed(seed, serial + 1))
}

/// A worker's next step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Create a domain.
    Create,
    /// Destroy one of its domains (`index`).
    Destroy(usize),
    /// Run a chain of calls.
    Chain,
    /// Read one of its domains (`index`) from outside: it must fault.
    Probe(usize),
    /// Adopt a domain a finished worker left.
    Adopt,
}

/// What a worker chooses from.
#[derive(Clone, Copy, Debug)]
pub struct View {
    /// Domains it owns.
    pub owned: usize,
    /// Domains alive in the process.
    pub live: usize,
    /// Where the controller wants the live count.
    pub target: usize,
    /// The most domains alive at once.
    pub max: usize,
    /// Domains waiting for a worker to adopt them.
    pub orphans: usize,
    /// Fault probes per thousand steps.
    pub probe_per_mille: u64,
}

/// The next step: a probe (`probe_per_mille`), an adoption (3 %, when there are orphans), a
/// create or destroy steering the live count to the target (35 %), a chain otherwise — or
/// whatever is possible instead.
pub fn step(rng: &mut Rng, v: View) -> Step {
    let r = rng.below(1000);
    let any = v.owned > 0;
    if r < v.probe_per_mille && any {
        return Step::Probe(rng.index(v.owned));
    }
    if r < v.probe_per_mille + 30 && v.orphans > 0 {
        return Step::Adopt;
    }
    let steer = r < v.probe_per_mille + 380 || !any;
    if steer {
        let grow = v.live < v.target || !any;
        if grow && v.live < v.max {
            return Step::Create;
        }
        if !grow && v.live > 1 && any {
            return Step::Destroy(rng.index(v.owned));
        }
        if !any {
            return if v.orphans > 0 { Step::Adopt } else { Step::Create };
        }
    }
    Step::Chain
}

/// How a chain's deepest level ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndChoice {
    /// A return (or a transfer back).
    Return,
    /// A raise.
    Raise,
    /// A touch of the owned domain `index` (not in the chain): a fault.
    Touch(usize),
}

/// A chain to run over a worker's owned domains.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainChoice {
    /// Owned-domain indices, distinct, outermost first.
    pub picks: Vec<usize>,
    /// The kind each level is entered by.
    pub kinds: Vec<Kind>,
    /// How the deepest level ends.
    pub end: EndChoice,
    /// The level catching a throw (`None`: the worker).
    pub catch: Option<usize>,
    /// The call kind's frame words.
    pub words: [u64; 3],
}

/// A chain over `owned` domains (at least one), 1 to `max_depth` levels deep (uniform, at
/// most `owned`), each level's kind uniform; it returns (60 %), raises (20 %) or touches a
/// domain outside the chain (20 %, a raise when there is none); a throw is caught at a level
/// above the deepest, or by the worker, uniformly.
pub fn chain(rng: &mut Rng, owned: usize, max_depth: usize) -> ChainChoice {
    let depth = 1 + rng.index(max_depth.min(owned).max(1));
    let mut picks: Vec<usize> = Vec::with_capacity(depth);
    while picks.len() < depth {
        let i = rng.index(owned);
        if !picks.contains(&i) {
            picks.push(i);
        }
    }
    let kinds = (0..depth).map(|_| Kind::ALL[rng.index(Kind::ALL.len())]).collect();
    let end = match rng.below(10) {
        0..=5 => EndChoice::Return,
        6 | 7 => EndChoice::Raise,
        _ if owned > depth => loop {
            let i = rng.index(owned);
            if !picks.contains(&i) {
                break EndChoice::Touch(i);
            }
        },
        _ => EndChoice::Raise,
    };
    let catch = match end {
        EndChoice::Return => None,
        _ => rng.index(depth).checked_sub(1),
    };
    let words = [rng.next_u64(), rng.next_u64(), rng.next_u64()];
    ChainChoice { picks, kinds, end, catch, words }
}

/// The next target of a count in `1..=max` wandering from `current`: a jump anywhere one
/// time in 20, else a step of up to a tenth of the range either way.
pub fn wander(rng: &mut Rng, current: usize, max: usize) -> usize {
    let max = max.max(1);
    if rng.below(20) == 0 {
        return 1 + rng.index(max);
    }
    let reach = max / 10 + 1;
    let step = rng.index(2 * reach + 1) as isize - reach as isize;
    (current as isize + step).clamp(1, max as isize) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scripted run of choices: steps over a changing view, the chains among them, and the
    /// controller's wandering targets.
    fn script(seed: u64) -> (Vec<Step>, Vec<ChainChoice>, Vec<usize>) {
        let mut rng = worker_rng(seed, 3);
        let mut v = View { owned: 0, live: 1, target: 500, max: 10_000, orphans: 2, probe_per_mille: 50 };
        let (mut steps, mut chains) = (Vec::new(), Vec::new());
        for _ in 0..2000 {
            let s = step(&mut rng, v);
            match s {
                Step::Create | Step::Adopt => {
                    v.owned += 1;
                    v.live += 1;
                }
                Step::Destroy(_) => {
                    v.owned -= 1;
                    v.live -= 1;
                }
                Step::Chain => chains.push(chain(&mut rng, v.owned, 20)),
                Step::Probe(_) => {}
            }
            steps.push(s);
        }
        let mut c = controller_rng(seed);
        let mut t = 1;
        let targets = (0..200)
            .map(|_| {
                t = wander(&mut c, t, 10_000);
                t
            })
            .collect();
        (steps, chains, targets)
    }

    #[test]
    fn the_same_seed_gives_the_same_choices() {
        assert_eq!(script(42), script(42));
        assert_ne!(script(42), script(43));
        assert_ne!(worker_rng(42, 0).next_u64(), worker_rng(42, 1).next_u64(), "workers draw apart");
    }

    #[test]
    fn chains_are_well_formed_and_cover_every_kind_and_end() {
        let mut rng = worker_rng(7, 0);
        let (mut kinds, mut ends, mut deepest) = (std::collections::HashSet::new(), [0; 3], 0);
        for _ in 0..5000 {
            let owned = 1 + rng.index(40);
            let c = chain(&mut rng, owned, 20);
            let d = c.picks.len();
            assert!((1..=20.min(owned)).contains(&d));
            assert_eq!(c.kinds.len(), d);
            let mut p = c.picks.clone();
            p.sort_unstable();
            p.dedup();
            assert_eq!(p.len(), d, "distinct domains");
            assert!(c.picks.iter().all(|&i| i < owned));
            assert!(c.catch.is_none_or(|x| x + 1 < d), "caught above the deepest level");
            match c.end {
                EndChoice::Return => {
                    ends[0] += 1;
                    assert_eq!(c.catch, None);
                }
                EndChoice::Raise => ends[1] += 1,
                EndChoice::Touch(i) => {
                    ends[2] += 1;
                    assert!(i < owned && !c.picks.contains(&i), "outside the chain");
                }
            }
            kinds.extend(c.kinds);
            deepest = deepest.max(d);
        }
        assert_eq!(kinds.len(), 4);
        assert!(ends.iter().all(|&n| n > 0), "{ends:?}");
        assert_eq!(deepest, 20);
    }

    #[test]
    fn targets_wander_over_the_whole_range() {
        let mut rng = controller_rng(1);
        let (mut t, mut lo, mut hi) = (1, usize::MAX, 0);
        for _ in 0..10_000 {
            t = wander(&mut rng, t, 10_000);
            assert!((1..=10_000).contains(&t));
            lo = lo.min(t);
            hi = hi.max(t);
        }
        assert!(lo < 100 && hi > 9_900, "{lo}..{hi}");
    }

    #[test]
    fn steps_steer_the_live_count_and_never_leave_its_range() {
        let mut rng = worker_rng(9, 0);
        let v = View { owned: 5, live: 10_000, target: 10_000, max: 10_000, orphans: 0, probe_per_mille: 50 };
        for _ in 0..1000 {
            assert_ne!(step(&mut rng, v), Step::Create, "never past the maximum");
        }
        let v = View { owned: 1, live: 1, target: 1, max: 10, orphans: 0, probe_per_mille: 50 };
        for _ in 0..1000 {
            assert!(!matches!(step(&mut rng, v), Step::Destroy(_)), "never below one");
        }
    }
}
