//! Kernel tracepoints through tracefs, in a private trace instance.
//!
//! **Where.** [`Tracefs::open`] uses the machine's tracefs where it is mounted and accessible
//! ([`find`] looks at `/sys/kernel/tracing`, then `/sys/kernel/debug/tracing`, and says why
//! neither will do). Where it is not, and osprim runs as root, it mounts a tracefs of its own
//! in a private mount namespace ([`crate::mountns::PrivateMount`]: a helper child's copy of
//! the namespace with every mount made private, tracefs mounted on that copy's
//! `/sys/kernel/tracing`, reached through `/proc/<helper>/root/…`). That changes nothing
//! outside: no other process's mount table ever shows the mount, no directory is made, and the
//! mount ends with the helper, which ends when the [`Tracefs`] drops (or dies with osprim).
//! Unprivileged, the reason (no tracefs mounted, no right to mount one) is given and callers
//! go on without tracepoints.
//!
//! **Instances.** [`Instance::create`] makes a trace instance of its own
//! (`instances/osprim-<pid>`), so that the global buffer and its settings — what someone
//! else may be tracing — are never touched: the clock, the events and the buffer are the
//! instance's. It prefers the `x86-tsc` trace clock, whose timestamps are raw counter values
//! at full resolution (the same counter osprim's timer reads), else `mono` (printed in
//! microseconds, so events are placed to 1 µs only); [`Instance::clock`] says which. An
//! instance is kernel state even when made through a private mount (tracefs has one
//! superblock: the machine's `/sys/kernel/tracing/instances`, if someone mounts it, lists it).
//!
//! **Nothing left behind.** The instance is removed (events disabled, then `rmdir`) when the
//! [`Instance`] drops — before the private mount it was made through, which it owns
//! ([`Instance::create_on`]) — after a run, on an error (every early return drops it), and
//! after Ctrl-C, which ends a benchmark by returning. A second Ctrl-C ends the process at once
//! and SIGKILL cannot be caught, so every [`Instance::create`] first removes the instances that
//! dead osprim processes left (named after a process id that is no longer an `osprim`
//! process), as `scratch` does for scratch directories.
//!
//! **Events.** [`Instance::read`] reads the instance's `trace` file and parses each line
//! ([`parse_line`]): task, CPU, timestamp, event name and the event's own fields.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// Where tracefs is looked for, in order.
pub const ROOTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Prefix of every instance osprim makes.
const PREFIX: &str = "osprim-";

/// One instance per process at a time (its name carries only the process id).
static ONE_INSTANCE: Mutex<()> = Mutex::new(());

/// The tracefs root: the first of [`ROOTS`] that is mounted and accessible.
pub fn find() -> Result<PathBuf, String> {
    find_in(&ROOTS.map(Path::new))
}

/// The first of `roots` where tracefs is mounted and accessible, or why none is.
pub fn find_in(roots: &[&Path]) -> Result<PathBuf, String> {
    let mut reasons = Vec::new();
    for root in roots {
        match std::fs::metadata(root.join("trace_clock")) {
            Ok(m) if m.is_file() && root.join("instances").is_dir() => return Ok(root.to_path_buf()),
            Ok(_) => reasons.push(format!("{} has no instances directory", root.display())),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => reasons.push(format!(
                "{} is not accessible to this user (tracefs is root-only unless its mode was changed)",
                root.display()
            )),
            Err(_) => reasons.push(format!("tracefs is not mounted at {}", root.display())),
        }
    }
    if reasons.is_empty() {
        return Err("no tracefs location given".into());
    }
    Err(reasons.join("; "))
}

/// A tracefs osprim can use: the machine's, or its own in a private mount namespace (module
/// doc), which is unmounted when this drops.
#[derive(Debug)]
pub struct Tracefs {
    root: PathBuf,
    private: Option<crate::mountns::PrivateMount>,
}

impl Tracefs {
    /// The machine's tracefs ([`find`]), else one of osprim's own in a private mount namespace;
    /// or why neither can be had.
    pub fn open() -> Result<Tracefs, String> {
        Tracefs::open_from(&ROOTS.map(Path::new), Some(Path::new(ROOTS[0])))
    }

    /// The first of `roots` that is usable, else (with `private_on`) a private mount on that
    /// directory; or why not.
    pub fn open_from(roots: &[&Path], private_on: Option<&Path>) -> Result<Tracefs, String> {
        let host = match find_in(roots) {
            Ok(root) => return Ok(Tracefs { root, private: None }),
            Err(why) => why,
        };
        let Some(target) = private_on else { return Err(host) };
        let mount = crate::mountns::PrivateMount::new("tracefs", target)
            .map_err(|e| format!("{host}; and no private one could be mounted: {e}"))?;
        let root = find_in(&[mount.root()]).map_err(|e| format!("{host}; the private mount is not usable: {e}"))?;
        Ok(Tracefs { root, private: Some(mount) })
    }

