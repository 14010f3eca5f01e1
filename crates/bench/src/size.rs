//! Component sizes beyond the shell: `size.lib`, `size.module`, `size.domain` — the code, data
//! and bss of what does each Go! GTE component's (and the ORB's) job on Linux, read from ELF
//! files through the same path as `size.shell` ([`crate::elf::bytes_row`]); samples are bytes.
//!
//! Seed rows: Go! "Spatial performance" (ORB code 6 K, static data 2 K) and GTE "component
//! sizes" (code / data / bss per component). Every row has parameter `section=text|data|bss`
//! (as `size.shell`, [`crate::elf::Part`]) and one naming the file:
//! - `size.lib`, `part`: `libc` (the C library: GTE's `comp_lib`), `libgcc_s` (the unwinder
//!   that delivers exceptions: GTE's `xcp_mgr`), `libpthread` (the threads library: GTE's
//!   `thread`). Each is found where this process has it mapped (`/proc/self/maps`, by file
//!   name), or, if not mapped, beside the C library it has mapped (the directory the dynamic
//!   loader found that in). Since glibc 2.34 `libpthread.so.0` is an empty compatibility stub
//!   and the threads implementation is inside `libc.so.6`: when the file defines no
//!   `pthread_create`, `part=libpthread` sizes the C library's `pthread_*`/`__pthread_*`
//!   symbols instead (`.dynsym` `st_size` per part: code the functions, data and bss the objects
//!   so named — glibc's thread-specific keys table; a thread's own `struct pthread` is at the
//!   top of its stack mapping, in no section), with `counted: libc pthread symbols` in its
//!   parameters and the stub said in a note.
//!   **Validation:** section sums as `size.shell` (inside loadable segments); a mapped file is
//!   the one mapped (device and inode in `/proc/self/maps` equal the file's).
//! - `size.module`, `module`: `vt` (the virtual-terminal console: GTE's `video`), `keyboard`
//!   (the console keyboard handler: GTE's `keyb`). A module built into the kernel image
//!   (`/sys/module/<name>` without `initstate`) has no file and no readable sections: skipped
//!   saying so; so is one the kernel does not have. A loaded module's `.ko` is found through
//!   `/lib/modules/<release>/modules.dep` and its sections summed (compressed `.ko` files are
//!   skipped: osprim reads uncompressed ones). **Validation:** its `.modinfo` names the module
//!   and the running kernel's release (`vermagic`); its sum fits the loaded module's
//!   `coresize` + `initsize`.
//! - `size.domain`: osprim's own domain layer (the `domain` crate: protection-key domains,
//!   their calls and their key table — the ORB's job): the sum of `st_size` of the crate's own
//!   symbols (mangled path rooted at `osprim_domain`) in the running binary's `.symtab`
//!   (`/proc/self/exe`), each counted towards the part its section is in; the same address
//!   counted once. Code inlined into other crates, and anonymous constants (no symbol), are not
//!   counted. A stripped binary has no `.symtab`: skipped saying so. **Validation:** two of
//!   the crate's functions, as this process runs them, sit at their `.symtab` addresses plus
//!   one load bias (page-aligned) inside an executable mapping of the binary: the file read is
//!   the code running.
//!
//!   Its data part also counts the key table, which does Go!'s GDT's job on the heap:
//!   [`domain::table::KeyTable::record_bytes`] for domain.xfer's GDT-miss table
//!   ([`TABLE_DOMAINS`] domains with one interface each, [`TABLE_KEYS`] keys).
//! - `size.throw`: osprim's own throw path (GTE's `xcp_mgr`: raising an exception and
//!   delivering a fault to its handler): the domain library's raise and unwind
//!   ([`THROW_PATH`]), the SIGSEGV dispatcher (`sys::segv`, whole) and the `SegvOwner`
//!   resolvers, summed from `.symtab` as `size.domain`. **Validation:** both halves found;
//!   the binary read is the code running (as `size.domain`).
//!
//! GTE's `mem_mgr`, `idisp`, `sched` and `scan` have no row here: their counterparts (the
//! kernel's memory manager, interrupt dispatch, scheduler; for the code scanner, the nearest is
//! the eBPF verifier) are parts of the kernel image, with no file or readable sections.
//!
//! **Timing model:** none; each file is read and parsed [`crate::elf::READS`] times.

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use crate::elf::{Found, Part, SHT_SYMTAB, bytes_row, part_param, read_elf, section_sum, section_variants};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// `size.lib`'s parts: (param value, file name, the Go! component whose job it does).
pub const LIBS: [(&str, &str, &str); 3] = [
    ("libc", "libc.so.6", "comp_lib"),
    ("libgcc_s", "libgcc_s.so.1", "xcp_mgr"),
    ("libpthread", "libpthread.so.0", "thread"),
];

