//! The memory layout each worker is given on purpose, so that the run's intervals cover what
//! layout alone does to a figure instead of one layout's luck.
//!
//! Mytkowicz, Diwan, Hauswirth and Sweeney ("Producing wrong data without doing anything
//! obviously wrong!", ASPLOS 2009) moved results by several percent with the size of the
//! environment alone (it shifts the initial stack); Curtsinger and Berger (STABILIZER, ASPLOS
//! 2013) randomise stack, heap and code placement so that measurements average over layouts.
//! osprim varies, per worker:
//! - the **stack**: an environment variable ([`PAD_VAR`]) of 0 to [`MAX_PAD_BYTES`] bytes,
//!   placed by the kernel above the initial stack, so every address below it moves (the
//!   worker then takes it out of its environment, so programs its benchmarks start do not
//!   carry it);
//! - the **heap**: a block of 0 to [`MAX_HEAP_OFFSET_BYTES`] bytes and 0 to [`MAX_HEAP_BLOCKS`]
//!   small blocks, allocated, touched and leaked before anything else ([`HEAP_VAR`]);
//! - **ASLR** stays on: the kernel randomises stack, mmap, vDSO and (at level 2) heap bases
//!   afresh for each worker (`/proc/sys/kernel/randomize_va_space` is recorded), and a worker
//!   of an osprim running without randomization gets it back (`sys::worker`).
//!
//! The choices come from a generator seeded by the run's start time and process id, so each
//! execution differs and each run differs; every choice is recorded in the result file
//! (`model::Execution`).

/// The environment variable whose length shifts the worker's initial stack.
pub const PAD_VAR: &str = "OSPRIM_LAYOUT_PAD";

/// The environment variable that tells the worker its heap offset: `BYTES,BLOCKS`.
pub const HEAP_VAR: &str = "OSPRIM_LAYOUT_HEAP";

/// Longest pad, bytes (a page: every stack alignment the pad can give within a page).
pub const MAX_PAD_BYTES: usize = 4096;

/// Largest leaked block, bytes (under glibc's 128 KiB mmap threshold: it moves the heap).
pub const MAX_HEAP_OFFSET_BYTES: usize = 64 * 1024;

/// Most small blocks leaked after it.
pub const MAX_HEAP_BLOCKS: usize = 64;

/// One worker's layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// Bytes of the pad variable's value.
    pub env_pad_bytes: usize,
    /// Bytes of the first leaked block.
    pub heap_offset_bytes: usize,
    /// Small blocks leaked after it.
    pub heap_blocks: usize,
}

/// Draws layouts (splitmix64: Steele, Lea and Flood, OOPSLA 2014).
pub struct Layouts(u64);

impl Layouts {
    /// A generator seeded by the run's start and process id.
    pub fn for_run(started: std::time::SystemTime) -> Layouts {
        let nanos = started.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
        Layouts(nanos ^ (u64::from(std::process::id()) << 32) ^ 0x6a09_e667_f3bc_c908)
    }

    /// A generator with a given seed (tests).
    pub fn seeded(seed: u64) -> Layouts {
        Layouts(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % (n as u64 + 1)) as usize
    }

    /// The next worker's layout.
    pub fn draw(&mut self) -> Layout {
        Layout {
            env_pad_bytes: self.below(MAX_PAD_BYTES),
            heap_offset_bytes: self.below(MAX_HEAP_OFFSET_BYTES),
            heap_blocks: self.below(MAX_HEAP_BLOCKS),
        }
    }
}

impl Layout {
    /// The environment that gives a worker this layout.
    pub fn env(&self) -> [(&'static str, String); 2] {
        [
            (PAD_VAR, "x".repeat(self.env_pad_bytes)),
            (HEAP_VAR, format!("{},{}", self.heap_offset_bytes, self.heap_blocks)),
        ]
    }
}

/// In the worker, first thing: reads the layout from the environment, leaks the heap blocks
/// it asks for, and takes both variables out of the environment. Returns what it applied
/// (zero for what the environment did not say).
///
/// Call it while the process has one thread (`sys::worker::forget_env`).
pub fn apply_in_worker() -> Layout {
    let env_pad_bytes = std::env::var_os(PAD_VAR).map_or(0, |v| v.len());
    let (heap_offset_bytes, heap_blocks) = std::env::var(HEAP_VAR)
        .ok()
        .and_then(|v| {
            let (a, b) = v.split_once(',')?;
            Some((a.parse::<usize>().ok()?.min(MAX_HEAP_OFFSET_BYTES), b.parse::<usize>().ok()?.min(MAX_HEAP_BLOCKS)))
        })
        .unwrap_or((0, 0));
    if heap_offset_bytes > 0 {
        // Touched, so its pages are really there; leaked, so the heap stays shifted.
        let block = vec![1u8; heap_offset_bytes];
        std::mem::forget(std::hint::black_box(block));
    }
    let mut sizes = Layouts::seeded(heap_offset_bytes as u64 ^ (heap_blocks as u64) << 20);
    for _ in 0..heap_blocks {
        let block = vec![1u8; 16 + sizes.below(240)];
        std::mem::forget(std::hint::black_box(block));
    }
    sys::worker::forget_env(PAD_VAR);
    sys::worker::forget_env(HEAP_VAR);
    Layout { env_pad_bytes, heap_offset_bytes, heap_blocks }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_stay_in_range_and_differ() {
        let mut g = Layouts::seeded(1);
        let draws: Vec<Layout> = (0..200).map(|_| g.draw()).collect();
        assert!(draws.iter().all(|l| l.env_pad_bytes <= MAX_PAD_BYTES
            && l.heap_offset_bytes <= MAX_HEAP_OFFSET_BYTES
            && l.heap_blocks <= MAX_HEAP_BLOCKS));
        let distinct: std::collections::BTreeSet<usize> = draws.iter().map(|l| l.env_pad_bytes).collect();
        assert!(distinct.len() > 150, "pads vary: {}", distinct.len());
        let mut again = Layouts::seeded(1);
        assert_eq!(again.draw(), draws[0], "a seed replays");
    }

    #[test]
    fn the_environment_says_the_layout() {
        let l = Layout { env_pad_bytes: 5, heap_offset_bytes: 100, heap_blocks: 3 };
        let env = l.env();
        assert_eq!(env[0], (PAD_VAR, "xxxxx".to_string()));
        assert_eq!(env[1], (HEAP_VAR, "100,3".to_string()));
    }
}
