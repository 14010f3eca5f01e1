//! Component sizes: `size.shell`, the code, data and bss sizes of the system shell (`/bin/sh`
//! resolved to its file: dash, bash, …), read from its ELF section headers.
//!
//! Seed rows: Go! GTE "component sizes", its `cli` row (code 13,974, data 800, bss 3,200
//! bytes): a command-line interpreter then, the system shell now. GTE's other components and
//! the ORB are weighed by `size.lib`, `size.module` and `size.domain` (`size.rs`) through the
//! same path: [`parse`] (with [`Elf::symbols`] for symbol tables), the parts of [`Part`], and
//! one row builder, [`bytes_row`].
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
    pub fn name(self) -> &'static str {
        match self {
            Part::Text => "text",
            Part::Data => "data",
            Part::Bss => "bss",
        }
    }

    pub fn from_name(s: &str) -> Option<Part> {
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
    /// `sh_offset`.
    pub offset: u64,
    /// `sh_link` (a symbol table's string table).
    pub link: u32,
    /// `sh_entsize`.
    pub entsize: u64,
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
    /// `e_type`: 1 relocatable (a kernel module), 2 executable, 3 shared object or PIE.
    pub kind: u16,
    /// Little-endian.
    pub little: bool,
    /// Section headers (index 0, the null one, included).
    pub sections: Vec<Section>,
    /// `PT_LOAD` program headers.
    pub loads: Vec<Segment>,
}

/// `e_type` of a relocatable object (a kernel module's `.ko`).
pub const ET_REL: u16 = 1;
/// `sh_type` of the full symbol table (absent once stripped).
pub const SHT_SYMTAB: u32 = 2;
/// `sh_type` of the dynamic symbol table.
pub const SHT_DYNSYM: u32 = 11;
/// Section indices from here on are special (absolute, common, …), not sections.
const SHN_LORESERVE: u16 = 0xff00;

/// One symbol of a symbol table.
#[derive(Clone, Debug, PartialEq)]
pub struct Symbol {
    /// Its (mangled) name.
    pub name: String,
    /// `st_value`: its address.
    pub value: u64,
    /// `st_size`.
    pub size: u64,
    /// `st_shndx`: the section it is defined in (0: undefined).
    pub shndx: u16,
}

impl Symbol {
    /// Defined in a section of this file (not undefined, absolute or common).
    pub fn defined(&self) -> bool {
        self.shndx != 0 && self.shndx < SHN_LORESERVE
    }
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
    let kind = r.u16(0x10)?;
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
    let link_entsize = |i: u64| -> Result<(u32, u64), String> {
        let at = shoff + i * shentsize;
        Ok((r.u32(at + 0x28)?, r.u64(at + 0x38)?))
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
        let (name_at, kind, flags, addr, offset, size) = header(i)?;
        let (link, entsize) = link_entsize(i)?;
        let name = names
            .get(name_at as usize..)
            .and_then(|s| s.split(|&b| b == 0).next())
            .ok_or_else(|| format!("section {i}: name offset {name_at} outside the name table"))?;
        let name = String::from_utf8_lossy(name).into_owned();
        sections.push(Section { name, kind, flags, addr, size, offset, link, entsize });
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
    Ok(Elf { kind, little, sections, loads })
}

/// The bytes of section `s` of `bytes`, or why they are not there.
fn contents<'a>(bytes: &'a [u8], s: &Section) -> Result<&'a [u8], String> {
    usize::try_from(s.offset)
        .ok()
        .zip(usize::try_from(s.offset.saturating_add(s.size)).ok())
        .and_then(|(a, b)| bytes.get(a..b))
        .ok_or_else(|| format!("section {} lies past the end of the file", s.name))
}

impl Elf {
    /// The symbols of the first table of type `table` ([`SHT_SYMTAB`] or [`SHT_DYNSYM`]) in
    /// `bytes` (the file this was parsed from); `None` when the file has no such table (a
    /// stripped file has no `.symtab`).
    pub fn symbols(&self, bytes: &[u8], table: u32) -> Result<Option<Vec<Symbol>>, String> {
        let Some(tab) = self.sections.iter().find(|s| s.kind == table) else {
            return Ok(None);
        };
        let strtab = self
            .sections
            .get(tab.link as usize)
            .ok_or_else(|| format!("{}: string table {} out of range", tab.name, tab.link))?;
        let (data, names) = (contents(bytes, tab)?, contents(bytes, strtab)?);
        if tab.entsize < 24 {
            return Err(format!("{}: entries of {} bytes, not 24", tab.name, tab.entsize));
        }
        let r = Reader { bytes: data, little: self.little };
        let mut out = Vec::with_capacity((tab.size / tab.entsize) as usize);
        for i in 0..tab.size / tab.entsize {
            let at = i * tab.entsize;
            let name_at = r.u32(at)? as usize;
            let name = names
                .get(name_at..)
                .and_then(|s| s.split(|&b| b == 0).next())
                .ok_or_else(|| format!("{} symbol {i}: name outside its string table", tab.name))?;
            out.push(Symbol {
                name: String::from_utf8_lossy(name).into_owned(),
                shndx: r.u16(at + 6)?,
                value: r.u64(at + 8)?,
                size: r.u64(at + 16)?,
            });
        }
        Ok(Some(out))
    }

