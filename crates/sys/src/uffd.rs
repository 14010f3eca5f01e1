//! The one userfaultfd binding: page faults delivered to a user-space thread, for
//! `fault.user.uffd` (missing pages) and `rvm`'s write detection (write-protect, see
//! [`super::wprotect`]).
//!
//! A userfaultfd is opened with the system call (glibc has no wrapper), first with
//! `UFFD_USER_MODE_ONLY` (Linux ≥ 5.11: handles only faults taken in user mode, and is allowed
//! without privilege even when `vm.unprivileged_userfaultfd` is 0), then without it (older
//! kernels), and made usable with the `UFFDIO_API` handshake (once per descriptor). A range
//! registered for missing pages (`UFFDIO_REGISTER_MODE_MISSING`) reports each first touch as an
//! event the handler reads, and the handler resolves it with `UFFDIO_COPY` (a page of given
//! contents) or `UFFDIO_ZEROPAGE` (the shared zero page), which also wakes the faulting thread.
//! A range registered for write-protect (`UFFDIO_REGISTER_MODE_WP`) reports a write to a page
//! protected with `UFFDIO_WRITEPROTECT`; removing the protection wakes the writer. See
//! userfaultfd(2), ioctl_userfaultfd(2) and the kernel's
//! `Documentation/admin-guide/mm/userfaultfd.rst`.
//!
//! Structs, constants and ioctl numbers are those of `<linux/userfaultfd.h>` as
//! `linux-raw-sys` generates them (`general` and `ioctl` modules).
//!
//! # Safety
//! - The ioctls take pointers to the `linux-raw-sys` structs (the kernel's layout), owned by
//!   the caller for the duration of the call; [`Uffd::ioctl`] is an `unsafe fn` whose callers
//!   here pass the struct the request names.
//! - The only user memory the kernel writes through `UFFDIO_COPY`/`UFFDIO_ZEROPAGE` is missing
//!   pages in ranges registered with the same descriptor. [`Uffd::register_missing`] registers
//!   only a [`Region`], which Rust never references (see `sys::fault`); other memory is
//!   registered only through the `unsafe fn` [`Uffd::register_wp`], whose caller promises not
//!   to fill pages there that Rust references.
//! - Messages are read into `uffd_msg`s, all of whose bit patterns are valid, and only the
//!   page-fault member of the union is read, for page-fault events.
#![allow(unsafe_code)]

use super::fault::Region;
use linux_raw_sys::general as uapi;
use linux_raw_sys::ioctl as req;
use std::ffi::c_void;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// `UFFDIO_WRITEPROTECT_MODE_WP` (`(__u64)1 << 0`; a cast macro that `linux-raw-sys` does not
/// generate).
const UFFDIO_WRITEPROTECT_MODE_WP: u64 = 1 << 0;

/// One way of opening a userfaultfd that was tried, and the error it got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// The flags, as written in C.
    pub flags: &'static str,
    /// The errno it failed with.
    pub errno: i32,
}

/// An open userfaultfd, closed on drop (which also wakes any thread still waiting on it and
/// lets its faults be resolved by the kernel as usual).
#[derive(Debug)]
pub struct Uffd {
    fd: OwnedFd,
    /// How it was opened (`"O_CLOEXEC | UFFD_USER_MODE_ONLY"` or `"O_CLOEXEC"`, with
    /// `| O_NONBLOCK` for a non-blocking one).
    pub flags: &'static str,
}

/// A page fault reported by the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The faulting address (page-aligned unless `UFFD_FEATURE_EXACT_ADDRESS` was asked for).
    pub address: usize,
    /// Whether it was a write.
    pub write: bool,
    /// Whether it was a write to a write-protected page (`UFFD_PAGEFAULT_FLAG_WP`).
    pub wp: bool,
}

/// One message read from a userfaultfd (`struct uffd_msg`).
#[derive(Clone, Copy)]
pub struct Msg(uapi::uffd_msg);

impl Msg {
    /// An empty message, to read into.
    // SAFETY: `uffd_msg` is integers and unions of integers: all zeroes is a valid value.
    pub const EMPTY: Msg = Msg(unsafe { std::mem::zeroed() });

    /// The page fault this message reports, if it is a page-fault event.
    pub fn fault(&self) -> Option<Fault> {
        if u32::from(self.0.event) != uapi::UFFD_EVENT_PAGEFAULT {
            return None;
        }
        let arg = self.0.arg; // a copy: `uffd_msg` is packed
        // SAFETY: every bit pattern is a valid page-fault member (integers only), and for a
        // page-fault event it is the member the kernel wrote.
        let pf = unsafe { arg.pagefault };
        Some(Fault {
            address: pf.address as usize,
            write: pf.flags & u64::from(uapi::UFFD_PAGEFAULT_FLAG_WRITE) != 0,
            wp: pf.flags & u64::from(uapi::UFFD_PAGEFAULT_FLAG_WP) != 0,
        })
    }
}

