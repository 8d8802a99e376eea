//! Replica schedules of a generated Deployment: fixed steps, a day curve,
//! or an HPA-like controller tracking a load curve.
//!
//! The HPA model follows the Kubernetes horizontal pod autoscaler
//! (kubernetes: pkg/controller/podautoscaler/horizontal.go, defaults in
//! pkg/apis/autoscaling/v2/defaults.go): every sync period the desired
//! count is `ceil(load / target per replica)` unless the usage ratio is
//! within the 10 % tolerance; scale-downs take the highest recommendation
//! of the last 5 minutes (the default stabilization window); scale-ups are
//! limited per period to the larger of +4 pods and +100 % (the default
//! scale-up policies); the result stays within `[min, max]`.

use std::collections::VecDeque;
use std::sync::Arc;

use super::dist::DiurnalCurve;
use super::{DeploymentGenerator, apply};
use crate::kube::workload::{Workload, WorkloadKind};
use crate::sim::engine::{SourceError, Step, StepAction, StepSource, Target, TargetKind};
use crate::sim::rng::SimRng;
use crate::sim::{SimDuration, SimTime};

/// The HPA's sync period (`--horizontal-pod-autoscaler-sync-period`).
pub const HPA_SYNC_PERIOD: SimDuration = SimDuration::from_secs(15);
/// Usage ratios within this distance of 1 leave the count alone
/// (`--horizontal-pod-autoscaler-tolerance`).
pub const HPA_TOLERANCE: f64 = 0.1;
/// Default scale-down stabilization window.
pub const HPA_SCALE_DOWN_WINDOW: SimDuration = SimDuration::from_mins(5);
/// Default scale-up policy: at most this many pods more per period...
const HPA_SCALE_UP_PODS: u32 = 4;
/// ...or this factor of the current count, whichever allows more.
const HPA_SCALE_UP_FACTOR: u32 = 2;

/// A load over time, in the unit of [`HpaSpec::target_per_replica`].
#[derive(Debug, Clone, PartialEq)]
pub enum LoadCurve {
    /// A day curve.
    Diurnal(DiurnalCurve),
    /// Piecewise constant: `(offset from start, load)` in time order; the
    /// first value also holds before its offset.
    Steps(Vec<(SimDuration, f64)>),
}

impl LoadCurve {
    /// The load `elapsed` after the start.
    pub fn at(&self, elapsed: SimDuration) -> f64 {
        match self {
            LoadCurve::Diurnal(curve) => curve.at(elapsed),
            LoadCurve::Steps(steps) => steps
                .iter()
                .take_while(|(offset, _)| *offset <= elapsed)
                .last()
                .or(steps.first())
                .map_or(0.0, |(_, load)| *load),
        }
    }
}

/// An HPA-like controller.
#[derive(Debug, Clone, PartialEq)]
pub struct HpaSpec {
    /// The load it tracks.
    pub load: LoadCurve,
    /// Load one replica is meant to carry (> 0).
    pub target_per_replica: f64,
    /// Fewest replicas (≥ 1).
    pub min: u32,
    /// Most replicas (≥ `min`).
    pub max: u32,
}

/// How the replica count changes.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplicaSchedule {
    /// `(offset from start, replicas)` in time order; the first entry is
    /// the initial count.
    Steps(Vec<(SimDuration, u32)>),
    /// `round(curve)`, re-evaluated every `every`.
    Diurnal {
        /// The replica curve (trough = min, peak = max).
        curve: DiurnalCurve,
        /// Evaluation interval (> 0).
        every: SimDuration,
    },
    /// An HPA over a load curve, evaluated every [`HPA_SYNC_PERIOD`].
    Hpa(HpaSpec),
}

/// Produces the Deployment's creation, then its scale steps.
pub(super) struct DeploymentSource {
    spec: DeploymentGenerator,
    requests_rng: SimRng,
    start: SimTime,
    end: SimTime,
    /// The replica count in force (`None` before creation).
    current: Option<u32>,
    /// Next evaluation instant (or next step index for `Steps`).
    next_at: SimTime,
    next_index: usize,
    /// HPA recommendations of the stabilization window.
    recommendations: VecDeque<(SimTime, u32)>,
}

