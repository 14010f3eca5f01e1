//! Component sizes: `size.shell`, the code, data and bss sizes of the system shell (`/bin/sh`
//! resolved to its file: dash, bash, …), read from its ELF section headers.
//!
//! Seed rows: Go! GTE "component sizes", its `cli` row (code 13,974, data 800, bss 3,200
//! bytes): a command-line interpreter then, the system shell now. GTE's other components
//! (the ORB's internals, its scheduler, its drivers) have no file of their own on Linux.
//!
//! Not a timing benchmark: **the samples are bytes**. What is summed follows Go!'s own
//! definitions ("code size corresponds to the number of bytes a component's code segment
//! consumes; data size is the amount of statically initialised data; and BSS the amount of
//! zero initialised data"):
//! - `section=text`: every allocated, executable section (`.init`, `.plt*`, `.text`,
//!   `.fini`): the code;
//! - `section=data`: the program's initialised data, read-only or not: allocated,
//!   non-executable `PROGBITS` sections named `.rodata*`, `.data*` (with `.data.rel.ro`) or
//!   `.tdata*`. Dynamic-linking and unwinding metadata (`.dynsym`, `.dynstr`, `.rela.*`,
//!   `.gnu.*`, `.got*`, `.dynamic`, `.eh_frame*`, notes) is not the program's data and is left
//!   out;
//! - `section=bss`: every allocated `NOBITS` section (`.bss`, `.tbss`).
//!
//! The row's params name the shell's path and the sections summed; `observed` gives the
//! figures GNU `size` would print (Berkeley convention: text = every allocated read-only
//! section, metadata included; data = allocated writable; bss = allocated `NOBITS`).
//!
//! **Timing model:** none; the file is read and parsed [`READS`] times in one round
//! (`single_round`), one sample per read.
//! **Validation:** the file is an ELF64 whose section headers and names lie inside it; every
//! section summed lies inside a loadable segment (`PT_LOAD`) of the program headers, an
//! executable one for code; every read gives the same figure; the code is not empty.

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params, Unit};
use crate::sampler::{Samples, StopReason};
use std::path::{Path, PathBuf};

/// Reads of the file per row.
pub const READS: usize = 3;

/// The shell looked for.
pub const SHELL: &str = "/bin/sh";

const SHF_WRITE: u64 = 0x1;
const SHF_ALLOC: u64 = 0x2;
const SHF_EXECINSTR: u64 = 0x4;
const SHT_PROGBITS: u32 = 1;
const SHT_NOBITS: u32 = 8;
const PT_LOAD: u32 = 1;
const PF_X: u32 = 1;

/// Which sum a row reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// Allocated executable sections.
    Text,
    /// Initialised program data (`.rodata*`, `.data*`, `.tdata*`).
    Data,
    /// Allocated `NOBITS` sections.
    Bss,
}

impl Part {
    fn name(self) -> &'static str {
        match self {
            Part::Text => "text",
            Part::Data => "data",
            Part::Bss => "bss",
        }
    }

    fn from_name(s: &str) -> Option<Part> {
        [Part::Text, Part::Data, Part::Bss].into_iter().find(|p| p.name() == s)
    }

    /// Whether section `s` counts towards this part.
    fn includes(self, s: &Section) -> bool {
        let alloc = s.flags & SHF_ALLOC != 0;
        let exec = s.flags & SHF_EXECINSTR != 0;
        match self {
            Part::Text => alloc && exec,
            Part::Data => {
                alloc
                    && !exec
                    && s.kind == SHT_PROGBITS
                    && [".rodata", ".data", ".tdata"].iter().any(|p| s.name.starts_with(p))
            }
            Part::Bss => alloc && s.kind == SHT_NOBITS,
        }
    }
}

/// One section header.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    /// Its name from the section-name string table.
    pub name: String,
    /// `sh_type`.
    pub kind: u32,
    /// `sh_flags`.
    pub flags: u64,
    /// `sh_addr`.
    pub addr: u64,
    /// `sh_size`.
    pub size: u64,
}