    /// The part a defined symbol's section counts towards, if any.
    pub fn part_of(&self, sym: &Symbol) -> Option<Part> {
        let s = self.sections.get(usize::from(sym.shndx)).filter(|_| sym.defined())?;
        [Part::Text, Part::Data, Part::Bss].into_iter().find(|p| p.includes(s))
    }

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

/// What one read of a component's file found: the figure for a part and how it was found.
pub struct Found {
    /// The file read.
    pub path: PathBuf,
    /// Bytes of the part.
    pub figure: u64,
    /// What was summed (section names, or symbols per section).
    pub summed: Vec<String>,
    /// Checks of what was read (the file is the one meant, the sums lie where they should).
    pub checks: Vec<Check>,
    /// GNU `size`'s Berkeley figures of the whole file, where they mean something.
    pub berkeley: Option<[u64; 3]>,
    /// What the figure is, for the row's note.
    pub what: String,
}

/// The `section` parameter.
pub fn part_param(params: &Params) -> Result<Part, NotMeasured> {
    let name = params.get("section").and_then(|v| v.as_str()).unwrap_or("text");
    Part::from_name(name).ok_or_else(|| NotMeasured::Failed(format!("unknown section '{name}': text, data or bss")))
}

/// The row of a size: `read` [`READS`] times (one sample each, in bytes), the figures checked
/// equal, the code checked not empty, and what the last read found.
pub fn bytes_row(part: Part, mut read: impl FnMut() -> Result<Found, NotMeasured>) -> Result<Measured, NotMeasured> {
    let mut figures = Vec::with_capacity(READS);
    let mut last = None;
    for _ in 0..READS {
        let found = read()?;
        figures.push(found.figure as f64);
        last = Some(found);
    }
    let found = last.ok_or_else(|| NotMeasured::Failed("no read".into()))?;
    let mut checks = found.checks;
    checks.push(Check::new(
        "every read gives the same figure",
        format!("{READS} equal reads"),
        format!("{figures:?}"),
        figures.windows(2).all(|w| w[0] == w[1]),
    ));
    if part == Part::Text {
        checks.push(Check::new("it has code", "> 0 bytes", format!("{} bytes", figures[0]), figures[0] > 0.0));
    }
    let samples = Samples {
        per_op_ns: figures,
        iterations_per_sample: 1,
        stop: Some(StopReason::FixedCount),
        ..Samples::default()
    };
    let mut m = Measured::new(samples, checks);
    m.unit = Unit::Bytes;
    m.params.insert("path".into(), found.path.display().to_string().into());
    m.params.insert("sections".into(), serde_json::json!(found.summed));
    if let Some([t, d, b]) = found.berkeley {
        m.observed.insert("berkeley_text".into(), t.into());
        m.observed.insert("berkeley_data".into(), d.into());
        m.observed.insert("berkeley_bss".into(), b.into());
    }
    m.notes.push(format!(
        "samples are BYTES, not ns: {} of {}, {}",
        part.name(),
        found.what,
        match part {
            Part::Text => "allocated executable sections (code)",
            Part::Data => "initialised program data: .rodata*, .data*, .tdata* (loader metadata left out)",
            Part::Bss => "allocated NOBITS sections (zero-initialised)",
        }
    ));
    Ok(m)
}

/// Reads and parses the ELF file at `path`: its bytes and headers.
pub fn read_elf(path: &Path) -> Result<(Vec<u8>, Elf), NotMeasured> {
    let bytes = std::fs::read(path).map_err(|e| NotMeasured::Failed(format!("{}: {e}", path.display())))?;
    let elf = parse(&bytes).map_err(|e| NotMeasured::Skipped(format!("{}: {e}", path.display())))?;
    Ok((bytes, elf))
}

/// The sums of `part` over the sections of a loadable file (`path`, parsed as `elf`), with the
/// check that every section summed lies inside a loadable segment.
pub fn section_sum(path: &Path, elf: &Elf, part: Part, what: String) -> Found {
    let outside = elf.outside_segments(part);
    Found {
        path: path.to_path_buf(),
        figure: elf.total(part),
        summed: elf.part(part).iter().map(|s| s.name.clone()).collect(),
        checks: vec![Check::new(
            "every section summed lies inside a loadable segment (executable, for code)",
            "all inside",
            if outside.is_empty() { "all inside".to_string() } else { format!("outside: {}", outside.join(", ")) },
            outside.is_empty(),
        )],
        berkeley: Some(elf.berkeley()),
        what,
    }
}

/// The three `section` values, as variants (with `extra` in each).
pub fn section_variants(extra: &[(&str, &str)]) -> Vec<Params> {
    [Part::Text, Part::Data, Part::Bss]
        .into_iter()
        .map(|p| {
            let mut v = Params::from([("section".to_string(), serde_json::Value::from(p.name()))]);
            for (k, x) in extra {
                v.insert((*k).to_string(), serde_json::Value::from(*x));
            }
            v
        })
        .collect()
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
        section_variants(&[])
    }
    fn single_round(&self) -> bool {
        true
    }
    fn run(&self, _ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let part = part_param(params)?;
        let path = shell_path().map_err(NotMeasured::Skipped)?;
        bytes_row(part, || {
            let (_, elf) = read_elf(&path)?;
            Ok(section_sum(&path, &elf, part, format!("{} ({SHELL})", path.display())))
        })
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
