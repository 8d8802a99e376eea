//! Workload steps produced while the run goes, instead of listed up front:
//! generators (arrival processes, replica schedules, cron schedules) and
//! trace importers that stream a file row by row.
//!
//! A [`StepSource`] hands out [`Step`]s in time order, one at a time. The
//! engine keeps exactly one pending step per source in its event queue and
//! pulls the next when the clock reaches it, so a source never has to hold
//! more than it needs to produce the next step: a 1 GB trace streams
//! through with constant memory. Steps of sources and of the scenario's
//! fixed list that fall on the same millisecond apply in the order they were
//! queued (fixed steps first, then sources in scenario order, then whatever
//! each pull queues), which keeps runs deterministic.
//!
//! Every variant of a scenario opens its own copy of each source through a
//! [`SourceFactory`], so all variants see the same steps.

use std::fmt;
use std::sync::Arc;

use super::{Engine, EngineError, Event, Step};

/// A producer of workload steps in time order.
pub trait StepSource {
    /// The next step, or `None` when the source is exhausted. Steps must
    /// come in non-decreasing time order; a step earlier than the one
    /// before it is applied at the current instant.
    fn next_step(&mut self) -> Result<Option<Step>, SourceError>;

    /// Input rows skipped so far as unusable (trace importers with
    /// skipping enabled); 0 for generators.
    fn rows_skipped(&self) -> u64 {
        0
    }
}

/// Opens a fresh [`StepSource`] for one run.
pub trait SourceFactory: fmt::Debug + Send + Sync {
    /// A new source positioned before its first step; `seed` is the
    /// scenario seed, from which the source derives its random streams.
    fn open(&self, seed: u64) -> Result<Box<dyn StepSource>, SourceError>;
}

/// A shareable [`SourceFactory`], as held by a
/// [`RunInput`](super::RunInput).
pub type SharedSource = Arc<dyn SourceFactory>;

/// Why a source could not produce its next step: a message that already
/// names the file, row and column at fault where there is one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SourceError(pub String);

/// The engine's open sources and the step each has ready.
#[derive(Default)]
pub(super) struct OpenSources {
    sources: Vec<Box<dyn StepSource>>,
    ready: Vec<Option<Step>>,
}

impl OpenSources {
    /// Rows skipped by every source so far.
    pub(super) fn rows_skipped(&self) -> u64 {
        self.sources.iter().map(|s| s.rows_skipped()).sum()
    }
}

impl Engine<'_> {
    fn source_error(&self, error: SourceError) -> EngineError {
        EngineError::Source {
            variant: self.input.variant.clone(),
            message: error.0,
        }
    }

    /// Opens every source of the run and queues its first step.
    pub(super) fn open_sources(&mut self) -> Result<(), EngineError> {
        for factory in &self.input.sources {
            let source = factory
                .open(self.input.seed)
                .map_err(|e| self.source_error(e))?;
            self.owners.sources.sources.push(source);
            self.owners.sources.ready.push(None);
        }
        for index in 0..self.owners.sources.sources.len() {
            self.pull(index)?;
        }
        Ok(())
    }

    /// Reads source `index`'s next step and queues it.
    fn pull(&mut self, index: usize) -> Result<(), EngineError> {
        let next = self.owners.sources.sources[index]
            .next_step()
            .map_err(|e| self.source_error(e))?;
        if let Some(step) = next {
            let at = step.at.max(self.now());
            self.owners.sources.ready[index] = Some(step);
            self.schedule(at, Event::SourceStep(index))?;
        }
        Ok(())
    }

    /// Applies source `index`'s ready step, then queues its next one.
    pub(super) fn apply_source_step(&mut self, index: usize) -> Result<(), EngineError> {
        if let Some(step) = self.owners.sources.ready[index].take() {
            self.apply_action(&step.action)?;
        }
        self.pull(index)
    }
}