/// One loadable segment: `[vaddr, vaddr + memsz)`, and whether it is executable.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment {
    /// `p_vaddr`.
    pub vaddr: u64,
    /// `p_memsz`.
    pub memsz: u64,
    /// `PF_X` set.
    pub exec: bool,
}

/// What an ELF64 file's headers say.
#[derive(Clone, Debug, PartialEq)]
pub struct Elf {
    /// Section headers (index 0, the null one, included).
    pub sections: Vec<Section>,
    /// `PT_LOAD` program headers.
    pub loads: Vec<Segment>,
}

/// Little- or big-endian reads from `bytes`, bounds-checked.
struct Reader<'a> {
    bytes: &'a [u8],
    little: bool,
}

impl Reader<'_> {
    fn get<const N: usize>(&self, at: u64) -> Result<[u8; N], String> {
        let at = usize::try_from(at).map_err(|_| "offset too large".to_string())?;
        self.bytes
            .get(at..at.checked_add(N).ok_or("offset overflows")?)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| format!("truncated: {N} bytes at offset {at} lie past the end ({} bytes)", self.bytes.len()))
    }
    fn u16(&self, at: u64) -> Result<u16, String> {
        let b = self.get::<2>(at)?;
        Ok(if self.little { u16::from_le_bytes(b) } else { u16::from_be_bytes(b) })
    }
    fn u32(&self, at: u64) -> Result<u32, String> {
        let b = self.get::<4>(at)?;
        Ok(if self.little { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) })
    }
    fn u64(&self, at: u64) -> Result<u64, String> {
        let b = self.get::<8>(at)?;
        Ok(if self.little { u64::from_le_bytes(b) } else { u64::from_be_bytes(b) })
    }
}

/// Parses the ELF64 header, section headers (with names) and `PT_LOAD` program headers of
/// `bytes` (elf(5)). Errors say what is wrong.
pub fn parse(bytes: &[u8]) -> Result<Elf, String> {
    if bytes.get(..4) != Some(b"\x7fELF") {
        return Err("not an ELF file (no \\x7fELF magic)".into());
    }
    if bytes.get(4) != Some(&2) {
        return Err("not a 64-bit ELF file (EI_CLASS is not ELFCLASS64)".into());
    }
    let little = match bytes.get(5) {
        Some(1) => true,
        Some(2) => false,
        _ => return Err("unknown byte order (EI_DATA)".into()),
    };
    let r = Reader { bytes, little };
    let (phoff, shoff) = (r.u64(0x20)?, r.u64(0x28)?);
    let (phentsize, phnum) = (u64::from(r.u16(0x36)?), u64::from(r.u16(0x38)?));
    let (shentsize, shnum, shstrndx) = (u64::from(r.u16(0x3a)?), u64::from(r.u16(0x3c)?), u64::from(r.u16(0x3e)?));
    if shoff == 0 || shnum == 0 {
        return Err("no section headers".into());
    }
    if shentsize < 64 || (phnum > 0 && phentsize < 56) {
        return Err(format!("header entries too small (sections {shentsize}, program {phentsize} bytes)"));
    }
    if shstrndx >= shnum {
        return Err(format!("section-name table index {shstrndx} out of {shnum} sections"));
    }
    let header = |i: u64| -> Result<(u32, u32, u64, u64, u64, u64), String> {
        let at = shoff + i * shentsize;
        Ok((r.u32(at)?, r.u32(at + 4)?, r.u64(at + 8)?, r.u64(at + 0x10)?, r.u64(at + 0x18)?, r.u64(at + 0x20)?))
    };
    let (_, _, _, _, names_off, names_size) = header(shstrndx)?;
    let names_end = names_off.checked_add(names_size).ok_or("section-name table overflows")?;
    let names = usize::try_from(names_off)
        .ok()
        .zip(usize::try_from(names_end).ok())
        .and_then(|(a, b)| bytes.get(a..b))
        .ok_or("the section-name table lies past the end of the file")?;
    let mut sections = Vec::with_capacity(shnum as usize);
    for i in 0..shnum {
        let (name_at, kind, flags, addr, _, size) = header(i)?;
        let name = names
            .get(name_at as usize..)
            .and_then(|s| s.split(|&b| b == 0).next())
            .ok_or_else(|| format!("section {i}: name offset {name_at} outside the name table"))?;
        sections.push(Section { name: String::from_utf8_lossy(name).into_owned(), kind, flags, addr, size });
    }
    let mut loads = Vec::new();
    for i in 0..phnum {
        let at = phoff + i * phentsize;
        if r.u32(at)? == PT_LOAD {
            loads.push(Segment {
                vaddr: r.u64(at + 0x10)?,
                memsz: r.u64(at + 0x28)?,
                exec: r.u32(at + 4)? & PF_X != 0,
            });
        }
    }
    Ok(Elf { sections, loads })
}