/// `size.module`'s modules: (module, the Go! component whose job it does).
pub const MODULES: [(&str, &str); 2] = [("vt", "video"), ("keyboard", "keyb")];

/// One line of `/proc/self/maps` that names a file.
#[derive(Clone, Debug, PartialEq)]
pub struct Mapping {
    /// Start and end addresses.
    pub start: u64,
    /// End address (exclusive).
    pub end: u64,
    /// Executable.
    pub exec: bool,
    /// Device, major and minor.
    pub dev: (u64, u64),
    /// Inode.
    pub inode: u64,
    /// The file.
    pub path: PathBuf,
}

/// Parses `/proc/<pid>/maps` text: the lines that name a file.
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (range, perms, _off, dev, inode) = (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
            let path = f.collect::<Vec<_>>().join(" ");
            if !path.starts_with('/') {
                return None;
            }
            let (a, b) = range.split_once('-')?;
            let (maj, min) = dev.split_once(':')?;
            Some(Mapping {
                start: u64::from_str_radix(a, 16).ok()?,
                end: u64::from_str_radix(b, 16).ok()?,
                exec: perms.as_bytes().get(2) == Some(&b'x'),
                dev: (u64::from_str_radix(maj, 16).ok()?, u64::from_str_radix(min, 16).ok()?),
                inode: inode.parse().ok()?,
                path: PathBuf::from(path),
            })
        })
        .collect()
}

fn own_maps() -> Result<Vec<Mapping>, NotMeasured> {
    std::fs::read_to_string("/proc/self/maps")
        .map(|t| parse_maps(&t))
        .map_err(|e| NotMeasured::Failed(format!("/proc/self/maps: {e}")))
}

/// Where this process has `file` mapped, if it has.
fn mapped(maps: &[Mapping], file: &str) -> Option<Mapping> {
    maps.iter().find(|m| m.path.file_name().is_some_and(|n| n == file)).cloned()
}

/// The file `path` is the one `m` maps: same device and inode.
fn same_file_check(path: &Path, m: &Mapping) -> Check {
    let name = "the file read is the one this process maps (device and inode as in /proc/self/maps)";
    match std::fs::metadata(path) {
        Ok(md) => {
            let dev = (nix::sys::stat::major(md.dev()), nix::sys::stat::minor(md.dev()));
            let seen = (dev, md.ino());
            Check::new(name, format!("{:?}", (m.dev, m.inode)), format!("{seen:?}"), seen == (m.dev, m.inode))
        }
        Err(e) => Check::impossible(name, format!("{}: {e}", path.display())),
    }
}

/// The C library and its kin: `size.lib`.
pub struct Lib;

