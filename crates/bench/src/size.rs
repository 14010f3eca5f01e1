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
//!   `pthread_create` the row is skipped saying so — there is no separable part to weigh.
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
        let mut m = bytes_row(section, || {
            let (bytes, elf) = read_elf(&path)?;
            if *file == "libpthread.so.0" {
                stub_check(&path, &bytes, &elf)?;
            }
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

/// A `libpthread.so.0` that defines no `pthread_create` is glibc's compatibility stub: no
/// separable threads part exists, and the row says so.
fn stub_check(path: &Path, bytes: &[u8], elf: &crate::elf::Elf) -> Result<(), NotMeasured> {
    let syms = elf
        .symbols(bytes, crate::elf::SHT_DYNSYM)
        .map_err(|e| NotMeasured::Failed(format!("{}: {e}", path.display())))?
        .unwrap_or_default();
    if syms.iter().any(|s| s.defined() && s.name == "pthread_create") {
        return Ok(());
    }
    Err(NotMeasured::Skipped(format!(
        "no separable threads part: {} defines no pthread_create — a compatibility stub ({} bytes of code); since \
         glibc 2.34 the threads implementation is inside libc.so.6 (size.lib part=libc)",
        path.display(),
        elf.total(Part::Text)
    )))
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
        let exe = PathBuf::from("/proc/self/exe");
        let shown = std::fs::read_link(&exe).unwrap_or_else(|_| exe.clone());
        bytes_row(section, || {
            let (bytes, elf) = read_elf(&exe)?;
            let syms = elf
                .symbols(&bytes, SHT_SYMTAB)
                .map_err(|e| NotMeasured::Failed(format!("{}: {e}", shown.display())))?
                .ok_or_else(|| {
                    NotMeasured::Skipped(format!(
                        "{} is stripped: no .symtab to find the domain layer's symbols in",
                        shown.display()
                    ))
                })?;
            let own: Vec<&crate::elf::Symbol> =
                syms.iter().filter(|s| s.name.starts_with(DOMAIN_ROOT) && s.defined() && s.size > 0).collect();
            if own.is_empty() {
                return Err(NotMeasured::Skipped(format!(
                    "no symbol of the domain crate ({DOMAIN_ROOT}…) in {}'s .symtab (another mangling scheme?)",
                    shown.display()
                )));
            }
            let mut seen = std::collections::BTreeSet::new();
            let mut per_section: BTreeMap<String, (u64, u64)> = BTreeMap::new();
            let mut figure = 0;
            for s in &own {
                if elf.part_of(s) != Some(section) || !seen.insert((s.value, s.size)) {
                    continue;
                }
                figure += s.size;
                let e = per_section.entry(elf.sections[usize::from(s.shndx)].name.clone()).or_default();
                *e = (e.0 + 1, e.1 + s.size);
            }
            Ok(Found {
                path: shown.clone(),
                figure,
                summed: per_section.iter().map(|(n, (k, b))| format!("{n}: {k} symbols, {b} bytes")).collect(),
                checks: vec![running_code_check(&syms)],
                berkeley: None,
                what: format!("the domain crate's symbols in {} (.symtab st_size)", shown.display()),
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
        every_variant(&Lib, |p, why| p["part"] != "libc" && (why.contains("stub") || why.contains("neither mapped")));
        with_ctx(0.05, |ctx| {
            let p = Params::from([("part".into(), "libc".into()), ("section".into(), "text".into())]);
            let m = Lib.run(ctx, &p).expect("the C library is mapped in every test binary");
            assert!(m.samples.per_op_ns[0] > 100_000.0, "libc has code");
            assert_eq!(m.checks.iter().filter(|c| c.ok == Some(true)).count(), m.checks.len());
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
