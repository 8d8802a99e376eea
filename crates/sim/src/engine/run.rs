//! The entry points of a run: with the real decision functions or
//! stand-ins, keeping the events or streaming them to a sink, profiled or
//! checked, all through one event loop.

use super::event_log::{EventLog, EventSink};
use super::profile::{self, Component, Profile};
use super::record::RunOutput;
use super::{Deciders, Engine, EngineError, Event, RunInput};
use crate::time::SimTime;

/// Runs one variant to its end with the real decision functions.
/// `progress` is called with the simulated time as it advances (at most
/// once per simulated minute).
pub fn run(input: &RunInput, progress: &mut dyn FnMut(SimTime)) -> Result<RunOutput, EngineError> {
    run_with(input, Deciders::default(), progress)
}

/// Runs one variant with the given decision functions.
pub fn run_with(
    input: &RunInput,
    deciders: Deciders,
    progress: &mut dyn FnMut(SimTime),
) -> Result<RunOutput, EngineError> {
    run_engine(Engine::new(input, deciders), progress).map(|(output, _, _)| output)
}

/// Runs one variant with the real decision functions and measures the wall
/// time of each engine component (see [`Profile`]); the output is the same
/// as [`run`]'s.
pub fn run_profiled(
    input: &RunInput,
    progress: &mut dyn FnMut(SimTime),
) -> Result<(RunOutput, Profile), EngineError> {
    let mut engine = Engine::new(input, Deciders::default());
    engine.record.profile = Some(Profile::default());
    run_engine(engine, progress).map(|(output, _, profile)| (output, profile.unwrap_or_default()))
}

/// Runs one variant with the real decision functions, handing every event
/// to `events` as it happens instead of keeping it: the output's `events`
/// is empty (`summary.events` still counts them), so memory does not grow
/// with the event log. With `profiled`, also measures the components (see
/// [`run_profiled`]). Otherwise the output is the same as [`run`]'s.
pub fn run_to_sink(
    input: &RunInput,
    events: &mut dyn EventSink,
    profiled: bool,
    progress: &mut dyn FnMut(SimTime),
) -> Result<(RunOutput, Option<Profile>), EngineError> {
    let mut engine = Engine::new(input, Deciders::default());
    engine.record.events = EventLog::to_sink(events);
    if profiled {
        engine.record.profile = Some(Profile::default());
    }
    run_engine(engine, progress).map(|(output, _, profile)| (output, profile))
}

/// Runs one variant and checks the engine's invariants after every event
/// and at every eviction (see [`checks`]); returns the output and every
/// violation found (empty when the engine kept its books straight). Slower
/// than [`run_with`]: meant for tests.
pub fn run_checked(
    input: &RunInput,
    deciders: Deciders,
) -> Result<(RunOutput, Vec<String>), EngineError> {
    let mut engine = Engine::new(input, deciders);
    engine.record.violations = Some(Vec::new());
    run_engine(engine, &mut |_| {}).map(|(output, violations, _)| (output, violations))
}

fn run_engine(
    mut engine: Engine<'_>,
    progress: &mut dyn FnMut(SimTime),
) -> Result<(RunOutput, Vec<String>, Option<Profile>), EngineError> {
    let input = engine.input;
    if let Some(initial) = &input.initial {
        engine.load_initial(initial)?;
    }
    if let Some(at) = input.snapshot_at {
        // Scheduled first: the cluster is taken before anything else
        // happens at that instant.
        engine.schedule(at, Event::Export)?;
    }
    engine.schedule_spot_inputs()?;
    for (index, step) in input.steps.iter().enumerate() {
        engine.schedule(step.at, Event::Step(index))?;
    }
    engine.open_sources()?;
    if input.cluster_autoscaler.is_some() {
        engine.wake_ca(SimTime::ZERO)?;
    } else {
        engine.schedule_pass(SimTime::ZERO)?;
    }
    let end = SimTime::ZERO + input.duration;
    while let Some(at) = engine.queue.peek_time() {
        if at > end {
            break;
        }
        let started = profile::start(&engine.record.profile);
        engine.advance_to(at, progress);
        profile::stop(&mut engine.record.profile, Component::Sampling, started);
        let Some((_, event)) = engine.queue.pop() else {
            break;
        };
        let component = engine
            .record
            .profile
            .as_ref()
            .map(|_| Component::of(&event));
        let started = profile::start(&engine.record.profile);
        engine.handle(event)?;
        if let Some(component) = component {
            profile::stop(&mut engine.record.profile, component, started);
        }
        engine.check_invariants();
    }
    engine.advance_to(end, progress);
    engine.sample_at(end);
    let violations = engine.record.violations.take().unwrap_or_default();
    let rows_skipped = engine.owners.sources.rows_skipped();
    let profile = engine.record.profile.take();
    let mut output = engine.finish(end);
    output.summary.trace_rows_skipped = rows_skipped;
    Ok((output, violations, profile))
}
