//! `sched_setattr`/`sched_getattr` of the calling thread's utilisation clamp, for `task.uclamp`.
//! See sched_setattr(2) and the kernel's `Documentation/scheduler/sched-util-clamp.rst`.
//!
//! A clamp (`util_min`, `util_max`, 0–1024) is the per-task performance hint the kernel's
//! frequency governor (schedutil) and task placement act on: a task whose minimum is high runs
//! at a high speed even when it does little. [`SCHED_FLAG_KEEP_ALL`] keeps the policy and its
//! parameters, so a call changes the clamp alone; a value of [`UTIL_RESET`] (-1) puts a clamp
//! back to the default (no request). Kernels built without `CONFIG_UCLAMP_TASK` refuse the
//! clamp flags with `EOPNOTSUPP`.
//!
//! # Safety
//! Both calls take a pointer to a [`SchedAttr`] owned by the caller and valid for its whole
//! size, which is what the kernel is told it is ([`SCHED_ATTR_SIZE`]); `sched_setattr` only
//! reads it, `sched_getattr` writes at most that many bytes. Both go through [`crate::raw`].
#![allow(unsafe_code)]

use crate::raw;

/// `struct sched_attr` as of Linux 5.3 (`SCHED_ATTR_SIZE_VER1`, with the clamp fields).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedAttr {
    /// Size of the structure, bytes.
    pub size: u32,
    /// `SCHED_OTHER`, `SCHED_BATCH`, …
    pub policy: u32,
    /// `SCHED_FLAG_*`.
    pub flags: u64,
    /// Nice value (fair policies).
    pub nice: i32,
    /// Static priority (real-time policies).
    pub priority: u32,
    /// Deadline policy's runtime, ns.
    pub runtime: u64,
    /// Deadline policy's deadline, ns.
    pub deadline: u64,
    /// Deadline policy's period, ns.
    pub period: u64,
    /// Utilisation clamp, minimum (0–1024).
    pub util_min: u32,
    /// Utilisation clamp, maximum (0–1024).
    pub util_max: u32,
}

/// Bytes of [`SchedAttr`] (`SCHED_ATTR_SIZE_VER1`).
pub const SCHED_ATTR_SIZE: u32 = 56;
/// Keep the current policy.
pub const SCHED_FLAG_KEEP_POLICY: u64 = 0x08;
/// Keep the current policy parameters (nice, priority, deadline).
pub const SCHED_FLAG_KEEP_PARAMS: u64 = 0x10;
/// Keep policy and parameters: change nothing but what other flags name.
pub const SCHED_FLAG_KEEP_ALL: u64 = SCHED_FLAG_KEEP_POLICY | SCHED_FLAG_KEEP_PARAMS;
/// `util_min` is meant.
pub const SCHED_FLAG_UTIL_CLAMP_MIN: u64 = 0x20;
/// `util_max` is meant.
pub const SCHED_FLAG_UTIL_CLAMP_MAX: u64 = 0x40;
/// The flags of a clamp-only change.
pub const CLAMP_FLAGS: u64 = SCHED_FLAG_KEEP_ALL | SCHED_FLAG_UTIL_CLAMP_MIN | SCHED_FLAG_UTIL_CLAMP_MAX;
/// A clamp value meaning "back to the default" (-1 as the kernel reads it).
pub const UTIL_RESET: u32 = u32::MAX;
/// The scale of clamps: 1024 is the biggest CPU at its highest speed.
pub const CAPACITY: u32 = 1024;
/// What a fair task's clamp reads back as when nothing was requested: (0, 1024).
pub const DEFAULT_CLAMP: (u32, u32) = (0, CAPACITY);

const _: () = assert!(std::mem::size_of::<SchedAttr>() == SCHED_ATTR_SIZE as usize);

impl SchedAttr {
    /// A clamp-only change to (`util_min`, `util_max`) ([`UTIL_RESET`] for the default),
    /// keeping `current`'s policy and parameters (which the kernel also checks, so they are
    /// copied rather than zeroed: a nice of 0 below the thread's would need privilege).
    pub fn clamp(current: &SchedAttr, util_min: u32, util_max: u32) -> SchedAttr {
        SchedAttr {
            size: SCHED_ATTR_SIZE,
            policy: current.policy,
            flags: CLAMP_FLAGS,
            nice: current.nice,
            priority: current.priority,
            util_min,
            util_max,
            ..SchedAttr::default()
        }
    }

