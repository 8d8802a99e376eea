//! Workload generators: synthetic workloads described by distributions
//! instead of a trace, producing engine steps lazily (see
//! [`StepSource`]).
//!
//! Three kinds, each read from a `generate:` workload item
//! (schema in `scenarios/README.md`):
//! - [`PodsGenerator`]: bare pods (or one Job per arrival) arriving by a
//!   Poisson, diurnal or burst process, each with a drawn run time and
//!   drawn requests;
//! - [`DeploymentGenerator`]: one Deployment whose replica count follows
//!   steps, a day curve or an HPA-like controller over a load curve;
//! - [`CronJobGenerator`]: a Job at every firing of a cron schedule.
//!
//! Randomness: every generator draws from its own streams named
//! `workload/<generator name>/<purpose>` (arrivals, durations, requests),
//! so adding a generator, or changing one's duration distribution, never
//! moves another's arrivals.

pub mod dist;
mod replicas;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::karpenter::disruption::budgets::{SIM_EPOCH_UNIX_SECONDS, unix_millis};
use crate::karpenter::disruption::cron::Schedule;
use crate::kube::pod::PodSpec;
use crate::kube::resources::{ResourceKind, Resources};
use crate::kube::taints::Toleration;
use crate::kube::workload::{JobSpec, Workload, WorkloadKind};
use crate::sim::engine::{SourceError, SourceFactory, Step, StepAction, StepSource};
use crate::sim::rng::{RngStreams, SimRng, Stream};
use crate::sim::{SimDuration, SimTime};

pub use dist::{AmountDist, Arrivals, DiurnalCurve, DurationDist, Rate};
pub use replicas::{
    HPA_SCALE_DOWN_WINDOW, HPA_SYNC_PERIOD, HPA_TOLERANCE, HpaSpec, LoadCurve, ReplicaSchedule,
};

/// What the generated pods look like; requests are drawn per pod (per
/// Deployment for [`DeploymentGenerator`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PodShape {
    /// Namespace of the generated objects.
    pub namespace: String,
    /// Requests by resource.
    pub requests: Vec<(ResourceKind, AmountDist)>,
    /// Labels of every pod.
    pub labels: BTreeMap<String, String>,
    /// `nodeSelector` of every pod.
    pub node_selector: BTreeMap<String, String>,
    /// Tolerations of every pod.
    pub tolerations: Vec<Toleration>,
}

impl PodShape {
    /// A pod spec with requests drawn from `rng` and the given run time.
    fn draw(&self, rng: &mut SimRng, run: Option<SimDuration>) -> PodSpec {
        let mut requests = Resources::ZERO.with(ResourceKind::Pods, 1);
        for (kind, amount) in &self.requests {
            requests.set(*kind, amount.sample(rng).max(0));
        }
        PodSpec {
            namespace: self.namespace.clone(),
            labels: self.labels.clone(),
            requests,
            run_duration: run.map(|d| std::time::Duration::from_millis(d.as_millis())),
            node_selector: self.node_selector.clone(),
            tolerations: self.tolerations.clone(),
            ..PodSpec::default()
        }
    }
}

/// Pods per Job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobShape {
    /// `spec.parallelism`.
    pub parallelism: u32,
    /// `spec.completions`.
    pub completions: u32,
}

/// Bare pods, or Jobs, arriving at random.
#[derive(Debug, Clone, PartialEq)]
pub struct PodsGenerator {
    /// Prefix of object names (`<name>-<n>`) and of random streams.
    pub name: String,
    /// The pods.
    pub shape: PodShape,
    /// When they arrive.
    pub arrivals: Arrivals,
    /// How long each runs; `None` = until the end.
    pub duration: Option<DurationDist>,
    /// Create a Job of this shape per arrival instead of a bare pod.
    pub job: Option<JobShape>,
}

/// One Deployment whose replicas follow a schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct DeploymentGenerator {
    /// Deployment name (and stream prefix).
    pub name: String,
    /// Its pod template (requests drawn once).
    pub shape: PodShape,
    /// Its replica count over time.
    pub replicas: ReplicaSchedule,
}

/// A Job at every firing of a cron schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct CronJobGenerator {
    /// CronJob name: Jobs are `<name>-<scheduled minute since the epoch>`,
    /// as the CronJob controller names them.
    pub name: String,
    /// The schedule (UTC; time 0 of the run is
    /// [`SIM_EPOCH_UNIX_SECONDS`]).
    pub schedule: Schedule,
    /// The Jobs' pods.
    pub shape: PodShape,
    /// Pods per Job.
    pub job: JobShape,
    /// Run time of the pods, drawn once per Job.
    pub duration: Option<DurationDist>,
}

/// A generator of any kind.
#[derive(Debug, Clone, PartialEq)]
pub enum GeneratorSpec {
    /// Random arrivals.
    Pods(PodsGenerator),
    /// A scaled Deployment.
    Deployment(DeploymentGenerator),
    /// A CronJob.
    CronJob(CronJobGenerator),
}

