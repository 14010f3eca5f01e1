//! `userfaultfd`: page faults delivered to a user-space thread, for `fault.user.uffd`.
//!
//! A userfaultfd is opened with the system call (glibc has no wrapper), first with
//! `UFFD_USER_MODE_ONLY` (Linux ≥ 5.11: handles only faults taken in user mode, and is allowed
//! without privilege even when `vm.unprivileged_userfaultfd` is 0), then without it (older
//! kernels). A region registered for missing pages (`UFFDIO_REGISTER_MODE_MISSING`) then
//! reports each first touch as an event the handler reads, and the handler resolves it with
//! `UFFDIO_COPY` (a page of given contents) or `UFFDIO_ZEROPAGE` (the shared zero page), which
//! also wakes the faulting thread. See userfaultfd(2), ioctl_userfaultfd(2) and the kernel's
//! `Documentation/admin-guide/mm/userfaultfd.rst`.
//!
//! # Safety
//! The ioctls take pointers to `#[repr(C)]` structs laid out as in `<linux/userfaultfd.h>`,
//! owned by the caller for the duration of the call. The only user memory the kernel writes
//! through `UFFDIO_COPY`/`UFFDIO_ZEROPAGE` lies in ranges registered with this descriptor, and
//! [`Uffd::register_missing`] registers only memory of a [`Region`], which Rust never
//! references (see `sys::fault`).
#![allow(unsafe_code)]

use super::fault::Region;
use std::ffi::c_void;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const UFFD_API: u64 = 0xAA;
/// `UFFD_USER_MODE_ONLY`: only faults from user mode (Linux ≥ 5.11).
const UFFD_USER_MODE_ONLY: libc::c_int = 1;
const UFFDIO_REGISTER_MODE_MISSING: u64 = 1;
const UFFD_EVENT_PAGEFAULT: u8 = 0x12;
const UFFD_PAGEFAULT_FLAG_WRITE: u64 = 1;

#[repr(C)]
#[derive(Default)]
struct UffdioApi {
    api: u64,
    features: u64,
    ioctls: u64,
}

#[repr(C)]
#[derive(Default)]
struct UffdioRange {
    start: u64,
    len: u64,
}

#[repr(C)]
#[derive(Default)]
struct UffdioRegister {
    range: UffdioRange,
    mode: u64,
    ioctls: u64,
}

#[repr(C)]
#[derive(Default)]
struct UffdioCopy {
    dst: u64,
    src: u64,
    len: u64,
    mode: u64,
    copy: i64,
}

#[repr(C)]
#[derive(Default)]
struct UffdioZeropage {
    range: UffdioRange,
    mode: u64,
    zeropage: i64,
}

/// `struct uffd_msg` with the page-fault member of its union (the largest: 24 bytes).
#[repr(C)]
#[derive(Default)]
struct UffdMsg {
    event: u8,
    reserved1: u8,
    reserved2: u16,
    reserved3: u32,
    flags: u64,
    address: u64,
    ptid: u32,
    pad: u32,
}

const UFFDIO_API: libc::c_ulong = nix::request_code_readwrite!(0xAA, 0x3F, size_of::<UffdioApi>()) as libc::c_ulong;
const UFFDIO_REGISTER: libc::c_ulong =
    nix::request_code_readwrite!(0xAA, 0x00, size_of::<UffdioRegister>()) as libc::c_ulong;
const UFFDIO_COPY: libc::c_ulong = nix::request_code_readwrite!(0xAA, 0x03, size_of::<UffdioCopy>()) as libc::c_ulong;
const UFFDIO_ZEROPAGE: libc::c_ulong =
    nix::request_code_readwrite!(0xAA, 0x04, size_of::<UffdioZeropage>()) as libc::c_ulong;

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
    /// How it was opened (`"O_CLOEXEC | UFFD_USER_MODE_ONLY"` or `"O_CLOEXEC"`).
    pub flags: &'static str,
}

/// A page fault reported by the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The faulting address (page-aligned unless `UFFD_FEATURE_EXACT_ADDRESS` was asked for).
    pub address: usize,
    /// Whether it was a write.
    pub write: bool,
}

