//! The calling thread's alternate signal stack (`id.altstack`): query it, and set one for the
//! length of a measurement. See sigaltstack(2).
//!
//! # Safety
//! - A query passes a null new stack and a `stack_t` the caller owns: nothing changes.
//! - [`AltStack::install`] hands the kernel a buffer owned by the returned guard, which puts
//!   the thread's previous alternate stack back before the buffer is freed. The guard is
//!   neither `Send` nor `Sync`: the stack belongs to the thread that set it.
#![allow(unsafe_code)]

use std::marker::PhantomData;

/// What `sigaltstack` reports: the stack's base, size, and flags (`SS_DISABLE`, `SS_ONSTACK`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackInfo {
    /// `ss_sp`.
    pub base: usize,
    /// `ss_size`.
    pub size: usize,
    /// `ss_flags`.
    pub flags: i32,
}

impl StackInfo {
    /// Whether no alternate stack is set (`SS_DISABLE`).
    pub fn disabled(&self) -> bool {
        self.flags & libc::SS_DISABLE != 0
    }
}

/// `sigaltstack(NULL, &old)`: the calling thread's alternate signal stack, or `None` on error.
#[inline(always)]
pub fn query() -> Option<StackInfo> {
    let mut old = libc::stack_t { ss_sp: std::ptr::null_mut(), ss_flags: 0, ss_size: 0 };
    // SAFETY: a null new stack changes nothing; `old` is ours to fill.
    let rc = unsafe { libc::sigaltstack(std::ptr::null(), &mut old) };
    (rc == 0).then_some(StackInfo { base: old.ss_sp as usize, size: old.ss_size, flags: old.ss_flags })
}

/// An alternate signal stack set on this thread; the previous one is restored on drop.
pub struct AltStack {
    buf: Box<[u8]>,
    previous: libc::stack_t,
    _local: PhantomData<*const ()>,
}

impl AltStack {
    /// Sets a fresh `size`-byte buffer as this thread's alternate signal stack.
    pub fn install(size: usize) -> std::io::Result<AltStack> {
        let mut buf = vec![0u8; size].into_boxed_slice();
        let new = libc::stack_t { ss_sp: buf.as_mut_ptr().cast(), ss_flags: 0, ss_size: size };
        let mut previous = libc::stack_t { ss_sp: std::ptr::null_mut(), ss_flags: 0, ss_size: 0 };
        // SAFETY: `buf` lives in the guard, which restores `previous` before freeing it.
        if unsafe { libc::sigaltstack(&new, &mut previous) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(AltStack { buf, previous, _local: PhantomData })
    }

    /// What the kernel should report while it is set.
    pub fn expected(&self) -> StackInfo {
        StackInfo { base: self.buf.as_ptr() as usize, size: self.buf.len(), flags: 0 }
    }
}

impl Drop for AltStack {
    fn drop(&mut self) {
        let mut prev = self.previous;
        if prev.ss_flags & libc::SS_DISABLE != 0 {
            prev.ss_flags = libc::SS_DISABLE; // the kernel rejects SS_DISABLE with other flags
        } else {
            prev.ss_flags &= !libc::SS_ONSTACK;
        }
        // SAFETY: puts back the stack the thread had (still owned by whoever set it), or
        // disables the alternate stack; we are not running on ours (no handler is active).
        unsafe { libc::sigaltstack(&prev, std::ptr::null_mut()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_is_seen_and_undone() {
        let before = query().expect("sigaltstack query");
        {
            let alt = AltStack::install(64 * 1024).expect("sigaltstack set");
            assert_eq!(query(), Some(alt.expected()));
        }
        assert_eq!(query(), Some(before));
    }
}