impl GeneratorSpec {
    /// The generator's name.
    pub fn name(&self) -> &str {
        match self {
            GeneratorSpec::Pods(g) => &g.name,
            GeneratorSpec::Deployment(g) => &g.name,
            GeneratorSpec::CronJob(g) => &g.name,
        }
    }
}

/// A generator placed on the run's clock: it starts at `start` and stops
/// producing at `end` (exclusive).
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratorFactory {
    /// What to generate.
    pub spec: GeneratorSpec,
    /// First instant.
    pub start: SimTime,
    /// No step at or after this instant.
    pub end: SimTime,
}

/// The random streams of one generator.
struct Streams {
    arrivals: SimRng,
    durations: SimRng,
    requests: SimRng,
}

impl Streams {
    fn new(seed: u64, name: &str) -> Streams {
        let streams = RngStreams::new(seed);
        let prefix = format!("{}/{name}", Stream::Workload.name());
        Streams {
            arrivals: streams.named(&format!("{prefix}/arrivals")),
            durations: streams.named(&format!("{prefix}/durations")),
            requests: streams.named(&format!("{prefix}/requests")),
        }
    }
}

impl SourceFactory for GeneratorFactory {
    fn open(&self, seed: u64) -> Result<Box<dyn StepSource>, SourceError> {
        let streams = Streams::new(seed, self.spec.name());
        Ok(match &self.spec {
            GeneratorSpec::Pods(spec) => Box::new(PodsSource {
                clock: dist::ArrivalClock::new(spec.arrivals.clone(), self.start),
                spec: spec.clone(),
                streams,
                end: self.end,
                count: 0,
            }),
            GeneratorSpec::Deployment(spec) => Box::new(replicas::DeploymentSource::new(
                spec.clone(),
                streams.requests,
                self.start,
                self.end,
            )),
            GeneratorSpec::CronJob(spec) => Box::new(CronSource {
                spec: spec.clone(),
                streams,
                after: self.start,
                first: true,
                end: self.end,
            }),
        })
    }
}

struct PodsSource {
    spec: PodsGenerator,
    clock: dist::ArrivalClock,
    streams: Streams,
    end: SimTime,
    count: u64,
}

impl StepSource for PodsSource {
    fn next_step(&mut self) -> Result<Option<Step>, SourceError> {
        let Some(at) = self.clock.next(&mut self.streams.arrivals) else {
            return Ok(None);
        };
        if at >= self.end {
            return Ok(None);
        }
        self.count += 1;
        let run = self
            .spec
            .duration
            .map(|d| d.sample(&mut self.streams.durations));
        let name = format!("{}-{}", self.spec.name, self.count);
        let workload = match self.spec.job {
            None => Workload {
                name,
                namespace: self.spec.shape.namespace.clone(),
                kind: WorkloadKind::Pod,
                template: Arc::new(self.spec.shape.draw(&mut self.streams.requests, run)),
            },
            Some(job) => job_workload(name, &self.spec.shape, job, run, &mut self.streams),
        };
        Ok(Some(apply(at, workload)))
    }
}

/// A Job whose pods each run `run`.
fn job_workload(
    name: String,
    shape: &PodShape,
    job: JobShape,
    run: Option<SimDuration>,
    streams: &mut Streams,
) -> Workload {
    Workload {
        name,
        namespace: shape.namespace.clone(),
        kind: WorkloadKind::Job(JobSpec {
            parallelism: job.parallelism,
            completions: Some(job.completions),
            active_deadline: None,
            duration: run.map(|d| std::time::Duration::from_millis(d.as_millis())),
        }),
        template: Arc::new(shape.draw(&mut streams.requests, None)),
    }
}

fn apply(at: SimTime, workload: Workload) -> Step {
    Step {
        at,
        action: StepAction::Apply {
            workloads: vec![workload],
            pdbs: Vec::new(),
        },
    }
}

struct CronSource {
    spec: CronJobGenerator,
    streams: Streams,
    /// Fire strictly after this instant (at it, for the first firing).
    after: SimTime,
    first: bool,
    end: SimTime,
}

impl StepSource for CronSource {
    fn next_step(&mut self) -> Result<Option<Step>, SourceError> {
        // A firing exactly at the generator's start counts.
        let after_ms = unix_millis(self.after) - i64::from(self.first);
        self.first = false;
        let Some(fire_ms) = self.spec.schedule.next_after(after_ms) else {
            return Ok(None);
        };
        let since_start = fire_ms - SIM_EPOCH_UNIX_SECONDS * 1000;
        let Ok(since_start) = u64::try_from(since_start) else {
            return Ok(None);
        };
        let at = SimTime::from_millis(since_start);
        if at >= self.end {
            return Ok(None);
        }
        self.after = at;
        let run = self
            .spec
            .duration
            .map(|d| d.sample(&mut self.streams.durations));
        let name = format!("{}-{}", self.spec.name, fire_ms.div_euclid(60_000));
        let workload = job_workload(
            name,
            &self.spec.shape,
            self.spec.job,
            run,
            &mut self.streams,
        );
        Ok(Some(apply(at, workload)))
    }
}