fn range(start: usize, len: usize) -> uapi::uffdio_range {
    uapi::uffdio_range { start: start as u64, len: len as u64 }
}

impl Uffd {
    /// Opens a blocking userfaultfd and completes the `UFFDIO_API` handshake with no extra
    /// features; on failure, every way tried and its errno.
    pub fn open() -> Result<Uffd, Vec<Attempt>> {
        let uffd = Uffd::open_unnegotiated(false)?;
        match uffd.api(0) {
            Ok(_) => Ok(uffd),
            Err(e) => Err(vec![Attempt { flags: "UFFDIO_API handshake", errno: e.raw_os_error().unwrap_or(0) }]),
        }
    }

    /// Opens a userfaultfd (close-on-exec; `nonblocking`: `O_NONBLOCK`) without the handshake,
    /// which [`Uffd::api`] must make before any other call. On failure, every way tried.
    pub fn open_unnegotiated(nonblocking: bool) -> Result<Uffd, Vec<Attempt>> {
        let mode_only = uapi::UFFD_USER_MODE_ONLY as libc::c_int;
        let tries: [(&'static str, libc::c_int); 2] = if nonblocking {
            [
                ("O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY", libc::O_CLOEXEC | libc::O_NONBLOCK | mode_only),
                ("O_CLOEXEC | O_NONBLOCK", libc::O_CLOEXEC | libc::O_NONBLOCK),
            ]
        } else {
            [("O_CLOEXEC | UFFD_USER_MODE_ONLY", libc::O_CLOEXEC | mode_only), ("O_CLOEXEC", libc::O_CLOEXEC)]
        };
        let mut failed = Vec::new();
        for (name, flags) in tries {
            // SAFETY: userfaultfd takes one integer argument and returns a new descriptor or -1.
            let fd = match crate::raw::check(unsafe { crate::raw::syscall1(libc::SYS_userfaultfd, i64::from(flags)) }) {
                Ok(fd) => fd,
                Err(e) => {
                    failed.push(Attempt { flags: name, errno: e.raw_os_error().unwrap_or(0) });
                    continue;
                }
            };
            // SAFETY: the descriptor was just returned to us and is owned by nothing else.
            let fd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
            return Ok(Uffd { fd, flags: name });
        }
        Err(failed)
    }

    /// The `UFFDIO_API` handshake asking for `features` (`UFFD_FEATURE_*`); returns the
    /// features the kernel offers. Can be made once per descriptor.
    pub fn api(&self, features: u64) -> io::Result<u64> {
        let mut api = uapi::uffdio_api { api: u64::from(uapi::UFFD_API), features, ioctls: 0 };
        // SAFETY: UFFDIO_API reads and writes one `uffdio_api`, which `api` is.
        unsafe { self.ioctl(req::UFFDIO_API, (&raw mut api).cast()) }?;
        Ok(api.features)
    }

    /// `ioctl(fd, request, arg)`; `Err` with errno if it returns non-zero.
    ///
    /// # Safety
    /// `arg` must point to a live, writable value of the struct that `request` reads and writes
    /// (`uffdio_api` for `UFFDIO_API`, …), and the call must not let the kernel write user
    /// memory that Rust references (see the module's safety notes).
    #[inline(always)]
    pub unsafe fn ioctl(&self, request: u32, arg: *mut c_void) -> io::Result<()> {
        // SAFETY: the caller's contract: `arg` is the struct `request` names.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::c_ulong::from(request), arg) };
        if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
    }

    fn register(&self, start: usize, len: usize, mode: u32) -> io::Result<u64> {
        let mut reg = uapi::uffdio_register { range: range(start, len), mode: u64::from(mode), ioctls: 0 };
        // SAFETY: UFFDIO_REGISTER reads and writes one `uffdio_register`; registering writes no
        // user memory.
        unsafe { self.ioctl(req::UFFDIO_REGISTER, (&raw mut reg).cast()) }?;
        Ok(reg.ioctls)
    }

    /// Registers the whole of `region` for missing-page faults. Returns the ioctl mask the
    /// kernel allows on it (`1 << _UFFDIO_COPY` etc.).
    pub fn register_missing(&self, region: &Region) -> io::Result<u64> {
        self.register(region.page_addr(0), region.len(), uapi::UFFDIO_REGISTER_MODE_MISSING)
    }

    /// Registers `len` bytes at `start` for write-protect faults; returns whether
    /// `UFFDIO_WRITEPROTECT` is offered on the range.
    ///
    /// # Safety
    /// The range must be mapped memory the caller owns, and the caller must not resolve
    /// missing pages in it ([`Uffd::copy`], [`Uffd::zeropage`]) while Rust references them:
    /// those calls write into the range.
    pub unsafe fn register_wp(&self, start: usize, len: usize) -> io::Result<bool> {
        let ioctls = self.register(start, len, uapi::UFFDIO_REGISTER_MODE_WP)?;
        Ok(ioctls & (1 << uapi::_UFFDIO_WRITEPROTECT) != 0)
    }

    /// Unregisters `len` bytes at `start` (waking any thread blocked on a fault there, whose
    /// access then proceeds as without userfaultfd).
    pub fn unregister(&self, start: usize, len: usize) -> io::Result<()> {
        let mut r = range(start, len);
        // SAFETY: UFFDIO_UNREGISTER reads one `uffdio_range`; it writes no user memory.
        unsafe { self.ioctl(req::UFFDIO_UNREGISTER, (&raw mut r).cast()) }
    }

    /// Write-protects (`wp`) or unprotects `len` bytes at `start` (registered for
    /// write-protect); unprotecting wakes the writers blocked there. Retried while the kernel
    /// says `EAGAIN` (the address space was changing under the call).
    pub fn writeprotect(&self, start: usize, len: usize, wp: bool) -> io::Result<()> {
        let mode = if wp { UFFDIO_WRITEPROTECT_MODE_WP } else { 0 };
        let mut w = uapi::uffdio_writeprotect { range: range(start, len), mode };
        loop {
            // SAFETY: UFFDIO_WRITEPROTECT reads one `uffdio_writeprotect`; it changes page
            // protection, not contents.
            match unsafe { self.ioctl(req::UFFDIO_WRITEPROTECT, (&raw mut w).cast()) } {
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => continue,
                other => return other,
            }
        }
    }

    /// Resolves a missing page at `dst` (page-aligned, inside a registered region) with a
    /// copy of `src` (one page), waking the faulting thread.
    #[inline(always)]
    pub fn copy(&self, dst: usize, src: &[u8]) -> io::Result<()> {
        let mut c =
            uapi::uffdio_copy { dst: dst as u64, src: src.as_ptr() as u64, len: src.len() as u64, mode: 0, copy: 0 };
        // SAFETY: UFFDIO_COPY reads `src.len()` bytes of the live slice `src` and writes only a
        // missing page of a range registered with this descriptor (module safety notes).
        unsafe { self.ioctl(req::UFFDIO_COPY, (&raw mut c).cast()) }
    }

    /// Resolves `len` bytes of missing pages at `dst` (page-aligned, registered) with the zero
    /// page, waking the faulting thread.
    #[inline(always)]
    pub fn zeropage(&self, dst: usize, len: usize) -> io::Result<()> {
        let mut z = uapi::uffdio_zeropage { range: range(dst, len), mode: 0, zeropage: 0 };
        // SAFETY: UFFDIO_ZEROPAGE writes only missing pages of a range registered with this
        // descriptor (module safety notes).
        unsafe { self.ioctl(req::UFFDIO_ZEROPAGE, (&raw mut z).cast()) }
    }

    /// Reads the queued messages into `out` (one `read`; blocks on a blocking descriptor
    /// until there is one); returns how many. `EINTR` and, on a non-blocking descriptor,
    /// `EAGAIN` come back as errors.
    #[inline(always)]
    pub fn read(&self, out: &mut [Msg]) -> io::Result<usize> {
        // SAFETY: reads at most `size_of_val(out)` bytes into the live, writable `out`; any
        // bytes are a valid `uffd_msg`.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), out.as_mut_ptr().cast(), size_of_val(out)) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize / size_of::<Msg>())
    }

    /// Waits for the next event (a blocking `read`, retried on `EINTR`). `Ok(None)` for an
    /// event that is not a page fault.
    #[inline(always)]
    pub fn next_fault(&self) -> io::Result<Option<Fault>> {
        let mut msg = [Msg::EMPTY];
        loop {
            match self.read(&mut msg) {
                Ok(1) => return Ok(msg[0].fault()),
                Ok(_) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

impl AsFd for Uffd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_have_the_kernel_size() {
        assert_eq!(size_of::<Msg>(), 32);
        assert_eq!(Msg::EMPTY.fault(), None, "event 0 is not a page fault");
    }

    #[test]
    fn a_fault_reaches_the_handler_thread() {
        let Ok(uffd) = Uffd::open() else {
            return; // refused here: the benchmark's skip path is tested in bench::fault_user
        };
        let region = Region::anon(2).expect("mmap");
        uffd.register_missing(&region).expect("register");
        let page = vec![9u8; super::super::fault::page_size()];
        let target = region.page_addr(1);
        let handler = std::thread::spawn(move || {
            let f = uffd.next_fault().expect("read").expect("a page fault");
            uffd.copy(f.address, &page).expect("copy");
            f
        });
        assert_eq!(region.read(1), 9);
        let f = handler.join().expect("join");
        assert_eq!(f, Fault { address: target, write: false, wp: false });
    }
}
