//! `domain.process`: the null call of `domain.fcall` made to another process instead, over
//! the fastest transport between two processes on one CPU, chosen on this machine at run
//! time. It sits beside the protection-key domain rows as the answer to "what would the
//! same call cost if the component were a process?" (Go!'s components against the
//! process-based systems of its OS comparison).
//!
//! **Choosing.** The first round runs a short pilot of every transport that works on one CPU
//! (all but `spin`): a round trip of an empty message to a peer process, through the IPC
//! engine ([`super::pingpong`]), a few tens of milliseconds each. The transport with the lowest
//! median is kept for the rest of the run (every round measures the same mechanism), recorded
//! as the `transport` parameter, and the pilot's medians are kept in `observed`.
//!
//! **Timing model.** The engine's round trip, not halved: the caller writes a numbered empty
//! message, the peer (the "method", which does nothing but answer) reads it and writes it
//! back, the caller reads the answer. **Validation:** the engine's checks (every message came
//! back once, in order; each end on its CPU).
use super::ipc::{self, Setup};
use super::peer::PeerKind;
use super::pingpong::{self, Placement, Timing};
use super::transport::Transport;
use super::{Benchmark, Ctx, Measured, NotMeasured, Params};
use crate::sampler::SamplerConfig;
use std::sync::Mutex;

/// Sampling time of each transport in the pilot, seconds.
const PILOT_BUDGET_S: f64 = 0.02;

/// The pilot's outcome: the transport chosen for these CPUs and every median it saw.
#[derive(Clone)]
struct Choice {
    cpus: (usize, usize),
    transport: Transport,
    medians_ns: Vec<(Transport, f64)>,
    unusable: Vec<(Transport, String)>,
}

/// The choice made in the first round, reused by the later ones.
static CHOSEN: Mutex<Option<Choice>> = Mutex::new(None);

/// `domain.process`.
pub struct ProcessCall;

/// Parameters of a round trip between processes on the measuring CPU.
fn params_for(t: Transport) -> Params {
    let mut p = Params::new();
    p.insert("peer".into(), PeerKind::Process.name().into());
    p.insert("placement".into(), Placement::SameCpu.name().into());
    if t.carries_payload() {
        p.insert(model::SIZE_PARAM.into(), serde_json::json!(0));
    }
    p
}

/// The pilot: a short round-trip measurement of every candidate; the fastest median wins.
fn pilot(ctx: &mut Ctx) -> Result<Choice, NotMeasured> {
    let quick = SamplerConfig {
        budget_s: PILOT_BUDGET_S,
        warmup_s: PILOT_BUDGET_S / 4.0,
        rounds: 1,
        batch: None,
        tail_samples: 0,
        spread_between_rounds_rel: 0.0,
        ..ctx.cfg().clone()
    };
    let mut medians_ns = Vec::new();
    let mut unusable = Vec::new();
    ctx.pilot(quick, |ctx| {
        for t in Transport::ALL.into_iter().filter(|t| !t.needs_two_cpus()) {
            if ctx.interrupted() {
                break;
            }
            let outcome = Setup::read(t, ctx, &params_for(t))
                .and_then(|s| pingpong::run(ctx, &s.plan(Timing::RoundTrip { ops_per_round_trip: 1 })));
            match outcome {
                Ok(r) if r.peer_messages == r.round_trips && r.round_trips > 0 => {
                    medians_ns.push((t, super::quick_median(&r.samples)));
                }
                Ok(_) => unusable.push((t, "messages lost or unanswered in the pilot".to_string())),
                Err(NotMeasured::Skipped(why) | NotMeasured::Failed(why)) => unusable.push((t, why)),
            }
        }
    });
    let best = medians_ns.iter().filter(|(_, m)| m.is_finite()).min_by(|a, b| a.1.total_cmp(&b.1));
    let Some(&(transport, _)) = best else {
        return Err(NotMeasured::Failed("no transport between two processes worked in the pilot".into()));
    };
    Ok(Choice { cpus: (ctx.cpu, ctx.cpu), transport, medians_ns, unusable })
}

/// The choice for this CPU: the first round's, or a new pilot.
fn choice(ctx: &mut Ctx) -> Result<Choice, NotMeasured> {
    let cached = CHOSEN.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match cached {
        Some(c) if c.cpus == (ctx.cpu, ctx.cpu) => Ok(c),
        _ => {
            let c = pilot(ctx)?;
            *CHOSEN.lock().unwrap_or_else(|e| e.into_inner()) = Some(c.clone());
            Ok(c)
        }
    }
}

impl Benchmark for ProcessCall {
    fn id(&self) -> &'static str {
        "domain.process"
    }
    fn about(&self) -> &'static str {
        "the same null call made to another process on the same CPU, over the fastest transport here (chosen at run time), round trip"
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let choice = choice(ctx)?;
        let t = choice.transport;
        let setup = Setup::read(t, ctx, &params_for(t))?;
        let plan = setup.plan(Timing::RoundTrip { ops_per_round_trip: 1 });
        let report = pingpong::run(ctx, &plan)?;
        let mut m = ipc::measured(&plan, report, ctx);
        m.params.insert("transport".into(), t.name().into());
        let pilot: serde_json::Map<String, serde_json::Value> = choice
            .medians_ns
            .iter()
            .map(|(t, ns)| (t.name().to_string(), serde_json::json!((ns * 10.0).round() / 10.0)))
            .collect();
        m.observed.insert("pilot_median_ns".into(), serde_json::Value::Object(pilot));
        m.notes.push(format!(
            "{} ({}): the fastest of {} transports between two processes on this CPU in a {:.0} ms pilot each; the same as {} between processes on one CPU, whole round trip",
            t.name(),
            t.what(),
            choice.medians_ns.len(),
            PILOT_BUDGET_S * 1e3,
            t.rpc_id()
        ));
        for (t, why) in &choice.unusable {
            m.notes.push(format!("{} left out of the pilot: {why}", t.name()));
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing;

    #[test]
    fn chooses_the_fastest_piloted_transport_and_names_it() {
        let _g = testing::serial();
        testing::with_ctx(0.05, |ctx| {
            let m = ProcessCall.run(ctx, &Params::new()).expect("a round trip between processes");
            let chosen = m.params["transport"].as_str().unwrap().to_string();
            let pilot = m.observed["pilot_median_ns"].as_object().unwrap();
            assert!(pilot.len() >= 3, "{pilot:?}");
            let fastest = pilot.iter().min_by(|a, b| a.1.as_f64().unwrap().total_cmp(&b.1.as_f64().unwrap())).unwrap();
            assert_eq!(fastest.0, &chosen);
            assert!(m.checks.iter().all(|c| c.ok == Some(true)), "{:?}", m.checks);
            // A second round reuses the choice.
            let again = ProcessCall.run(ctx, &Params::new()).unwrap();
            assert_eq!(again.params["transport"], m.params["transport"]);
        });
    }
}