/// A source that replays a fixed list (tests, and small generated lists).
#[derive(Debug, Clone, Default)]
pub struct ListSource {
    steps: std::collections::VecDeque<Step>,
}

impl ListSource {
    /// A source handing out `steps` (sorted by time, stable).
    pub fn new(mut steps: Vec<Step>) -> ListSource {
        steps.sort_by_key(|s| s.at);
        ListSource {
            steps: steps.into(),
        }
    }
}

impl StepSource for ListSource {
    fn next_step(&mut self) -> Result<Option<Step>, SourceError> {
        Ok(self.steps.pop_front())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::tests::{deployment, input, simulate};
    use super::*;
    use crate::SimDuration;
    use crate::engine::StepAction;
    use crate::time::SimTime;
    use karpsim_input::nodepools::load_str;

    /// Replays a fixed list of steps, failing after them when asked.
    #[derive(Debug)]
    struct Fixed {
        steps: Vec<Step>,
        fail_after: bool,
    }

    struct FixedSource {
        steps: std::collections::VecDeque<Step>,
        fail_after: bool,
        pulled: u64,
    }

    impl StepSource for FixedSource {
        fn next_step(&mut self) -> Result<Option<Step>, SourceError> {
            self.pulled += 1;
            match self.steps.pop_front() {
                Some(step) => Ok(Some(step)),
                None if self.fail_after => {
                    Err(SourceError("trace.csv:9: row 8, column kind: bad".into()))
                }
                None => Ok(None),
            }
        }

        fn rows_skipped(&self) -> u64 {
            self.pulled
        }
    }

    impl SourceFactory for Fixed {
        fn open(&self, _seed: u64) -> Result<Box<dyn StepSource>, SourceError> {
            Ok(Box::new(FixedSource {
                steps: self.steps.clone().into(),
                fail_after: self.fail_after,
                pulled: 0,
            }))
        }
    }

    fn apply_at(minutes: u64, manifests: &str) -> Step {
        let loaded = load_str("m.yaml", manifests).unwrap();
        Step {
            at: SimTime::ZERO + SimDuration::from_mins(minutes),
            action: StepAction::Apply {
                workloads: loaded.core.workloads,
                pdbs: loaded.core.pdbs,
            },
        }
    }

    /// Source steps are applied when the clock reaches them, merged with the
    /// listed steps; the skipped-row count reaches the summary.
    #[test]
    fn source_steps_are_applied_at_their_times() {
        let mut run = input(&deployment("web", 1, "500m"), SimDuration::from_hours(1));
        run.sources.push(Arc::new(Fixed {
            steps: vec![
                apply_at(10, &deployment("api", 2, "500m")),
                apply_at(20, &deployment("batch", 3, "500m")),
            ],
            fail_after: false,
        }));
        let out = simulate(&run);
        assert_eq!(out.summary.pods_created, 6);
        let created: Vec<SimTime> = out
            .events
            .iter()
            .filter(|e| e.object.starts_with("pod/default/batch"))
            .map(|e| e.time)
            .collect();
        assert!(
            created
                .iter()
                .all(|t| *t >= SimTime::ZERO + SimDuration::from_mins(20))
        );
        // Three pulls: two steps and the end.
        assert_eq!(out.summary.trace_rows_skipped, 3);
    }

    /// A source that fails mid-run stops the run with its message.
    #[test]
    fn source_errors_stop_the_run() {
        let mut run = input(&deployment("web", 1, "500m"), SimDuration::from_hours(1));
        run.sources.push(Arc::new(Fixed {
            steps: vec![apply_at(10, &deployment("api", 2, "500m"))],
            fail_after: true,
        }));
        let err =
            super::super::run_with(&run, super::super::tests::STAND_INS, &mut |_| {}).unwrap_err();
        assert_eq!(
            err.to_string(),
            "variant test: trace.csv:9: row 8, column kind: bad"
        );
    }
}