    /// Where its files are (for a private mount, `/proc/<helper>/root/sys/kernel/tracing`).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether it is osprim's own mount in a private mount namespace.
    pub fn is_private(&self) -> bool {
        self.private.is_some()
    }

    /// How it was reached, for a result's `observed`.
    pub fn describe(&self) -> String {
        match &self.private {
            Some(_) => {
                "osprim's own tracefs, mounted in a private mount namespace (invisible outside, gone with the run)"
                    .into()
            }
            None => format!("the machine's tracefs at {}", self.root.display()),
        }
    }
}

/// One line of the trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// The task's name and thread id, e.g. `osprim-1234`.
    pub task: String,
    /// The CPU it was recorded on.
    pub cpu: usize,
    /// Timestamp: counter ticks for a counter clock (`x86-tsc`, `counter`), else nanoseconds
    /// (to the microsecond the text gives).
    pub ts: u64,
    /// The event's name, e.g. `hrtimer_expire_entry`.
    pub name: String,
    /// The rest of the line, the event's fields (`function=posix_timer_fn now=…`).
    pub fields: String,
}

impl Event {
    /// The value of field `key` (`key=value`, up to the next space).
    pub fn field(&self, key: &str) -> Option<&str> {
        self.fields.split_whitespace().find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
    }
}

/// Parses one line of a `trace` file; `None` for comments and anything unreadable.
///
/// Format (default options): `<task>-<pid> [<cpu>] <flags> <timestamp>: <event>: <fields>`.
/// The task's name may hold spaces and dashes, so the CPU field (`[003]`) anchors the parse.
pub fn parse_line(line: &str) -> Option<Event> {
    if line.trim_start().starts_with('#') {
        return None;
    }
    let (task, cpu, rest) = split_cpu(line)?;
    let mut tokens = rest.split_whitespace();
    let mut tok = tokens.next()?;
    if !tok.ends_with(':') {
        // The irq-info flags column (`d.h1.`), when present.
        tok = tokens.next()?;
    }
    let ts = parse_timestamp(tok.strip_suffix(':')?)?;
    let name = tokens.next()?.strip_suffix(':')?.to_string();
    let fields = tokens.collect::<Vec<_>>().join(" ");
    Some(Event { task: task.trim().to_string(), cpu, ts, name, fields })
}

/// Splits off `<task> [<cpu>]`: the first bracketed run of digits.
fn split_cpu(line: &str) -> Option<(&str, usize, &str)> {
    let mut from = 0;
    while let Some(open) = line[from..].find('[').map(|i| i + from) {
        let close = line[open..].find(']').map(|i| i + open)?;
        let inner = &line[open + 1..close];
        if !inner.is_empty() && inner.bytes().all(|b| b.is_ascii_digit()) {
            return Some((&line[..open], inner.parse().ok()?, &line[close + 1..]));
        }
        from = open + 1;
    }
    None
}

/// A counter value (`73903850712230`) or seconds with a fraction (`1234.567890`) in ns.
fn parse_timestamp(s: &str) -> Option<u64> {
    match s.split_once('.') {
        None => s.parse().ok(),
        Some((secs, frac)) => {
            if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let scale = 10u64.pow(9 - frac.len() as u32);
            secs.parse::<u64>().ok()?.checked_mul(1_000_000_000)?.checked_add(frac.parse::<u64>().ok()? * scale)
        }
    }
}

/// A private trace instance, removed on drop (module doc).
pub struct Instance {
    path: PathBuf,
    clock: String,
    enabled: Vec<String>,
    missing: Vec<String>,
    _one: MutexGuard<'static, ()>,
    /// The tracefs it was made through, dropped (unmounted, if private) after the instance
    /// is removed.
    _fs: Option<Tracefs>,
}

impl Instance {
    /// Makes `instances/osprim-<pid>` under `root` (after removing those of dead runs), sets
    /// its clock to the first of `clocks` it offers, and enables each of `events`
    /// (`system/name`) that exists; events this kernel lacks are listed by
    /// [`Instance::missing`]. Fails, with the reason, when the instance cannot be made or
    /// none of `clocks` is offered.
    pub fn create(root: &Path, clocks: &[&str], events: &[&str]) -> Result<Instance, String> {
        Instance::make(root, None, clocks, events)
    }

    /// As [`Instance::create`], under `fs`, which the instance keeps until it is removed (a
    /// private mount ends after its instance).
    pub fn create_on(fs: Tracefs, clocks: &[&str], events: &[&str]) -> Result<Instance, String> {
        let root = fs.root().to_path_buf();
        Instance::make(&root, Some(fs), clocks, events)
    }

