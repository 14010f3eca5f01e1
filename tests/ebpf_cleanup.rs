//! No BPF program or link of `interpose.ebpf` outlives a run killed with SIGKILL while the
//! program is attached: the interposed child's link dies with it (`PR_SET_PDEATHSIG` through
//! the worker), and the program with the last descriptor. The program and the link are found
//! from outside, in the fdinfo of the run's processes (`prog_id:`, `link_id:`), and looked up
//! by id in the kernel's lists once every process of the run is reaped. This test process is a
//! child subreaper, so an orphan of the run would be its child and be seen. Skipped, saying
//! why, where the row cannot run (not root, no clang at build time).

mod common;

use bench::Benchmark;
use common::{descendants_of, gone, osprim, wait_for};
use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The BPF program and link ids that the descriptors of `pids` refer to.
fn bpf_ids(pids: &[i32]) -> (BTreeSet<u32>, BTreeSet<u32>) {
    let (mut progs, mut links) = (BTreeSet::new(), BTreeSet::new());
    for pid in pids {
        let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else { continue };
        for fd in dir.flatten() {
            let text = std::fs::read_to_string(fd.path()).unwrap_or_default();
            for line in text.lines() {
                let id = |key: &str| line.strip_prefix(key).and_then(|v| v.trim().parse::<u32>().ok());
                if let Some(id) = id("prog_id:") {
                    progs.insert(id);
                }
                if let Some(id) = id("link_id:") {
                    links.insert(id);
                }
            }
        }
    }
    (progs, links)
}

#[test]
fn a_killed_run_leaves_no_bpf_program_or_link() {
    if let Err(why) = bench::ebpf::SysEnter.available() {
        eprintln!("skipped: {why}");
        return;
    }
    nix::sys::prctl::set_child_subreaper(true).expect("become a child subreaper");
    let tmp = tempfile::tempdir().unwrap();
    let mut child = osprim()
        .args(["run", "--budget", "60", "--no-save", "--no-history", "--format", "json", "interpose.ebpf"])
        .current_dir(tmp.path())
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // A moment when a process of the run holds a link: the program is attached.
    let seen = wait_for(|| {
        let (progs, links) = bpf_ids(&descendants_of(child.id()));
        (!links.is_empty()).then_some((progs, links))
    });
    let run = descendants_of(child.id());
    let _ = child.kill();
    let _ = child.wait();
    let (progs, links) = seen.expect("the run attaches its program within the test's patience");
    eprintln!("killed the run while it held programs {progs:?} and links {links:?}");
    // Every process of the run dies with it and is reaped.
    for pid in run {
        assert!(wait_for(|| gone(pid).then_some(())).is_some(), "process {pid} of the run outlived it");
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let left = |ids: &BTreeSet<u32>, listed: &dyn Fn(u32) -> bool| {
        ids.iter().copied().filter(|&id| listed(id)).collect::<Vec<_>>()
    };
    loop {
        let (p, l) = (left(&progs, &bench::ebpf::program_exists), left(&links, &bench::ebpf::link_exists));
        if p.is_empty() && l.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left after the run was killed: programs {p:?}, links {l:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