impl DeploymentSource {
    pub(super) fn new(
        spec: DeploymentGenerator,
        requests_rng: SimRng,
        start: SimTime,
        end: SimTime,
    ) -> DeploymentSource {
        DeploymentSource {
            spec,
            requests_rng,
            start,
            end,
            current: None,
            next_at: start,
            next_index: 0,
            recommendations: VecDeque::new(),
        }
    }

    fn target(&self) -> Target {
        Target {
            kind: TargetKind::Deployment,
            namespace: self.spec.shape.namespace.clone(),
            name: self.spec.name.clone(),
        }
    }

    /// The count wanted at `at`, given the count in force.
    fn evaluate(&mut self, at: SimTime, current: Option<u32>) -> u32 {
        let elapsed = at.saturating_duration_since(self.start);
        match &self.spec.replicas {
            ReplicaSchedule::Steps(steps) => steps
                .get(self.next_index)
                .map_or(current.unwrap_or(0), |(_, r)| *r),
            ReplicaSchedule::Diurnal { curve, .. } => curve.at(elapsed).round().max(0.0) as u32,
            ReplicaSchedule::Hpa(hpa) => {
                let load = hpa.load.at(elapsed).max(0.0);
                let raw = (load / hpa.target_per_replica).ceil();
                let wanted = raw.clamp(f64::from(hpa.min), f64::from(hpa.max)) as u32;
                let Some(current) = current else {
                    return wanted;
                };
                let ratio = load / (f64::from(current.max(1)) * hpa.target_per_replica);
                let recommendation = if (ratio - 1.0).abs() <= HPA_TOLERANCE {
                    current
                } else {
                    wanted
                };
                self.recommendations.push_back((at, recommendation));
                while self
                    .recommendations
                    .front()
                    .is_some_and(|(t, _)| at.saturating_duration_since(*t) > HPA_SCALE_DOWN_WINDOW)
                {
                    self.recommendations.pop_front();
                }
                if recommendation < current {
                    let stabilized = self
                        .recommendations
                        .iter()
                        .map(|(_, r)| *r)
                        .max()
                        .unwrap_or(recommendation);
                    stabilized.min(current)
                } else {
                    let limit = (current + HPA_SCALE_UP_PODS).max(current * HPA_SCALE_UP_FACTOR);
                    recommendation.min(limit)
                }
            }
        }
    }

    /// Moves to the next evaluation instant; `None` when there is none.
    fn advance(&mut self) -> Option<SimTime> {
        let at = match &self.spec.replicas {
            ReplicaSchedule::Steps(steps) => {
                self.next_index += 1;
                let (offset, _) = steps.get(self.next_index)?;
                self.start + *offset
            }
            ReplicaSchedule::Diurnal { every, .. } => self.next_at + *every,
            ReplicaSchedule::Hpa(_) => self.next_at + HPA_SYNC_PERIOD,
        };
        self.next_at = at;
        Some(at)
    }
}

impl StepSource for DeploymentSource {
    fn next_step(&mut self) -> Result<Option<Step>, SourceError> {
        let Some(current) = self.current else {
            let replicas = self.evaluate(self.start, None);
            self.current = Some(replicas);
            let workload = Workload {
                name: self.spec.name.clone(),
                namespace: self.spec.shape.namespace.clone(),
                kind: WorkloadKind::Deployment { replicas },
                template: Arc::new(self.spec.shape.draw(&mut self.requests_rng, None)),
            };
            return Ok(Some(apply(self.start, workload)));
        };
        // Evaluate until the count changes or the generator ends; every
        // iteration moves time forward, so this stops at `end`.
        while let Some(at) = self.advance() {
            if at >= self.end {
                return Ok(None);
            }
            let wanted = self.evaluate(at, Some(current));
            if wanted != current {
                self.current = Some(wanted);
                return Ok(Some(Step {
                    at,
                    action: StepAction::Scale {
                        target: self.target(),
                        replicas: wanted,
                    },
                }));
            }
        }
        Ok(None)
    }
}