    fn make(root: &Path, fs: Option<Tracefs>, clocks: &[&str], events: &[&str]) -> Result<Instance, String> {
        let one = ONE_INSTANCE.lock().unwrap_or_else(|p| p.into_inner());
        let instances = root.join("instances");
        remove_stale(&instances);
        let path = instances.join(format!("{PREFIX}{}", std::process::id()));
        if path.exists() {
            // Left by an earlier instance of this process that could not be removed.
            remove(&path);
        }
        std::fs::create_dir(&path).map_err(|e| format!("cannot make trace instance {}: {e}", path.display()))?;
        let mut inst =
            Instance { path, clock: String::new(), enabled: Vec::new(), missing: Vec::new(), _one: one, _fs: fs };
        inst.clock = inst.set_clock(clocks)?;
        // Room for a round's events on each CPU; a smaller buffer only loses old events.
        let _ = inst.write("buffer_size_kb", "4096");
        for ev in events {
            let enable = inst.path.join("events").join(ev).join("enable");
            if !enable.is_file() {
                inst.missing.push((*ev).to_string());
                continue;
            }
            std::fs::write(&enable, "1").map_err(|e| format!("cannot enable {ev}: {e}"))?;
            inst.enabled.push((*ev).to_string());
        }
        inst.write("tracing_on", "1")?;
        Ok(inst)
    }

    fn set_clock(&self, clocks: &[&str]) -> Result<String, String> {
        let offered = std::fs::read_to_string(self.path.join("trace_clock"))
            .map_err(|e| format!("cannot read trace_clock: {e}"))?;
        let names: Vec<&str> = offered.split_whitespace().map(|c| c.trim_matches(['[', ']'])).collect();
        let Some(clock) = clocks.iter().find(|c| names.contains(c)) else {
            return Err(format!("none of the trace clocks {clocks:?} is offered ({})", offered.trim()));
        };
        self.write("trace_clock", clock)?;
        Ok((*clock).to_string())
    }

    fn write(&self, file: &str, value: &str) -> Result<(), String> {
        std::fs::write(self.path.join(file), value).map_err(|e| format!("cannot write {value} to {file}: {e}"))
    }

    /// Sets `system/name`'s filter (e.g. `sig == 34`).
    pub fn filter(&self, event: &str, filter: &str) -> Result<(), String> {
        self.write(&format!("events/{event}/filter"), filter)
    }

    /// The trace clock in use.
    pub fn clock(&self) -> &str {
        &self.clock
    }

    /// Whether timestamps are counter ticks (else nanoseconds).
    pub fn counter_clock(&self) -> bool {
        matches!(self.clock.as_str(), "x86-tsc" | "counter")
    }

    /// The events enabled.
    pub fn enabled(&self) -> &[String] {
        &self.enabled
    }

    /// The events asked for that this kernel does not have.
    pub fn missing(&self) -> &[String] {
        &self.missing
    }

    /// The instance's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Empties the instance's buffer.
    pub fn clear(&self) -> Result<(), String> {
        self.write("trace", "")
    }

    /// Every event in the buffer, oldest first.
    pub fn read(&self) -> Result<Vec<Event>, String> {
        let text = std::fs::read_to_string(self.path.join("trace")).map_err(|e| format!("cannot read trace: {e}"))?;
        Ok(text.lines().filter_map(parse_line).collect())
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        remove(&self.path);
    }
}