impl Benchmark for Lib {
    fn id(&self) -> &'static str {
        "size.lib"
    }
    fn about(&self) -> &'static str {
        "a system library's ELF sections (C library, unwinder, threads), beside Go!'s comp_lib, xcp_mgr, thread (bytes)"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        LIBS.iter().flat_map(|(part, _, _)| section_variants(&[("part", part)])).collect()
    }
    fn single_round(&self) -> bool {
        true
    }
    fn run(&self, _ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let section = part_param(params)?;
        let asked = params.get("part").and_then(|v| v.as_str());
        let (_, file, component) = LIBS.iter().find(|(p, _, _)| Some(*p) == asked).ok_or_else(|| {
            NotMeasured::Failed(format!("part must be one of libc, libgcc_s, libpthread, not {asked:?}"))
        })?;
        let maps = own_maps()?;
        let map = mapped(&maps, file);
        let path = match &map {
            Some(m) => m.path.clone(),
            None => {
                let libc = mapped(&maps, "libc.so.6")
                    .ok_or_else(|| NotMeasured::Skipped("no libc.so.6 mapped in this process".into()))?;
                let beside = libc.path.with_file_name(file);
                if !beside.exists() {
                    return Err(NotMeasured::Skipped(format!(
                        "{file} is neither mapped here nor beside the C library ({})",
                        libc.path.display()
                    )));
                }
                beside
            }
        };
        if *file == "libpthread.so.0" {
            let (bytes, elf) = read_elf(&path)?;
            if let Some(stub) = stub(&path, &bytes, &elf)? {
                let mut m = pthread_in_libc(section, &maps)?;
                m.notes.push(stub);
                m.params.insert("component".into(), (*component).into());
                return Ok(m);
            }
        }
        let mut m = bytes_row(section, || {
            let (_, elf) = read_elf(&path)?;
            let mut found = section_sum(&path, &elf, section, format!("{} ({file})", path.display()));
            found.checks.push(match &map {
                Some(mp) => same_file_check(&path, mp),
                None => Check::impossible(
                    "the file read is the one this process maps",
                    format!("{file} is not mapped here: read from beside the mapped C library"),
                ),
            });
            Ok(found)
        })?;
        m.params.insert("component".into(), (*component).into());
        Ok(m)
    }
}

/// A `libpthread.so.0` that defines no `pthread_create` is glibc's compatibility stub: what it
/// is, said in the row; `None` for a real threads library.
fn stub(path: &Path, bytes: &[u8], elf: &crate::elf::Elf) -> Result<Option<String>, NotMeasured> {
    let syms = elf
        .symbols(bytes, crate::elf::SHT_DYNSYM)
        .map_err(|e| NotMeasured::Failed(format!("{}: {e}", path.display())))?
        .unwrap_or_default();
    if syms.iter().any(|s| s.defined() && s.name == "pthread_create") {
        return Ok(None);
    }
    Ok(Some(format!(
        "{} defines no pthread_create: a compatibility stub ({} bytes of code); since glibc 2.34 the threads \
         implementation is inside libc.so.6, so its pthread_* symbols are sized there",
        path.display(),
        elf.total(Part::Text)
    )))
}

/// Whether a dynamic symbol's name is the threads implementation's: `pthread_*` (the
/// interface) or `__pthread_*` (its internals, e.g. the thread-specific keys table).
fn is_pthread(name: &str) -> bool {
    let bare = name.split('@').next().unwrap_or(name);
    bare.starts_with("pthread_") || bare.starts_with("__pthread_")
}

/// The threads implementation inside the C library (glibc ≥ 2.34): the sizes of `libc.so.6`'s
/// defined `.dynsym` symbols named `pthread_*`/`__pthread_*` in `section`'s part, each address
/// once — code: the functions; data and bss: the objects so named (glibc's is the
/// thread-specific keys table in bss; a thread's own state, `struct pthread`, lives at the top
/// of its stack mapping, not in a section).
fn pthread_in_libc(section: Part, maps: &[Mapping]) -> Result<Measured, NotMeasured> {
    let libc =
        mapped(maps, "libc.so.6").ok_or_else(|| NotMeasured::Skipped("no libc.so.6 mapped in this process".into()))?;
    let path = libc.path.clone();
    let mut m = bytes_row(section, || {
        let (bytes, elf) = read_elf(&path)?;
        let syms = elf
            .symbols(&bytes, crate::elf::SHT_DYNSYM)
            .map_err(|e| NotMeasured::Failed(format!("{}: {e}", path.display())))?
            .unwrap_or_default();
        let own: Vec<&crate::elf::Symbol> = syms.iter().filter(|s| s.defined() && is_pthread(&s.name)).collect();
        let has_create = own.iter().any(|s| s.name.split('@').next() == Some("pthread_create"));
        let (figure, summed) = symbol_sum(&elf, &own, section);
        Ok(Found {
            path: path.clone(),
            figure,
            summed,
            checks: vec![
                Check::new(
                    "the C library holds the threads implementation (defines pthread_create)",
                    "pthread_create defined in .dynsym",
                    if has_create { "defined" } else { "absent" },
                    has_create,
                ),
                same_file_check(&path, &libc),
            ],
            berkeley: None,
            what: format!("the pthread_* and __pthread_* symbols of {} (.dynsym st_size)", path.display()),
        })
    })?;
    m.params.insert("counted".into(), "libc pthread symbols".into());
    m.notes.push(match section {
        Part::Text => "code: the sizes of the C library's pthread_* and __pthread_* functions".to_string(),
        _ => "data and bss: the C library's objects named pthread_*/__pthread_* (glibc: the thread-specific keys \
              table, in bss); a thread's own state (struct pthread) sits at the top of its stack mapping, made at \
              pthread_create, not in a section"
            .to_string(),
    });
    Ok(m)
}