impl Elf {
    /// The sections counted towards `part`.
    pub fn part(&self, part: Part) -> Vec<&Section> {
        self.sections.iter().filter(|s| part.includes(s)).collect()
    }

    /// Their total size in bytes.
    pub fn total(&self, part: Part) -> u64 {
        self.part(part).iter().map(|s| s.size).sum()
    }

    /// GNU `size`'s Berkeley figures: text (allocated, not writable), data (allocated,
    /// writable, with contents), bss (allocated `NOBITS`).
    pub fn berkeley(&self) -> [u64; 3] {
        let mut out = [0u64; 3];
        for s in self.sections.iter().filter(|s| s.flags & SHF_ALLOC != 0) {
            let i = if s.kind == SHT_NOBITS {
                2
            } else if s.flags & SHF_WRITE == 0 {
                0
            } else {
                1
            };
            out[i] += s.size;
        }
        out
    }

    /// The sections of `part` that lie outside every loadable segment (an executable one, for
    /// code). `.tbss` is left out: thread-local zeroes take no room in the segments.
    pub fn outside_segments(&self, part: Part) -> Vec<String> {
        self.part(part)
            .into_iter()
            .filter(|s| !(part == Part::Bss && s.name.starts_with(".tbss")))
            .filter(|s| {
                !self.loads.iter().any(|seg| {
                    (part != Part::Text || seg.exec)
                        && s.addr >= seg.vaddr
                        && s.addr.saturating_add(s.size) <= seg.vaddr.saturating_add(seg.memsz)
                })
            })
            .map(|s| s.name.clone())
            .collect()
    }
}

/// The system shell's sizes.
pub struct Shell;

fn shell_path() -> Result<PathBuf, String> {
    let path = Path::new(SHELL);
    std::fs::canonicalize(path).map_err(|e| format!("{SHELL}: {e}"))
}