impl Uffd {
    /// Opens a userfaultfd and completes the `UFFDIO_API` handshake; on failure, every way
    /// tried and its errno.
    pub fn open() -> Result<Uffd, Vec<Attempt>> {
        let tries: [(&'static str, libc::c_int); 2] = [
            ("O_CLOEXEC | UFFD_USER_MODE_ONLY", libc::O_CLOEXEC | UFFD_USER_MODE_ONLY),
            ("O_CLOEXEC", libc::O_CLOEXEC),
        ];
        let mut failed = Vec::new();
        for (name, flags) in tries {
            // SAFETY: userfaultfd takes one integer argument and returns a new descriptor.
            let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, flags) };
            if fd < 0 {
                failed.push(Attempt { flags: name, errno: io::Error::last_os_error().raw_os_error().unwrap_or(0) });
                continue;
            }
            // SAFETY: the descriptor was just returned to us and is owned by nothing else.
            let fd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
            let uffd = Uffd { fd, flags: name };
            return match uffd.handshake() {
                Ok(()) => Ok(uffd),
                Err(e) => {
                    failed.push(Attempt { flags: "UFFDIO_API handshake", errno: e.raw_os_error().unwrap_or(0) });
                    Err(failed)
                }
            };
        }
        Err(failed)
    }

    fn handshake(&self) -> io::Result<()> {
        let mut api = UffdioApi { api: UFFD_API, ..UffdioApi::default() };
        // SAFETY: UFFDIO_API reads and writes the struct we own, sized as the request says.
        self.ioctl(UFFDIO_API, &mut api as *mut UffdioApi as *mut c_void)
    }

    fn ioctl(&self, request: libc::c_ulong, arg: *mut c_void) -> io::Result<()> {
        // SAFETY: callers pass a pointer to the struct that `request` names (module doc).
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), request, arg) };
        if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
    }

    /// Registers the whole of `region` for missing-page faults. Returns the ioctl mask the
    /// kernel allows on it (`1 << _UFFDIO_COPY` etc.).
    pub fn register_missing(&self, region: &Region) -> io::Result<u64> {
        let mut reg = UffdioRegister {
            range: UffdioRange { start: region.page_addr(0) as u64, len: region.len() as u64 },
            mode: UFFDIO_REGISTER_MODE_MISSING,
            ioctls: 0,
        };
        self.ioctl(UFFDIO_REGISTER, &mut reg as *mut UffdioRegister as *mut c_void)?;
        Ok(reg.ioctls)
    }

    /// Resolves a missing page at `dst` (page-aligned, inside a registered region) with a
    /// copy of `src` (one page), waking the faulting thread.
    #[inline(always)]
    pub fn copy(&self, dst: usize, src: &[u8]) -> io::Result<()> {
        let mut c = UffdioCopy { dst: dst as u64, src: src.as_ptr() as u64, len: src.len() as u64, mode: 0, copy: 0 };
        self.ioctl(UFFDIO_COPY, &mut c as *mut UffdioCopy as *mut c_void)
    }

    /// Resolves `len` bytes of missing pages at `dst` (page-aligned, registered) with the zero
    /// page, waking the faulting thread.
    #[inline(always)]
    pub fn zeropage(&self, dst: usize, len: usize) -> io::Result<()> {
        let mut z = UffdioZeropage { range: UffdioRange { start: dst as u64, len: len as u64 }, mode: 0, zeropage: 0 };
        self.ioctl(UFFDIO_ZEROPAGE, &mut z as *mut UffdioZeropage as *mut c_void)
    }

    /// Waits for the next event (a blocking `read`). `Ok(None)` for an event that is not a
    /// page fault.
    #[inline(always)]
    pub fn next_fault(&self) -> io::Result<Option<Fault>> {
        let mut msg = UffdMsg::default();
        loop {
            // SAFETY: reads at most one `uffd_msg` into `msg`, which is that size.
            let n = unsafe {
                libc::read(self.fd.as_raw_fd(), &mut msg as *mut UffdMsg as *mut c_void, size_of::<UffdMsg>())
            };
            if n == size_of::<UffdMsg>() as isize {
                break;
            }
            let e = io::Error::last_os_error();
            if n >= 0 || e.raw_os_error() != Some(libc::EINTR) {
                return Err(if n >= 0 { io::Error::from(io::ErrorKind::UnexpectedEof) } else { e });
            }
        }
        if msg.event != UFFD_EVENT_PAGEFAULT {
            return Ok(None);
        }
        Ok(Some(Fault { address: msg.address as usize, write: msg.flags & UFFD_PAGEFAULT_FLAG_WRITE != 0 }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structs_match_the_kernel_abi() {
        assert_eq!(size_of::<UffdMsg>(), 32);
        assert_eq!(size_of::<UffdioApi>(), 24);
        assert_eq!(size_of::<UffdioRegister>(), 32);
        assert_eq!(size_of::<UffdioCopy>(), 40);
        assert_eq!(size_of::<UffdioZeropage>(), 32);
        // The values <linux/userfaultfd.h> gives on x86_64 and aarch64.
        assert_eq!(UFFDIO_API, 0xc018_aa3f);
        assert_eq!(UFFDIO_REGISTER, 0xc020_aa00);
        assert_eq!(UFFDIO_COPY, 0xc028_aa03);
        assert_eq!(UFFDIO_ZEROPAGE, 0xc020_aa04);
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
        assert_eq!(f, Fault { address: target, write: false });
    }
}