/// Turns an instance's tracing off and removes it; the kernel refuses (`EBUSY`) while a file
/// of it is open, so a few attempts are made.
fn remove(path: &Path) {
    let _ = std::fs::write(path.join("tracing_on"), "0");
    let _ = std::fs::write(path.join("events/enable"), "0");
    for _ in 0..20 {
        if std::fs::remove_dir(path).is_ok() || !path.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Removes the instances in `instances` whose osprim process is dead (module doc).
fn remove_stale(instances: &Path) {
    let Ok(entries) = std::fs::read_dir(instances) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(owner_pid) else { continue };
        if !is_live_osprim(pid) {
            remove(&entry.path());
        }
    }
}

/// The process id in an instance's name, `osprim-<pid>`.
fn owner_pid(name: &str) -> Option<u32> {
    let pid = name.strip_prefix(PREFIX)?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// Whether `pid` is a live osprim process (a test binary running osprim's code counts too).
fn is_live_osprim(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.starts_with("osprim"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_with_and_without_flags() {
        let l = "            bash-2588    [001] d.h.. 73903850748833: hrtimer_expire_entry: hrtimer=00000000d533039d function=tick_nohz_handler now=30221448030456";
        let e = parse_line(l).unwrap();
        assert_eq!((e.task.as_str(), e.cpu, e.ts), ("bash-2588", 1, 73903850748833));
        assert_eq!(e.name, "hrtimer_expire_entry");
        assert_eq!(e.field("function"), Some("tick_nohz_handler"));
        assert_eq!(e.field("now"), Some("30221448030456"));
        let l = " my [task]-x-12 [000] 123.000045: signal_generate: sig=34 errno=0";
        let e = parse_line(l).unwrap();
        assert_eq!((e.task.as_str(), e.cpu, e.ts), ("my [task]-x-12", 0, 123_000_045_000));
        assert_eq!(e.field("sig"), Some("34"));
        assert_eq!(parse_line("# tracer: nop"), None);
        assert_eq!(parse_line("garbage [x] y"), None);
        assert_eq!(parse_line(""), None);
    }

    #[test]
    fn an_absent_root_gives_the_reason() {
        let err = find_in(&[Path::new("/nonexistent/osprim-tracefs")]).unwrap_err();
        assert!(err.contains("not mounted at /nonexistent/osprim-tracefs"), "{err}");
        let empty = tempfile::tempdir().unwrap();
        let err = find_in(&[empty.path()]).unwrap_err();
        assert!(err.contains("not mounted"), "{err}");
    }

    #[test]
    fn names_carry_the_pid() {
        assert_eq!(owner_pid("osprim-1234"), Some(1234));
        assert_eq!(owner_pid("osprim-"), None);
        assert_eq!(owner_pid("osprim-12x"), None);
        assert_eq!(owner_pid("other-12"), None);
    }

    /// Lines of this process's mount table that are tracefs mounts.
    fn tracefs_mounts() -> Vec<String> {
        let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        table.lines().filter(|l| l.contains(" - tracefs ")).map(String::from).collect()
    }

    #[test]
    fn without_a_private_mount_the_reason_is_the_hosts() {
        let err = Tracefs::open_from(&[Path::new("/nonexistent/osprim-tracefs")], None).unwrap_err();
        assert!(err.contains("not mounted at /nonexistent/osprim-tracefs"), "{err}");
        let err = Tracefs::open_from(
            &[Path::new("/nonexistent/osprim-tracefs")],
            Some(Path::new("/nonexistent/osprim-target")),
        )
        .unwrap_err();
        assert!(err.contains("no private one could be mounted") && err.contains("not a directory"), "{err}");
    }

    /// The real path, where tracefs is mounted and writable, or root can mount a private one;
    /// otherwise says why and passes. Run as root on a machine without tracefs mounted, it
    /// goes through osprim's own private mount, which must leave this process's mount table
    /// as it was, during the run and after.
    #[test]
    fn an_instance_traces_and_is_removed_with_stale_ones() {
        // The notify tests look for this process's instance: not while they run.
        let _s = crate::testing::serial();
        let mounts_before = tracefs_mounts();
        let fs = match Tracefs::open() {
            Ok(fs) => fs,
            Err(why) => {
                eprintln!("tracefs not usable here: {why}");
                return;
            }
        };
        let root = fs.root().to_path_buf();
        let private = fs.is_private();
        eprintln!("{}", fs.describe());
        if find().is_err() && crate::sandbox::is_root() {
            assert!(private, "as root without a mounted tracefs, osprim mounts its own");
        }
        // A stale instance of a dead process (a pid above the kernel's limit is never alive).
        let stale = root.join("instances/osprim-4294967");
        if std::fs::create_dir(&stale).is_err() {
            eprintln!("tracefs instances not writable here");
            return;
        }
        let path;
        let global_before = std::fs::read_to_string(root.join("trace_clock")).unwrap();
        {
            let inst = Instance::create_on(
                fs,
                &["x86-tsc", "mono"],
                &["irq_vectors/local_timer_entry", "timer/hrtimer_expire_entry", "no/such_event"],
            )
            .expect("instance");
            assert!(!stale.exists(), "the dead run's instance is removed");
            path = inst.path().to_path_buf();
            assert!(path.is_dir());
            assert_eq!(inst.missing(), ["no/such_event"]);
            assert!(!inst.enabled().is_empty());
            std::thread::sleep(std::time::Duration::from_millis(30));
            let events = inst.read().expect("read");
            assert!(events.iter().any(|e| inst.enabled().iter().any(|n| n.ends_with(&e.name))), "{events:?}");
            let global = std::fs::read_to_string(root.join("trace_clock")).unwrap();
            assert_eq!(global, global_before, "the global clock is untouched");
            assert_eq!(tracefs_mounts(), mounts_before, "a private mount is not in this process's table");
        }
        assert_eq!(tracefs_mounts(), mounts_before, "no tracefs mount gained");
        if private {
            // The helper is gone, and with it the mount and the way in: look from a new one.
            assert!(!path.exists());
            let again = Tracefs::open().expect("a second private mount");
            let name = path.file_name().unwrap();
            assert!(!again.root().join("instances").join(name).exists(), "the instance is removed on drop");
        } else {
            assert!(!path.exists(), "the instance is removed on drop");
        }
    }
}