/// A kernel module's sections: `size.module`.
pub struct Module;

/// Where a module is, or why it has no file to read.
fn module_file(name: &str) -> Result<PathBuf, NotMeasured> {
    let sys = PathBuf::from("/sys/module").join(name);
    if !sys.is_dir() {
        return Err(NotMeasured::Skipped(format!(
            "the kernel has no module {name} (/sys/module/{name} absent: neither loaded nor built in with parameters)"
        )));
    }
    if !sys.join("initstate").exists() {
        return Err(NotMeasured::Skipped(format!(
            "{name} is built into the kernel image: /sys/module/{name} has parameters but no sections, and there is \
             no .ko to read"
        )));
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .map_err(|e| NotMeasured::Failed(format!("/proc/sys/kernel/osrelease: {e}")))?;
    let dir = PathBuf::from("/lib/modules").join(&release);
    let dep = std::fs::read_to_string(dir.join("modules.dep")).map_err(|e| {
        NotMeasured::Skipped(format!(
            "{name} is loaded but its .ko cannot be found: {}: {e}",
            dir.join("modules.dep").display()
        ))
    })?;
    let wanted = |f: &str| {
        let stem = f.rsplit('/').next().unwrap_or(f);
        let stem = stem.split(".ko").next().unwrap_or(stem);
        stem.replace('-', "_") == name.replace('-', "_")
    };
    let rel = dep
        .lines()
        .filter_map(|l| l.split(':').next())
        .find(|f| wanted(f))
        .ok_or_else(|| NotMeasured::Skipped(format!("{name} is loaded but modules.dep lists no {name}.ko")))?;
    if !rel.ends_with(".ko") {
        return Err(NotMeasured::Skipped(format!("{rel} is compressed: osprim reads uncompressed .ko files only")));
    }
    Ok(dir.join(rel))
}

/// The `.modinfo` strings of a module file.
fn modinfo(bytes: &[u8], elf: &crate::elf::Elf) -> BTreeMap<String, String> {
    elf.sections
        .iter()
        .find(|s| s.name == ".modinfo")
        .and_then(|s| bytes.get(s.offset as usize..(s.offset + s.size) as usize))
        .map(|d| {
            d.split(|&b| b == 0)
                .filter_map(|kv| std::str::from_utf8(kv).ok()?.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .unwrap_or_default()
}

impl Benchmark for Module {
    fn id(&self) -> &'static str {
        "size.module"
    }
    fn about(&self) -> &'static str {
        "a kernel module's ELF sections (console, keyboard), beside Go!'s video and keyb (bytes)"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        MODULES.iter().flat_map(|(module, _)| section_variants(&[("module", module)])).collect()
    }
    fn single_round(&self) -> bool {
        true
    }
    fn run(&self, _ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let section = part_param(params)?;
        let name = params.get("module").and_then(|v| v.as_str()).unwrap_or_default();
        let path = module_file(name)?;
        let sys = PathBuf::from("/sys/module").join(name);
        let loaded: u64 = ["coresize", "initsize"]
            .iter()
            .filter_map(|f| std::fs::read_to_string(sys.join(f)).ok()?.trim().parse::<u64>().ok())
            .sum();
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string();
        let mut m = bytes_row(section, || {
            let (bytes, elf) = read_elf(&path)?;
            let info = modinfo(&bytes, &elf);
            let total: u64 = [Part::Text, Part::Data, Part::Bss].iter().map(|p| elf.total(*p)).sum();
            let vermagic = info.get("vermagic").cloned().unwrap_or_default();
            Ok(Found {
                path: path.clone(),
                figure: elf.total(section),
                summed: elf.part(section).iter().map(|s| s.name.clone()).collect(),
                checks: vec![
                    Check::new(
                        "the .ko is the module's, for the running kernel (.modinfo name and vermagic)",
                        format!("name={name}, vermagic={release} …"),
                        format!("name={}, vermagic={vermagic}", info.get("name").map_or("none", String::as_str)),
                        info.get("name").is_some_and(|n| n == name)
                            && vermagic.split_whitespace().next() == Some(release.as_str()),
                    ),
                    Check::new(
                        "its code, data and bss fit the loaded module (coresize + initsize)",
                        format!("≤ {loaded} bytes"),
                        format!("{total} bytes"),
                        total <= loaded,
                    ),
                ],
                berkeley: Some(elf.berkeley()),
                what: format!("{} (module {name})", path.display()),
            })
        })?;
        let component = MODULES.iter().find(|(m, _)| *m == name).map_or("", |(_, c)| c);
        m.params.insert("component".into(), component.into());
        Ok(m)
    }
}

/// The running binary's `.symtab` (its path shown, its bytes, its ELF), or why not.
fn own_symbols() -> Result<(PathBuf, crate::elf::Elf, Vec<crate::elf::Symbol>), NotMeasured> {
    let exe = PathBuf::from("/proc/self/exe");
    let shown = std::fs::read_link(&exe).unwrap_or_else(|_| exe.clone());
    let (bytes, elf) = read_elf(&exe)?;
    let syms = elf
        .symbols(&bytes, SHT_SYMTAB)
        .map_err(|e| NotMeasured::Failed(format!("{}: {e}", shown.display())))?
        .ok_or_else(|| {
        NotMeasured::Skipped(format!("{} is stripped: no .symtab to find osprim's own symbols in", shown.display()))
    })?;
    Ok((shown, elf, syms))
}

/// The bytes (`st_size`) of the defined symbols `own` that lie in `section`'s part, each
/// address counted once, and a line per section they came from.
fn symbol_sum(elf: &crate::elf::Elf, own: &[&crate::elf::Symbol], section: Part) -> (u64, Vec<String>) {
    let mut seen = std::collections::BTreeSet::new();
    let mut per_section: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut figure = 0;
    for s in own {
        if elf.part_of(s) != Some(section) || !seen.insert((s.value, s.size)) {
            continue;
        }
        figure += s.size;
        let e = per_section.entry(elf.sections[usize::from(s.shndx)].name.clone()).or_default();
        *e = (e.0 + 1, e.1 + s.size);
    }
    (figure, per_section.iter().map(|(n, (k, b))| format!("{n}: {k} symbols, {b} bytes")).collect())
}

/// The key table `size.domain` counts as the domain layer's data: domain.xfer's GDT-miss
/// configuration — more domains than hardware keys ([`TABLE_KEYS`]), one interface each.
pub const TABLE_DOMAINS: usize = 20;
/// Hardware keys of that table: x86's 16 less the default key 0.
pub const TABLE_KEYS: usize = 15;

/// osprim's own domain layer: `size.domain`.
pub struct DomainLayer;

/// The mangled-path root of the domain crate's own symbols (legacy Rust mangling).
const DOMAIN_ROOT: &str = "_ZN13osprim_domain";

impl Benchmark for DomainLayer {
    fn id(&self) -> &'static str {
        "size.domain"
    }
    fn about(&self) -> &'static str {
        "osprim's domain layer (the domain crate) in the running binary: code, data, bss from .symtab (bytes), beside Go!'s ORB"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        section_variants(&[])
    }
    fn single_round(&self) -> bool {
        true
    }
    fn run(&self, _ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let section = part_param(params)?;
        let table = ::domain::table::KeyTable::record_bytes(TABLE_DOMAINS, TABLE_DOMAINS, TABLE_KEYS) as u64;
        let mut m = bytes_row(section, || {
            let (shown, elf, syms) = own_symbols()?;
            let own: Vec<&crate::elf::Symbol> =
                syms.iter().filter(|s| s.name.starts_with(DOMAIN_ROOT) && s.defined() && s.size > 0).collect();
            if own.is_empty() {
                return Err(NotMeasured::Skipped(format!(
                    "no symbol of the domain crate ({DOMAIN_ROOT}…) in {}'s .symtab (another mangling scheme?)",
                    shown.display()
                )));
            }
            let (mut figure, mut summed) = symbol_sum(&elf, &own, section);
            if section == Part::Data {
                // The tables that do the GDT's job live on the heap, not in a section.
                figure += table;
                summed.push(format!(
                    "key table (heap): {TABLE_DOMAINS} domains, {TABLE_DOMAINS} interfaces, {TABLE_KEYS} keys, {table} bytes"
                ));
            }
            Ok(Found {
                path: shown.clone(),
                figure,
                summed,
                checks: vec![running_code_check(&syms)],
                berkeley: None,
                what: format!("the domain crate's symbols in {} (.symtab st_size)", shown.display()),
            })
        })?;
        if section == Part::Data {
            m.observed.insert("key_table_bytes".into(), table.into());
            m.notes.push(format!(
                "data includes the key table, which does the GDT's job on the heap: {table} bytes for {TABLE_DOMAINS} \
                 domains with one interface each sharing {TABLE_KEYS} hardware keys (domain.xfer's GDT-miss table; \
                 KeyTable::record_bytes: its records at exactly that length)"
            ));
        }
        Ok(m)
    }
}

