//! Reads `generate:` workload items (schema in `scenarios/README.md`) into
//! [`GeneratorSpec`]s, with the same `file:line:column: field:` errors as
//! the rest of the scenario.

use std::collections::BTreeMap;

use super::super::DEFAULT_NAMESPACE;
use super::super::error::{Problem, ScenarioError};
use super::super::generate::{
    AmountDist, Arrivals, CronJobGenerator, DeploymentGenerator, DiurnalCurve, DurationDist,
    GeneratorSpec, HpaSpec, JobShape, LoadCurve, PodShape, PodsGenerator, Rate, ReplicaSchedule,
};
use super::super::limits::{MAX_PODS, MAX_RATE_PER_SECOND, MIN_PERIOD};
use super::super::names::{check_dns_label, check_dns_subdomain};
use super::super::yaml::{Node, Value};
use super::{Keys, Mapping, Reader, index};
use crate::karpenter::disruption::budgets::unix_millis;
use crate::karpenter::disruption::cron::{CronError, Schedule};
use crate::kube::quantity::Quantity;
use crate::kube::resources::ResourceKind;
use crate::kube::taints::{TaintEffect, Toleration};
use crate::sim::{SimDuration, SimTime};

pub use crate::scenario::error::WorkloadProblem;

const GENERATE_KINDS: &[&str] = &["pods", "deployment", "cronJob"];
const GENERATE_KEYS: Keys = Keys {
    valid: &["pods", "deployment", "cronJob"],
    reserved: &[],
};
const PODS_KEYS: Keys = Keys {
    valid: &[
        "name",
        "namespace",
        "until",
        "requests",
        "labels",
        "nodeSelector",
        "tolerations",
        "arrivals",
        "duration",
        "job",
    ],
    reserved: &[],
};
const DEPLOYMENT_KEYS: Keys = Keys {
    valid: &[
        "name",
        "namespace",
        "until",
        "requests",
        "labels",
        "nodeSelector",
        "tolerations",
        "replicas",
    ],
    reserved: &[],
};
const CRON_KEYS: Keys = Keys {
    valid: &[
        "name",
        "namespace",
        "until",
        "requests",
        "labels",
        "nodeSelector",
        "tolerations",
        "schedule",
        "duration",
        "parallelism",
        "completions",
    ],
    reserved: &[],
};
const ARRIVAL_KINDS: &[&str] = &["poisson", "diurnal", "bursts"];
const ARRIVAL_KEYS: Keys = Keys {
    valid: &["poisson", "diurnal", "bursts"],
    reserved: &[],
};
const POISSON_KEYS: Keys = Keys {
    valid: &["rate"],
    reserved: &[],
};
const DIURNAL_KEYS: Keys = Keys {
    valid: &["period", "peak", "trough", "peakAt"],
    reserved: &[],
};
const REPLICA_DIURNAL_KEYS: Keys = Keys {
    valid: &["period", "min", "max", "peakAt", "every"],
    reserved: &[],
};
const BURST_KEYS: Keys = Keys {
    valid: &["every", "size", "spread"],
    reserved: &[],
};
const DURATION_KINDS: &[&str] = &["fixed", "exponential", "lognormal"];
const DURATION_KEYS: Keys = Keys {
    valid: &["fixed", "exponential", "lognormal"],
    reserved: &[],
};
const MEAN_KEYS: Keys = Keys {
    valid: &["mean"],
    reserved: &[],
};
const LOGNORMAL_KEYS: Keys = Keys {
    valid: &["median", "p90"],
    reserved: &[],
};
const JOB_KEYS: Keys = Keys {
    valid: &["parallelism", "completions"],
    reserved: &[],
};
const REPLICA_KINDS: &[&str] = &["steps", "diurnal", "hpa"];
const REPLICA_KEYS: Keys = Keys {
    valid: &["steps", "diurnal", "hpa"],
    reserved: &[],
};
const STEP_KEYS: Keys = Keys {
    valid: &["at", "replicas"],
    reserved: &[],
};
const LOAD_STEP_KEYS: Keys = Keys {
    valid: &["at", "load"],
    reserved: &[],
};
const HPA_KEYS: Keys = Keys {
    valid: &["load", "targetPerReplica", "min", "max"],
    reserved: &[],
};
const LOAD_KINDS: &[&str] = &["diurnal", "steps"];
const LOAD_KEYS: Keys = Keys {
    valid: &["diurnal", "steps"],
    reserved: &[],
};
const UNIFORM_KEYS: Keys = Keys {
    valid: &["uniform"],
    reserved: &[],
};