    /// A change back to the default clamp (no request).
    pub fn reset(current: &SchedAttr) -> SchedAttr {
        SchedAttr::clamp(current, UTIL_RESET, UTIL_RESET)
    }

    /// The clamp as read back: (`util_min`, `util_max`).
    pub fn clamp_values(&self) -> (u32, u32) {
        (self.util_min, self.util_max)
    }

    /// The clamp a change to `self` leaves, as `sched_getattr` reports it afterwards.
    pub fn expected_after(&self) -> (u32, u32) {
        let min = if self.util_min == UTIL_RESET { DEFAULT_CLAMP.0 } else { self.util_min };
        let max = if self.util_max == UTIL_RESET { DEFAULT_CLAMP.1 } else { self.util_max };
        (min, max)
    }
}

/// `sched_getattr(0, …)`: the calling thread's attributes.
pub fn getattr() -> std::io::Result<SchedAttr> {
    let mut attr = SchedAttr::default();
    // SAFETY: `attr` is valid for SCHED_ATTR_SIZE bytes (checked at compile time); the kernel
    // writes at most that many.
    let rc = unsafe {
        raw::syscall4(libc::SYS_sched_getattr, 0, &mut attr as *mut SchedAttr as i64, i64::from(SCHED_ATTR_SIZE), 0)
    };
    raw::check(rc).map(|_| attr)
}

/// `sched_setattr(0, attr, 0)` through the bare system-call instruction ([`raw::syscall3`]),
/// for the timed loop: 0 or a negative errno.
#[inline(always)]
pub fn setattr_raw(attr: &SchedAttr) -> i64 {
    // SAFETY: the kernel reads `*attr` (valid, `size` bytes) and writes no user memory.
    unsafe { raw::syscall3(libc::SYS_sched_setattr, 0, attr as *const SchedAttr as i64, 0) }
}

/// `sched_setattr(0, attr, 0)`, with the error as an `io::Error`.
pub fn setattr(attr: &SchedAttr) -> std::io::Result<()> {
    match raw::check(setattr_raw(attr))? {
        0 => Ok(()),
        other => Err(std::io::Error::other(format!("sched_setattr returned {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attribute_is_laid_out_as_the_kernel_reads_it() {
        assert_eq!(std::mem::size_of::<SchedAttr>(), 56);
        assert_eq!(std::mem::offset_of!(SchedAttr, flags), 8);
        assert_eq!(std::mem::offset_of!(SchedAttr, nice), 16);
        assert_eq!(std::mem::offset_of!(SchedAttr, runtime), 24);
        assert_eq!(std::mem::offset_of!(SchedAttr, util_min), 48);
        assert_eq!(std::mem::offset_of!(SchedAttr, util_max), 52);
        assert_eq!(CLAMP_FLAGS, 0x78);
    }

    #[test]
    fn a_clamp_change_keeps_policy_and_nice() {
        let current = SchedAttr { size: 56, policy: 3, nice: 5, util_min: 7, util_max: 9, ..SchedAttr::default() };
        let a = SchedAttr::clamp(&current, 512, 1024);
        assert_eq!((a.size, a.policy, a.nice, a.flags), (56, 3, 5, CLAMP_FLAGS));
        assert_eq!(a.clamp_values(), (512, 1024));
        assert_eq!(a.expected_after(), (512, 1024));
        let r = SchedAttr::reset(&current);
        assert_eq!(r.clamp_values(), (u32::MAX, u32::MAX), "-1 asks for the default");
        assert_eq!(r.expected_after(), DEFAULT_CLAMP);
    }

    #[test]
    fn the_thread_reads_its_own_attributes() {
        let a = getattr().expect("sched_getattr of the calling thread");
        assert_eq!(a.policy as i32, crate::process::sched_policy());
        assert!(a.size >= 48, "the kernel says how much it filled in: {}", a.size);
    }
}