/// The prefixes of osprim's throw path in its binary's `.symtab`: the domain library's raise
/// and the unwind to the caller's handler (`raise`, `leave_current`, `leave`; inlined ones have
/// no symbol of their own and are counted inside their caller), the one SIGSEGV dispatcher
/// (`sys::segv`, whole: its registration, dispatch and tables) and every owner's resolver of a
/// fault it dispatches (`impl SegvOwner`).
pub const THROW_PATH: [&str; 4] = [
    "_ZN13osprim_domain5raise17h",
    "_ZN13osprim_domain13leave_current17h",
    "_ZN13osprim_domain5leave17h",
    "_ZN10osprim_sys4segv",
];
/// A trait implementation of the dispatcher's owner interface (legacy mangling of
/// `<T as osprim_sys::segv::SegvOwner>::…`).
const SEGV_OWNER_IMPL: &str = "$u20$as$u20$osprim_sys..segv..SegvOwner$GT$";

/// osprim's own throw path: `size.throw`.
pub struct ThrowPath;

impl Benchmark for ThrowPath {
    fn id(&self) -> &'static str {
        "size.throw"
    }
    fn about(&self) -> &'static str {
        "osprim's throw path (domain raise/leave, the SIGSEGV dispatcher) in the running binary: code, data, bss from \
         .symtab (bytes), beside Go!'s xcp_mgr"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        section_variants(&[])
    }
    fn single_round(&self) -> bool {
        true
    }
    fn run(&self, _ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let section = part_param(params)?;
        bytes_row(section, || {
            let (shown, elf, syms) = own_symbols()?;
            let own: Vec<&crate::elf::Symbol> = syms
                .iter()
                .filter(|s| s.defined() && s.size > 0)
                .filter(|s| THROW_PATH.iter().any(|p| s.name.starts_with(p)) || s.name.contains(SEGV_OWNER_IMPL))
                .collect();
            let has = |p: &str| own.iter().any(|s| s.name.starts_with(p));
            let check = Check::new(
                "the throw path is in the binary: the domain library's unwind (leave) and the SIGSEGV dispatcher",
                "symbols of both",
                format!(
                    "{} symbols; leave {}, dispatcher {}",
                    own.len(),
                    if has(THROW_PATH[2]) || has(THROW_PATH[1]) { "found" } else { "missing" },
                    if has(THROW_PATH[3]) { "found" } else { "missing" }
                ),
                (has(THROW_PATH[2]) || has(THROW_PATH[1])) && has(THROW_PATH[3]),
            );
            if own.is_empty() {
                return Err(NotMeasured::Skipped(format!(
                    "no symbol of the throw path in {}'s .symtab (another mangling scheme?)",
                    shown.display()
                )));
            }
            let (figure, summed) = symbol_sum(&elf, &own, section);
            Ok(Found {
                path: shown.clone(),
                figure,
                summed,
                checks: vec![check, running_code_check(&syms)],
                berkeley: None,
                what: format!(
                    "osprim's throw path in {} (.symtab st_size: domain raise/leave, sys::segv, SegvOwner impls)",
                    shown.display()
                ),
            })
        })
    }
}