impl Reader<'_> {
    fn workload_problem(
        &self,
        node: &Node,
        field: &str,
        problem: WorkloadProblem,
    ) -> ScenarioError {
        self.invalid(node.position, field, Problem::Workload(problem))
    }

    /// A `generate` item starting at `at`; `end` is the run's end; `names`
    /// the generator names used so far.
    pub(super) fn generator(
        &self,
        node: &Node,
        field: &str,
        at: SimTime,
        end: SimTime,
        names: &mut Vec<String>,
    ) -> Result<(GeneratorSpec, SimTime), ScenarioError> {
        let map = self.mapping(node, field, &GENERATE_KEYS)?;
        let (kind, value) = self.exactly_one(&map, GENERATE_KINDS)?;
        let field = map.field(kind);
        let keys = match kind {
            "pods" => &PODS_KEYS,
            "deployment" => &DEPLOYMENT_KEYS,
            _ => &CRON_KEYS,
        };
        let body = self.mapping(value, &field, keys)?;
        let name_node = self.required(&body, "name")?;
        let name = self
            .name(name_node, &body.field("name"), check_dns_subdomain)?
            .to_string();
        if names.contains(&name) {
            return Err(self.workload_problem(
                name_node,
                &body.field("name"),
                WorkloadProblem::DuplicateName(name),
            ));
        }
        names.push(name.clone());
        let until = match body.get("until") {
            Some(node) => {
                let until = SimTime::ZERO + self.duration(node, &body.field("until"))?;
                if until <= at || until > end {
                    let problem = WorkloadProblem::Until {
                        until: self.written(node),
                    };
                    return Err(self.workload_problem(node, &body.field("until"), problem));
                }
                until
            }
            None => end,
        };
        let shape = self.shape(&body)?;
        let spec = match kind {
            "pods" => GeneratorSpec::Pods(PodsGenerator {
                name,
                shape,
                arrivals: self
                    .arrivals(self.required(&body, "arrivals")?, &body.field("arrivals"))?,
                duration: self.optional_duration_dist(&body)?,
                job: match body.get("job") {
                    Some(node) => {
                        let job = self.mapping(node, &body.field("job"), &JOB_KEYS)?;
                        Some(self.job_shape(&job)?)
                    }
                    None => None,
                },
            }),
            "deployment" => GeneratorSpec::Deployment(DeploymentGenerator {
                name,
                shape,
                replicas: self
                    .replicas(self.required(&body, "replicas")?, &body.field("replicas"))?,
            }),
            _ => {
                let schedule_node = self.required(&body, "schedule")?;
                let text = self.string(schedule_node, &body.field("schedule"))?;
                self.every_interval(schedule_node, &body.field("schedule"), text)?;
                let schedule = Schedule::parse(text).map_err(|e| {
                    self.workload_problem(schedule_node, &body.field("schedule"), e.into())
                })?;
                GeneratorSpec::CronJob(CronJobGenerator {
                    name,
                    schedule,
                    shape,
                    job: self.job_shape(&body)?,
                    duration: self.optional_duration_dist(&body)?,
                })
            }
        };
        self.expected_pods_within_limit(value, &field, &spec, at, until)?;
        Ok((spec, until))
    }

    /// Refuses a generator whose pods alone, on average, pass the pods one
    /// run creates (a run past it would stop with an error part way).
    fn expected_pods_within_limit(
        &self,
        node: &Node,
        field: &str,
        spec: &GeneratorSpec,
        at: SimTime,
        until: SimTime,
    ) -> Result<(), ScenarioError> {
        let window = until.saturating_duration_since(at);
        let hours = window.as_millis() as f64 / 3_600_000.0;
        let pods = match spec {
            GeneratorSpec::Pods(pods) => {
                let per_arrival = pods.job.map_or(1.0, |job| f64::from(job.completions));
                let arrivals = match &pods.arrivals {
                    Arrivals::Poisson(rate) => rate.per_hour * hours,
                    Arrivals::Diurnal(curve) => curve.mean() * hours,
                    Arrivals::Bursts { every, size, .. } => {
                        let bursts = window.as_millis().div_ceil(every.as_millis().max(1));
                        bursts as f64 * f64::from(*size)
                    }
                };
                arrivals * per_arrival
            }
            GeneratorSpec::CronJob(cron) => {
                let per_job = f64::from(cron.job.completions.max(1));
                let jobs = match cron.schedule {
                    Schedule::Every { period_ms } => {
                        window.as_millis().div_ceil(period_ms.max(1).unsigned_abs())
                    }
                    // At most one firing a minute, so at most 527 040
                    // steps for the longest run.
                    Schedule::Fields { .. } => {
                        let (mut after, end) = (unix_millis(at) - 1, unix_millis(until));
                        let mut jobs = 0u64;
                        while let Some(fire) = cron.schedule.next_after(after).filter(|f| *f < end)
                        {
                            jobs += 1;
                            after = fire;
                        }
                        jobs
                    }
                };
                jobs as f64 * per_job
            }
            GeneratorSpec::Deployment(_) => return Ok(()),
        };
        if pods > MAX_PODS as f64 {
            let problem = Problem::OverLimit {
                found: format!("about {} pods from this generator", pods.round()),
                limit: format!("{MAX_PODS} pods per run"),
            };
            return Err(self.invalid(node.position, field, problem));
        }
        Ok(())
    }

    /// A repeating period of at least [`MIN_PERIOD`] in whole seconds.
    fn at_least_a_second(
        &self,
        node: &Node,
        field: &str,
        period: SimDuration,
    ) -> Result<(), ScenarioError> {
        if period < MIN_PERIOD {
            let problem = WorkloadProblem::Range {
                what: "must be at least 1s",
                text: self.written(node),
            };
            return Err(self.workload_problem(node, field, problem));
        }
        Ok(())
    }

    /// An `@every <interval>` schedule needs a positive interval of whole
    /// seconds: robfig/cron, which CronJobs use, would silently run a
    /// shorter one (`@every 0s`, `@every 500ms`) every second and round
    /// `@every 1500ms` down.
    fn every_interval(&self, node: &Node, field: &str, text: &str) -> Result<(), ScenarioError> {
        let Some(interval) = text.strip_prefix("@every ") else {
            return Ok(());
        };
        let interval = interval.trim();
        let bad = |reason: String| {
            self.workload_problem(
                node,
                field,
                WorkloadProblem::Cron(CronError::Field(format!("@every {interval}: {reason}"))),
            )
        };
        if interval.starts_with('-') {
            return Err(bad("the interval must be positive".to_string()));
        }
        match crate::sim::parse_duration(interval) {
            Ok(period) if period < MIN_PERIOD => {
                Err(bad("the interval must be at least 1s".to_string()))
            }
            Ok(period) if period.as_millis() % 1000 != 0 => Err(bad(
                "the interval must be a whole number of seconds (cron fires on seconds)"
                    .to_string(),
            )),
            Ok(_) => Ok(()),
            Err(err) => Err(bad(err.reason)),
        }
    }

    fn count(
        &self,
        map: &Mapping<'_>,
        key: &'static str,
        default: u32,
        min: u64,
    ) -> Result<u32, ScenarioError> {
        let Some(node) = map.get(key) else {
            return Ok(default);
        };
        let value = u64::from(self.replica_count(node, &map.field(key))?);
        if value < min {
            let problem = WorkloadProblem::Range {
                what: "must be at least 1",
                text: self.raw(node),
            };
            return Err(self.workload_problem(node, &map.field(key), problem));
        }
        Ok(u32::try_from(value).unwrap_or(u32::MAX))
    }

    fn job_shape(&self, map: &Mapping<'_>) -> Result<JobShape, ScenarioError> {
        let parallelism = self.count(map, "parallelism", 1, 1)?;
        let completions = self.count(map, "completions", parallelism, 1)?;
        Ok(JobShape {
            parallelism,
            completions,
        })
    }

    fn shape(&self, body: &Mapping<'_>) -> Result<PodShape, ScenarioError> {
        let namespace = match body.get("namespace") {
            Some(node) => self
                .name(node, &body.field("namespace"), check_dns_label)?
                .to_string(),
            None => DEFAULT_NAMESPACE.to_string(),
        };
        let mut requests = Vec::new();
        if let Some(node) = body.get("requests") {
            let field = body.field("requests");
            let Value::Map(entries) = &node.value else {
                return Err(self.wrong_type(
                    node,
                    &field,
                    "a mapping of resource names to amounts",
                ));
            };
            for (key, value) in entries {
                let name = self.string(key, &field)?;
                let item_field = format!("{field}.{name}");
                let kind = ResourceKind::from_well_known_name(name).ok_or_else(|| {
                    let problem = WorkloadProblem::Quantity(format!(
                        "unknown resource {name:?} (well-known names only: cpu, memory, nvidia.com/gpu, ...)"
                    ));
                    self.workload_problem(key, &item_field, problem)
                })?;
                requests.push((kind, self.amount(value, &item_field, kind)?));
            }
        }
        Ok(PodShape {
            namespace,
            requests,
            labels: self.string_map(body, "labels")?,
            node_selector: self.string_map(body, "nodeSelector")?,
            tolerations: self.tolerations(body)?,
        })
    }

    fn string_map(
        &self,
        body: &Mapping<'_>,
        key: &str,
    ) -> Result<BTreeMap<String, String>, ScenarioError> {
        let Some(node) = body.get(key) else {
            return Ok(BTreeMap::new());
        };
        let field = body.field(key);
        let Value::Map(entries) = &node.value else {
            return Err(self.wrong_type(node, &field, "a mapping of strings"));
        };
        let mut out = BTreeMap::new();
        for (k, v) in entries {
            let k = self.string(k, &field)?;
            out.insert(k.to_string(), self.written(v));
        }
        Ok(out)
    }

    fn tolerations(&self, body: &Mapping<'_>) -> Result<Vec<Toleration>, ScenarioError> {
        let Some(node) = body.get("tolerations") else {
            return Ok(Vec::new());
        };
        let field = body.field("tolerations");
        let Value::Seq(items) = &node.value else {
            return Err(self.wrong_type(
                node,
                &field,
                "a list such as [\"nvidia.com/gpu:NoSchedule\"]",
            ));
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let item_field = index(&field, i);
            let text = self.string(item, &item_field)?;
            let bad = || {
                self.workload_problem(
                    item,
                    &item_field,
                    WorkloadProblem::Toleration(text.to_string()),
                )
            };
            let (key_value, effect) = match text.rsplit_once(':') {
                Some((kv, effect)) => (kv, Some(TaintEffect::parse(effect).ok_or_else(bad)?)),
                None => (text, None),
            };
            out.push(match key_value.split_once('=') {
                Some((key, value)) => Toleration::equal(key, value, effect),
                None => Toleration::exists(key_value, effect),
            });
        }
        Ok(out)
    }

    /// One quantity, a list of them, or `{uniform: [low, high]}`.
    fn amount(
        &self,
        node: &Node,
        field: &str,
        kind: ResourceKind,
    ) -> Result<AmountDist, ScenarioError> {
        let one = |node: &Node, field: &str| -> Result<i64, ScenarioError> {
            let text = self.written(node);
            let quantity = Quantity::parse(&text).map_err(|e| {
                self.workload_problem(node, field, WorkloadProblem::Quantity(e.to_string()))
            })?;
            if quantity.is_negative() {
                let problem = WorkloadProblem::Quantity(format!("negative quantity {text:?}"));
                return Err(self.workload_problem(node, field, problem));
            }
            Ok(kind.amount(quantity))
        };
        let list = |node: &Node, field: &str| -> Result<Vec<i64>, ScenarioError> {
            let Value::Seq(items) = &node.value else {
                return Err(self.wrong_type(node, field, "a list of quantities"));
            };
            if items.is_empty() {
                return Err(self.invalid(node.position, field, Problem::EmptyList));
            }
            items
                .iter()
                .enumerate()
                .map(|(i, item)| one(item, &index(field, i)))
                .collect()
        };
        match &node.value {
            Value::Seq(_) => Ok(AmountDist::Choice(list(node, field)?)),
            Value::Map(_) => {
                let map = self.mapping(node, field, &UNIFORM_KEYS)?;
                let bounds_node = self.required(&map, "uniform")?;
                let bounds = list(bounds_node, &map.field("uniform"))?;
                match bounds.as_slice() {
                    [low, high] if low <= high => Ok(AmountDist::Uniform {
                        low: *low,
                        high: *high,
                    }),
                    _ => Err(self.workload_problem(
                        bounds_node,
                        &map.field("uniform"),
                        WorkloadProblem::Range {
                            what: "expected [low, high] with low ≤ high",
                            text: self.raw(bounds_node),
                        },
                    )),
                }
            }
            _ => Ok(AmountDist::Fixed(one(node, field)?)),
        }
    }

    /// A number of events per unit: `30/h`, `2/m`, `0.5/s`, `100/d`.
    fn rate(&self, node: &Node, field: &str) -> Result<Rate, ScenarioError> {
        let text = self.written(node);
        let parsed = text.split_once('/').and_then(|(count, unit)| {
            let count: f64 = count.trim().parse().ok()?;
            let per_hour = match unit.trim() {
                "s" => 3600.0,
                "m" => 60.0,
                "h" => 1.0,
                "d" => 1.0 / 24.0,
                _ => return None,
            };
            Some(count * per_hour).filter(|r| r.is_finite() && *r >= 0.0)
        });
        let per_hour = parsed
            .ok_or_else(|| self.workload_problem(node, field, WorkloadProblem::Rate { text }))?;
        if per_hour > MAX_RATE_PER_SECOND * 3600.0 {
            let problem = Problem::OverLimit {
                found: format!("rate {}", self.written(node)),
                limit: format!("{MAX_RATE_PER_SECOND}/s per generator"),
            };
            return Err(self.invalid(node.position, field, problem));
        }
        Ok(Rate { per_hour })
    }

    /// A number ≥ 0 (an integer or a float).
    fn non_negative(&self, node: &Node, field: &str) -> Result<f64, ScenarioError> {
        let value = match node.value {
            Value::Int(v) => v as f64,
            Value::Float(v) => v,
            _ => return Err(self.wrong_type(node, field, "a number")),
        };
        if !value.is_finite() || value < 0.0 {
            let problem = WorkloadProblem::Range {
                what: "must be a finite number ≥ 0",
                text: self.raw(node),
            };
            return Err(self.workload_problem(node, field, problem));
        }
        Ok(value)
    }

    fn positive_duration(
        &self,
        map: &Mapping<'_>,
        key: &'static str,
    ) -> Result<SimDuration, ScenarioError> {
        let node = self.required(map, key)?;
        let value = self.duration(node, &map.field(key))?;
        if value.is_zero() {
            let problem = WorkloadProblem::Range {
                what: "must be longer than 0",
                text: self.written(node),
            };
            return Err(self.workload_problem(node, &map.field(key), problem));
        }
        Ok(value)
    }

    /// `{period, peakAt}` plus the two levels read by `level`.
    fn curve(
        &self,
        map: &Mapping<'_>,
        (high, low): (&'static str, &'static str),
        level: &dyn Fn(&Node, &str) -> Result<f64, ScenarioError>,
    ) -> Result<DiurnalCurve, ScenarioError> {
        let period = self.positive_duration(map, "period")?;
        let high_node = self.required(map, high)?;
        let peak = level(high_node, &map.field(high))?;
        let trough = level(self.required(map, low)?, &map.field(low))?;
        if trough > peak {
            let problem = WorkloadProblem::Range {
                what: "must not be below the lower level",
                text: self.raw(high_node),
            };
            return Err(self.workload_problem(high_node, &map.field(high), problem));
        }
        let peak_at = match map.get("peakAt") {
            Some(node) => self.duration(node, &map.field("peakAt"))?,
            None => SimDuration::ZERO,
        };
        Ok(DiurnalCurve {
            period,
            peak,
            trough,
            peak_at,
        })
    }

    fn arrivals(&self, node: &Node, field: &str) -> Result<Arrivals, ScenarioError> {
        let map = self.mapping(node, field, &ARRIVAL_KEYS)?;
        let (kind, value) = self.exactly_one(&map, ARRIVAL_KINDS)?;
        let field = map.field(kind);
        match kind {
            "poisson" => {
                let body = self.mapping(value, &field, &POISSON_KEYS)?;
                let rate = self.required(&body, "rate")?;
                Ok(Arrivals::Poisson(self.rate(rate, &body.field("rate"))?))
            }
            "diurnal" => {
                let body = self.mapping(value, &field, &DIURNAL_KEYS)?;
                let level = |node: &Node, field: &str| self.rate(node, field).map(|r| r.per_hour);
                Ok(Arrivals::Diurnal(self.curve(
                    &body,
                    ("peak", "trough"),
                    &level,
                )?))
            }
            _ => {
                let body = self.mapping(value, &field, &BURST_KEYS)?;
                let every = self.positive_duration(&body, "every")?;
                let size = self.count(&body, "size", 1, 1)?;
                let spread = match body.get("spread") {
                    Some(node) => self.duration(node, &body.field("spread"))?,
                    None => SimDuration::ZERO,
                };
                Ok(Arrivals::Bursts {
                    every,
                    size,
                    spread,
                })
            }
        }
    }

    fn optional_duration_dist(
        &self,
        body: &Mapping<'_>,
    ) -> Result<Option<DurationDist>, ScenarioError> {
        let Some(node) = body.get("duration") else {
            return Ok(None);
        };
        let map = self.mapping(node, &body.field("duration"), &DURATION_KEYS)?;
        let (kind, value) = self.exactly_one(&map, DURATION_KINDS)?;
        let field = map.field(kind);
        Ok(Some(match kind {
            "fixed" => DurationDist::Fixed(self.duration(value, &field)?),
            "exponential" => {
                let body = self.mapping(value, &field, &MEAN_KEYS)?;
                DurationDist::Exponential(self.positive_duration(&body, "mean")?)
            }
            _ => {
                let body = self.mapping(value, &field, &LOGNORMAL_KEYS)?;
                let median = self.positive_duration(&body, "median")?;
                let p90_node = self.required(&body, "p90")?;
                let p90 = self.duration(p90_node, &body.field("p90"))?;
                if p90 < median {
                    let problem = WorkloadProblem::Range {
                        what: "p90 must be at least the median",
                        text: self.written(p90_node),
                    };
                    return Err(self.workload_problem(p90_node, &body.field("p90"), problem));
                }
                DurationDist::LogNormal { median, p90 }
            }
        }))
    }

    fn replicas(&self, node: &Node, field: &str) -> Result<ReplicaSchedule, ScenarioError> {
        let map = self.mapping(node, field, &REPLICA_KEYS)?;
        let (kind, value) = self.exactly_one(&map, REPLICA_KINDS)?;
        let field = map.field(kind);
        match kind {
            "steps" => {
                let steps =
                    self.timed_list(value, &field, &STEP_KEYS, "replicas", &|node, field| {
                        let n = self.replica_count(node, field)?;
                        Ok(f64::from(n))
                    })?;
                Ok(ReplicaSchedule::Steps(
                    steps.into_iter().map(|(at, r)| (at, r as u32)).collect(),
                ))
            }
            "diurnal" => {
                let body = self.mapping(value, &field, &REPLICA_DIURNAL_KEYS)?;
                let level =
                    |node: &Node, field: &str| self.replica_count(node, field).map(f64::from);
                let curve = self.curve(&body, ("max", "min"), &level)?;
                let every = match body.get("every") {
                    Some(node) => {
                        let every = self.positive_duration(&body, "every")?;
                        self.at_least_a_second(node, &body.field("every"), every)?;
                        every
                    }
                    None => SimDuration::from_mins(5),
                };
                Ok(ReplicaSchedule::Diurnal { curve, every })
            }
            _ => {
                let body = self.mapping(value, &field, &HPA_KEYS)?;
                let load_node = self.required(&body, "load")?;
                let load_map = self.mapping(load_node, &body.field("load"), &LOAD_KEYS)?;
                let (load_kind, load_value) = self.exactly_one(&load_map, LOAD_KINDS)?;
                let load_field = load_map.field(load_kind);
                let level = |node: &Node, field: &str| self.non_negative(node, field);
                let load = if load_kind == "diurnal" {
                    let curve_map = self.mapping(load_value, &load_field, &DIURNAL_KEYS)?;
                    LoadCurve::Diurnal(self.curve(&curve_map, ("peak", "trough"), &level)?)
                } else {
                    LoadCurve::Steps(self.timed_list(
                        load_value,
                        &load_field,
                        &LOAD_STEP_KEYS,
                        "load",
                        &level,
                    )?)
                };
                let target_node = self.required(&body, "targetPerReplica")?;
                let target = self.non_negative(target_node, &body.field("targetPerReplica"))?;
                if target <= 0.0 {
                    let problem = WorkloadProblem::Range {
                        what: "must be greater than 0",
                        text: self.raw(target_node),
                    };
                    return Err(self.workload_problem(
                        target_node,
                        &body.field("targetPerReplica"),
                        problem,
                    ));
                }
                let min = self.count(&body, "min", 1, 1)?;
                let max_node = self.required(&body, "max")?;
                let max = self.count(&body, "max", min, 1)?;
                if max < min {
                    let problem = WorkloadProblem::Range {
                        what: "max must be at least min",
                        text: self.raw(max_node),
                    };
                    return Err(self.workload_problem(max_node, &body.field("max"), problem));
                }
                Ok(ReplicaSchedule::Hpa(HpaSpec {
                    load,
                    target_per_replica: target,
                    min,
                    max,
                }))
            }
        }
    }

    /// A non-empty list of `{at, <value_key>}` in time order.
    fn timed_list(
        &self,
        node: &Node,
        field: &str,
        keys: &Keys,
        value_key: &'static str,
        value: &dyn Fn(&Node, &str) -> Result<f64, ScenarioError>,
    ) -> Result<Vec<(SimDuration, f64)>, ScenarioError> {
        let Value::Seq(items) = &node.value else {
            return Err(self.wrong_type(node, field, "a list of {at, ...} entries"));
        };
        if items.is_empty() {
            return Err(self.invalid(node.position, field, Problem::EmptyList));
        }
        let mut out: Vec<(SimDuration, f64)> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let item_field = index(field, i);
            let map = self.mapping(item, &item_field, keys)?;
            let at_node = self.required(&map, "at")?;
            let at = self.duration(at_node, &map.field("at"))?;
            if out.last().is_some_and(|(previous, _)| at <= *previous) {
                let problem = WorkloadProblem::Range {
                    what: "entries must be in increasing time order",
                    text: self.written(at_node),
                };
                return Err(self.workload_problem(at_node, &map.field("at"), problem));
            }
            let v = value(self.required(&map, value_key)?, &map.field(value_key))?;
            out.push((at, v));
        }
        Ok(out)
    }
}
