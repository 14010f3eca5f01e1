//! The worker process: one round of a run, measured in a fresh process (module doc of
//! [`super`]). It prints nothing to the terminal (its stdout carries the reports, its stderr
//! goes to a file the run reads if it dies), has no progress, makes no scratch directory of its
//! own and sweeps none, and installs no journal finisher: at a signal it stops after the
//! current sample, reports what it has and exits 0.

use super::layout::{self, Layout};
use super::protocol::{self, PROTOCOL, Ready, Report, Request};
use bench::sampler::Method;
use bench::{Ctx, NotMeasured};
use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

/// Why a worker cannot start: a request that is missing or unreadable (exit 2), or a system
/// error (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// Started by hand, or with a request this build cannot read.
    #[error("{0}")]
    Usage(String),
    /// The system refused something the worker needs.
    #[error("{0}")]
    System(String),
}

/// Spin before measuring, so that the first visit does not pay for the CPU waking up and the
/// process's first page faults on its stack and timer code.
const WARMUP: std::time::Duration = std::time::Duration::from_millis(10);

/// `osprim __worker`: call it first thing in `main`, while the process has one thread.
pub fn main() -> ExitCode {
    let layout = layout::apply_in_worker();
    crate::panics::install_hook();
    match serve(layout) {
        Ok(()) => ExitCode::SUCCESS,
        Err(WorkerError::Usage(e)) => {
            say!("error: {e}");
            ExitCode::from(2)
        }
        Err(WorkerError::System(e)) => {
            say!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// Reads the request from stdin.
fn read_request() -> Result<Request, WorkerError> {
    let by_hand = || {
        WorkerError::Usage(format!(
            "'osprim {}' measures one round for 'osprim run', which gives it the round on stdin; it is not \
             run by hand",
            super::WORKER_ARG
        ))
    };
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Err(by_hand());
    }
    let mut text = Vec::new();
    stdin.lock().read_to_end(&mut text).map_err(|e| WorkerError::System(format!("cannot read stdin: {e}")))?;
    if text.iter().all(u8::is_ascii_whitespace) {
        return Err(by_hand());
    }
    let request: Request = serde_json::from_slice(&text)
        .map_err(|e| WorkerError::Usage(format!("the round given on stdin is unreadable ({e})")))?;
    if request.protocol != PROTOCOL {
        return Err(WorkerError::Usage(format!(
            "the round given on stdin is in protocol {}; this build reads {PROTOCOL}",
            request.protocol
        )));
    }
    Ok(request)
}

/// Where reports go: a descriptor of the original stdout, closed on exec; stdout itself then
/// points at /dev/null, so that nothing a benchmark or a program it starts prints can mix
/// with the reports.
fn report_channel() -> Result<std::fs::File, WorkerError> {
    use std::os::fd::AsFd;
    let system = |what: &str, e: &dyn std::fmt::Display| WorkerError::System(format!("{what}: {e}"));
    let stdout = std::io::stdout();
    let fd = stdout.as_fd().try_clone_to_owned().map_err(|e| system("cannot duplicate stdout", &e))?;
    let null = std::fs::OpenOptions::new().write(true).open("/dev/null").map_err(|e| system("/dev/null", &e))?;
    nix::unistd::dup2_stdout(&null).map_err(|e| system("cannot redirect stdout", &e))?;
    Ok(std::fs::File::from(fd))
}

fn serve(layout: Layout) -> Result<(), WorkerError> {
    let request = read_request()?;
    let mut reports = report_channel()?;
    let interrupt = platform::interrupt::install_worker()
        .map_err(|e| WorkerError::System(format!("cannot install the signal handler: {e}")))?;
    // Room to report should memory run short (an error here only means no such room).
    let _ = sys::reserve::arm();
    platform::placement::pin(request.cpu).map_err(|e| WorkerError::System(e.to_string()))?;

    // ---- The timer of this round: built here, and only here. ----
    // The run's clock, frequency and counter step (no 50 ms calibration per worker); the
    // overheads this process subtracts are its own, calibrated below after the warm-up.
    let (timer, timer_info) =
        platform::timer::reuse(&request.timer).unwrap_or_else(|| (platform::timer::detect().0, request.timer.clone()));
    let method = request.visits.first().map_or(Method::Adaptive, |v| v.cfg.method);
    let began = std::time::Instant::now();
    while began.elapsed() < WARMUP {
        std::hint::black_box(timer.start());
    }
    // The overheads this round subtracts: both region shapes, calibrated here, after the
    // warm-up, through the sampler's path (`bench::overhead`); the median under the adaptive
    // method, the mean under the seed method (`Ctx::use_overhead`).
    let overhead = bench::overhead::calibrate_overhead(&timer);
    let first_cfg = request.visits.first().map(|v| v.cfg.clone()).unwrap_or_else(bench::sampler::SamplerConfig::quick);
    let mut ctx = Ctx::new(timer, &timer_info, first_cfg, request.cpu, &request.scratch, &interrupt);
    ctx.use_overhead(overhead, method);
    let record = overhead.record(&timer, request.round, method);
    // ---- end of the timer of this round ----
    let reference = platform::reference::measure();

    let ready = Ready {
        pid: std::process::id(),
        env_pad_bytes: layout.env_pad_bytes,
        heap_offset_bytes: layout.heap_offset_bytes,
        heap_blocks: layout.heap_blocks,
        randomization_off: sys::worker::randomization_off(),
        overhead_ticks: ctx.loop_timer().overhead_ticks(),
        overhead_ns: record.subtracted_loop_ns,
        overhead: Some(record),
        reference: Some(reference),
    };
    send(&mut reports, &Report::Ready(ready))?;
    ctx.allowed_cpus = request.allowed_cpus.clone();
    ctx.cpu_pair = request.cpu_pair;
    ctx.sizes = request.sizes.clone();
    ctx.virtualized = request.virtualized;
    for (i, visit) in request.visits.iter().enumerate() {
        let (signalled, short) = (interrupt.load(Ordering::Relaxed), sys::reserve::short());
        if signalled || short {
            send(&mut reports, &Report::Stopped { memory_short: short && !signalled })?;
            return Ok(());
        }
        send(&mut reports, &Report::Begin { visit: i })?;
        let (outcome, steal_jiffies, elapsed) = match bench::registry::find(&visit.id) {
            Some(bench) => super::measure_visit(&mut ctx, bench, &visit.params, &visit.cfg),
            None => (
                Err(NotMeasured::Failed(format!("this build has no benchmark '{}'", visit.id))),
                0,
                std::time::Duration::ZERO,
            ),
        };
        let report = Report::Outcome {
            visit: i,
            steal_jiffies,
            elapsed_s: elapsed.as_secs_f64(),
            outcome: protocol::to_wire(outcome),
        };
        send(&mut reports, &report)?;
    }
    send(&mut reports, &Report::Reference { end: platform::reference::measure() })
}

/// Writes one report whole; a run that is gone (a closed pipe) ends the worker.
fn send(out: &mut std::fs::File, report: &Report) -> Result<(), WorkerError> {
    out.write_all(&protocol::encode(report)).map_err(|e| WorkerError::System(format!("cannot report to the run: {e}")))
}