/// Two of the domain crate's functions, as this process runs them, sit at their `.symtab`
/// addresses plus one page-aligned load bias, inside an executable mapping of the binary.
fn running_code_check(syms: &[crate::elf::Symbol]) -> Check {
    let name = "the binary read is the code running (two domain functions at their .symtab addresses + one load bias)";
    let probes: [(&str, usize); 2] = [
        ("11null_method", ::domain::null_method as *const () as usize),
        ("10sum_method", ::domain::sum_method as *const () as usize),
    ];
    let maps = std::fs::read_to_string("/proc/self/maps").map(|t| parse_maps(&t)).unwrap_or_default();
    let exe = std::fs::read_link("/proc/self/exe").ok();
    let mut biases = Vec::new();
    for (tail, addr) in probes {
        let prefix = format!("{DOMAIN_ROOT}{tail}17h");
        let Some(sym) = syms.iter().find(|s| s.name.starts_with(&prefix) && s.defined()) else {
            return Check::impossible(name, format!("no {prefix}… symbol"));
        };
        let inside =
            maps.iter().any(|m| m.exec && Some(&m.path) == exe.as_ref() && (m.start..m.end).contains(&(addr as u64)));
        biases.push(((addr as u64).wrapping_sub(sym.value), inside));
    }
    let one = biases.windows(2).all(|w| w[0].0 == w[1].0);
    let ok = one && biases.iter().all(|(b, inside)| *inside && b % 4096 == 0);
    Check::new(
        name,
        "one page-aligned bias, both inside the binary's executable mapping",
        format!(
            "{:?}",
            biases
                .iter()
                .map(|(b, i)| format!("bias {b:#x}{}", if *i { "" } else { " (outside)" }))
                .collect::<Vec<_>>()
        ),
        ok,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::with_ctx;

    #[test]
    fn maps_lines_name_their_files() {
        let text = "55d0-55e0 r-xp 00001000 fd:01 1234 /usr/lib/x86_64-linux-gnu/libc.so.6\n\
                    7ff0-7ff1 rw-p 00000000 00:00 0 \n\
                    7ff2-7ff3 r--p 00000000 00:00 0 [vdso]\n\
                    7ff4-7ff5 r-xp 00000000 08:02 77 /tmp/a b.so\n";
        let m = parse_maps(text);
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].start, m[0].end, m[0].exec, m[0].dev, m[0].inode), (0x55d0, 0x55e0, true, (0xfd, 1), 1234));
        assert_eq!(m[1].path, PathBuf::from("/tmp/a b.so"));
        assert_eq!(mapped(&m, "libc.so.6").map(|x| x.inode), Some(1234));
    }

    fn every_variant(b: &dyn Benchmark, skip_ok: impl Fn(&Params, &str) -> bool) {
        with_ctx(0.05, |ctx| {
            for p in b.variants(ctx) {
                match b.run(ctx, &p) {
                    Ok(m) => {
                        assert_eq!(m.unit, crate::Unit::Bytes);
                        for c in &m.checks {
                            assert_ne!(c.ok, Some(false), "{p:?}: {c:?}");
                        }
                    }
                    Err(NotMeasured::Skipped(why)) => assert!(skip_ok(&p, &why), "{p:?}: {why}"),
                    Err(e) => panic!("{p:?}: {e:?}"),
                }
            }
        });
    }

    #[test]
    fn the_c_library_is_measured_and_the_threads_stub_said() {
        every_variant(&Lib, |p, why| p["part"] == "libgcc_s" && why.contains("neither mapped"));
        with_ctx(0.05, |ctx| {
            let p = Params::from([("part".into(), "libc".into()), ("section".into(), "text".into())]);
            let m = Lib.run(ctx, &p).expect("the C library is mapped in every test binary");
            assert!(m.samples.per_op_ns[0] > 100_000.0, "libc has code");
            assert_eq!(m.checks.iter().filter(|c| c.ok == Some(true)).count(), m.checks.len());
        });
    }

    #[test]
    fn the_threads_part_is_sized_inside_libc_when_libpthread_is_a_stub() {
        with_ctx(0.05, |ctx| {
            let mut run = |section: &str| {
                let p = Params::from([("part".into(), "libpthread".into()), ("section".into(), section.into())]);
                Lib.run(ctx, &p).unwrap_or_else(|e| panic!("{section}: {e:?}"))
            };
            let text = run("text");
            if !text.params.contains_key("counted") {
                return; // glibc before 2.34: a threads library of its own, sized as such
            }
            assert_eq!(text.params["counted"], "libc pthread symbols");
            assert!(text.samples.per_op_ns[0] > 10_000.0, "pthread_* functions: {:?}", text.samples.per_op_ns);
            assert!(text.notes.iter().any(|n| n.contains("compatibility stub")), "{:?}", text.notes);
            for c in &text.checks {
                assert_eq!(c.ok, Some(true), "{c:?}");
            }
            let bss = run("bss");
            assert!(bss.notes.iter().any(|n| n.contains("struct pthread")), "{:?}", bss.notes);
        });
        assert!(is_pthread("pthread_create@@GLIBC_2.34") && is_pthread("__pthread_keys"));
        assert!(!is_pthread("thrd_create") && !is_pthread("_pthread_cleanup_push"));
    }

    #[test]
    fn the_domain_layers_data_counts_its_key_table() {
        with_ctx(0.05, |ctx| {
            let p = Params::from([("section".into(), "data".into())]);
            let Ok(m) = DomainLayer.run(ctx, &p) else { return };
            let table = ::domain::table::KeyTable::record_bytes(TABLE_DOMAINS, TABLE_DOMAINS, TABLE_KEYS) as f64;
            assert!(table >= (TABLE_DOMAINS * 8) as f64, "{table}");
            assert_eq!(m.observed["key_table_bytes"].as_f64(), Some(table));
            assert!(m.samples.per_op_ns[0] >= table, "{:?}", m.samples.per_op_ns);
        });
    }

    #[test]
    fn the_throw_path_is_sized_from_the_binary() {
        every_variant(&ThrowPath, |_, why| why.contains("stripped"));
        with_ctx(0.05, |ctx| {
            let p = Params::from([("section".into(), "text".into())]);
            if let Ok(m) = ThrowPath.run(ctx, &p) {
                assert!(m.samples.per_op_ns[0] > 0.0);
                assert!(m.checks.iter().all(|c| c.ok == Some(true)), "{:?}", m.checks);
            }
        });
    }

    #[test]
    fn modules_are_measured_or_said_to_be_missing_or_built_in() {
        every_variant(&Module, |_, why| why.contains("built into") || why.contains("no module") || why.contains(".ko"));
    }

    #[test]
    fn the_domain_layer_is_found_in_the_running_binary() {
        every_variant(&DomainLayer, |_, why| why.contains("stripped"));
        with_ctx(0.05, |ctx| {
            let p = Params::from([("section".into(), "text".into())]);
            if let Ok(m) = DomainLayer.run(ctx, &p) {
                assert!(m.samples.per_op_ns[0] > 0.0);
                assert_eq!(m.checks[0].ok, Some(true), "{:?}", m.checks[0]);
            }
        });
    }
}
