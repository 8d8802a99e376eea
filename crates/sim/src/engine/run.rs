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
    engine.start()?;
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

impl Engine<'_> {
    /// Loads the initial state and schedules what starts the run.
    pub(super) fn start(&mut self) -> Result<(), EngineError> {
        let input = self.input;
        if let Some(initial) = &input.initial {
            self.load_initial(initial)?;
        }
        if let Some(at) = input.snapshot_at {
            // Scheduled first: the cluster is taken before anything else
            // happens at that instant.
            self.schedule(at, Event::Export)?;
        }
        self.schedule_spot_inputs()?;
        self.start_reservations()?;
        for (index, step) in input.steps.iter().enumerate() {
            self.schedule(step.at, Event::Step(index))?;
        }
        self.open_sources()?;
        if input.cluster_autoscaler.is_some() {
            self.wake_ca(SimTime::ZERO)?;
        } else {
            self.static_reconcile_soon()?;
            self.schedule_pass(SimTime::ZERO)?;
        }
        Ok(())
    }
}

/// Runs `input` up to its `snapshot_at` instant (events before it, and
/// none at it), then returns the cluster exported there and what the
/// engine's own controllers would decide then ([`super::plan`]'s
/// decisions on the live engine, in-memory state included). Tests use it
/// to check that a snapshot holds everything a decision reads.
pub fn plan_during(input: &RunInput) -> Result<ClusterExportAndPlan, EngineError> {
    let mut engine = Engine::new(input, Deciders::default());
    engine.start()?;
    let at = input.snapshot_at.unwrap_or(SimTime::ZERO);
    while let Some(next) = engine.queue.peek_time() {
        if next > at {
            break;
        }
        engine.advance_to(next, &mut |_| {});
        let Some((_, event)) = engine.queue.pop() else {
            break;
        };
        let is_export = matches!(event, Event::Export);
        engine.handle(event)?;
        if is_export {
            break;
        }
    }
    let export = engine
        .record
        .export
        .take()
        .unwrap_or_else(|| engine.export());
    let plan = engine.plan_now()?;
    Ok((export, plan))
}

/// The cluster at an instant and the plan the engine made there.
pub type ClusterExportAndPlan = (super::ClusterExport, super::Plan);