impl Benchmark for Shell {
    fn id(&self) -> &'static str {
        "size.shell"
    }
    fn about(&self) -> &'static str {
        "the system shell's ELF sections, beside Go!'s cli: code, initialised data or bss (bytes)"
    }
    fn available(&self) -> Result<(), String> {
        shell_path().map(drop)
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        super::one_param("section", [Part::Text, Part::Data, Part::Bss].map(|p| p.name()))
    }
    fn single_round(&self) -> bool {
        true
    }
    fn run(&self, _ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let name = params.get("section").and_then(|v| v.as_str()).unwrap_or("text");
        let part = Part::from_name(name)
            .ok_or_else(|| NotMeasured::Failed(format!("unknown section '{name}': text, data or bss")))?;
        let path = shell_path().map_err(NotMeasured::Skipped)?;
        let mut figures = Vec::with_capacity(READS);
        let mut elf = None;
        for _ in 0..READS {
            let bytes = std::fs::read(&path).map_err(|e| NotMeasured::Failed(format!("{}: {e}", path.display())))?;
            let parsed =
                parse(&bytes).map_err(|e| NotMeasured::Skipped(format!("{} ({SHELL}): {e}", path.display())))?;
            figures.push(parsed.total(part) as f64);
            elf = Some(parsed);
        }
        let elf = elf.ok_or_else(|| NotMeasured::Failed("no read".into()))?;
        let outside = elf.outside_segments(part);
        let summed: Vec<String> = elf.part(part).iter().map(|s| s.name.clone()).collect();
        let mut checks = vec![
            Check::new(
                "every section summed lies inside a loadable segment (executable, for code)",
                "all inside",
                if outside.is_empty() { "all inside".to_string() } else { format!("outside: {}", outside.join(", ")) },
                outside.is_empty(),
            ),
            Check::new(
                "every read gives the same figure",
                format!("{READS} equal reads"),
                format!("{figures:?}"),
                figures.windows(2).all(|w| w[0] == w[1]),
            ),
        ];
        if part == Part::Text {
            checks.push(Check::new(
                "the shell has code",
                "> 0 bytes",
                format!("{} bytes", figures[0]),
                figures[0] > 0.0,
            ));
        }
        let samples = Samples {
            per_op_ns: figures,
            iterations_per_sample: 1,
            stop: Some(StopReason::FixedCount),
            ..Samples::default()
        };
        let mut m = Measured::new(samples, checks);
        m.unit = Unit::Bytes;
        m.params.insert("path".into(), path.display().to_string().into());
        m.params.insert("sections".into(), serde_json::json!(summed));
        let [t, d, b] = elf.berkeley();
        m.observed.insert("berkeley_text".into(), t.into());
        m.observed.insert("berkeley_data".into(), d.into());
        m.observed.insert("berkeley_bss".into(), b.into());
        m.notes.push(format!(
            "samples are BYTES, not ns: {} of {} ({SHELL}), {}",
            part.name(),
            path.display(),
            match part {
                Part::Text => "allocated executable sections (code)",
                Part::Data => "initialised program data: .rodata*, .data*, .tdata* (loader metadata left out)",
                Part::Bss => "allocated NOBITS sections (zero-initialised)",
            }
        ));
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::with_ctx;

    #[test]
    fn parse_rejects_what_is_not_elf64() {
        assert!(parse(b"#!/bin/sh\n").unwrap_err().contains("not an ELF"));
        assert!(parse(b"\x7fELF\x01\x01").unwrap_err().contains("64-bit"));
        let mut truncated = b"\x7fELF\x02\x01".to_vec();
        truncated.resize(0x30, 0);
        assert!(parse(&truncated).unwrap_err().contains("truncated"));
    }

    #[test]
    fn own_binary_parses_and_agrees_with_its_segments() {
        let exe = std::env::current_exe().unwrap();
        let elf = parse(&std::fs::read(exe).unwrap()).unwrap();
        assert!(elf.part(Part::Text).iter().any(|s| s.name == ".text"));
        assert!(elf.total(Part::Text) > 0 && elf.total(Part::Data) > 0);
        for p in [Part::Text, Part::Data, Part::Bss] {
            assert_eq!(elf.outside_segments(p), Vec::<String>::new(), "{p:?}");
        }
        let [t, _, _] = elf.berkeley();
        assert!(t >= elf.total(Part::Text));
    }

    #[test]
    fn shell_rows_report_bytes() {
        if Shell.available().is_err() {
            return;
        }
        with_ctx(0.05, |ctx| {
            let mut p = Params::new();
            p.insert("section".into(), "text".into());
            let m = Shell.run(ctx, &p).expect("size.shell runs");
            assert_eq!(m.unit, Unit::Bytes);
            assert_eq!(m.samples.per_op_ns.len(), READS);
            assert!(m.checks.iter().all(|c| c.ok == Some(true)), "{:?}", m.checks);
            assert!(m.params.contains_key("path"));
        });
    }
}
