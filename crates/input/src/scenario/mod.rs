//! Scenario files: what to simulate, read from YAML and validated.
//!
//! A scenario names a workload (what happens to the cluster over time), the
//! environment it runs in (region, zones, node launch latency, seed) and one
//! or more *variants*: the provisioning configurations under test, which all
//! see the same workload, seed and environment. This module reads the file,
//! checks it against the schema below, resolves the files it references and
//! returns a [`Scenario`]. It does not read those files: Kubernetes manifests
//! and NodePools are loaded by their own readers in a later step, and the
//! spot trace and price history by [`load_spot_inputs`].
//!
//! # Schema (version 1)
//!
//! ```yaml
//! name: quickstart            # optional, default: the file name without extension
//! seed: 7                     # optional, default 0
//! duration: 24h               # required; units ms, s, m, h, d (e.g. 90m, 1h30m, 7d)
//! region: us-east-1           # optional, default us-east-1
//! zones: [us-east-1a, us-east-1b]   # optional, default: every zone of the region
//! nodeLaunchLatency: {median: 35s, p90: 60s, initialization: 10s}   # optional, the default
//! workloads:                  # required, in time order
//!   - manifests: workloads/base.yaml           # `at` defaults to 0
//!   - at: 2h
//!     manifests: [workloads/burst.yaml, workloads/batch.yaml]
//!   - at: 6h
//!     scale: {deployment: web, replicas: 40}
//!   - at: 8h
//!     delete: {deployment: burst, namespace: jobs}
//!   - at: 10h
//!     nodePools: [nodepools/new.yaml]
//!   - at: 11h                                 # a generator (see generate)
//!     generate: {pods: {name: batch, arrivals: {poisson: {rate: 30/h}}}}
//!   - trace: traces/pods.csv                  # a streamed trace (see trace)
//!     format: generic                         # or alibaba; start, end,
//!     timeScale: 0.5                          # timeScale, sample optional
//! variants:                   # required, at least one
//!   - name: karpenter
//!     karpenter:
//!       nodePools: [nodepools/default.yaml]
//!   - name: cluster-autoscaler   # schema in src/scenario/read_ca.rs
//!     clusterAutoscaler:
//!       nodeGroups: [{name: general, instanceTypes: [m5.xlarge], maxSize: 50}]
//!       expander: least-waste
//! interruptions:              # optional; schema in src/scenario/interruptions.rs
//!   advisorHazard: true
//!   events: [{at: 5h, instanceTypes: [c6a.xlarge], fraction: 0.5, unavailableFor: 30m}]
//! spotPriceHistory: prices.csv   # optional, JSON or CSV
//! pricingSnapshot: prices/us-east-1.json   # optional: `karpsim pricing` output
//! capacityReservations:       # optional; schema in src/scenario/read_reservations.rs
//!   - {id: cr-0a1b2c3d, instanceType: m6i.xlarge, zone: us-east-1a, count: 10, tags: {team: web}}
//! ```
//!
//! Rules, beyond the types:
//!
//! - Every key is checked: an unknown key is an error listing the valid keys.
//! - Durations are strings in Go/Kubernetes form plus `d` for days
//!   ([`parse_duration`](crate::sim::parse_duration)); the bare `0` is also
//!   accepted. `duration` must be greater than zero.
//! - A workload item is exactly one action: `manifests` (one path or a list:
//!   create the objects in those files), `scale` (exactly one of
//!   `deployment`, `statefulset`, `replicaset`, plus `replicas` ≥ 0) or
//!   `delete` (exactly one of `deployment`, `statefulset`, `replicaset`,
//!   `daemonset`, `job`, `pod`), `generate` (a workload generator, read by
//!   `generators.rs`), `trace` (a trace file with the options `format`,
//!   `start`, `end`, `timeScale`, `sample` beside it, read by `traces.rs`;
//!   only a trace item may have them), or `nodePools` (one path or a list: from
//!   then on, every Karpenter variant uses the NodePools and EC2NodeClasses
//!   in those files instead of its own; nodes that no longer match their
//!   NodePool drift). `scale` and `delete` take an optional `namespace`
//!   (default `default`).
//! - Every `at` must be before the end of the run (`at < duration`); an
//!   action at the very end could not affect anything measured.
//! - Values past what one run simulates ([`limits`]: 366 days, 100,000
//!   replicas per workload, 100 arrivals/s, 1,000,000 pods) are errors
//!   naming the limit.
//! - The object of a `scale` or `delete` must exist when the step comes;
//!   this is checked once the manifests are read (`targets.rs`, from
//!   [`prepare`]), and left to the run's count (`steps_missing_target`)
//!   only for objects a trace or a generated name could provide.
//! - Workload items must be listed in time order (equal times are fine and
//!   apply in file order). Items out of order are an error rather than being
//!   sorted: the file is a timeline read top to bottom, and silently
//!   reordering it would make the order on screen differ from the order
//!   applied, which matters for items at the same time.
//! - `nodeLaunchLatency` is either `{median, p90}` (a lognormal; both keys
//!   required, `p90 ≥ median > 0`) or `{fixed: 40s}`, launch to
//!   initialized, with an optional `initialization` (default 10s): the last
//!   part of it, from the node registering to it being initialized.
//! - `region` must be in the caller's [`RegionCatalog`]; `zones` must be
//!   zones of that region, without repeats, and not empty.
//! - A variant has a `name` (unique among variants) and exactly one
//!   provisioner: `karpenter` with a non-empty `nodePools` list (one path
//!   or a list) of files holding NodePool and EC2NodeClass documents, or
//!   `clusterAutoscaler` with node groups and CA flags (CA's defaults;
//!   `expander: price` is refused as CA refuses it on AWS; instance types
//!   are checked against the catalog when the scenario is prepared).
//! - Scenario and variant names become file names in reports: 1–63 letters,
//!   digits, `-`, `_` or `.`, starting with a letter or digit.
//! - Object names in `scale`/`delete` follow Kubernetes rules (DNS-1123
//!   subdomain; namespaces DNS-1123 label).
//! - `pricingSnapshot` pins a snapshot file written by `karpsim pricing
//!   refresh` or `import-spot`: every catalog of the run takes its prices
//!   from it instead of the bundled snapshot. Its region must be the
//!   scenario's (checked when the scenario is prepared, which reads it).
//! - Paths are relative to the directory of the scenario file (absolute
//!   paths are used as they are) and must name existing files. The
//!   resolved paths are absolute for the running process and are never
//!   written anywhere.
//!
//! Errors are one line each, `scenarios/x.yaml:12:5: workloads[2].at: invalid
//! duration "2x": ...`; see [`ScenarioError`].

mod error;
pub mod generate;
pub mod limits;
mod names;
pub mod nodepool_sets;
pub mod prepare;
mod read;
mod reservations;
pub mod sweep;
mod targets;
pub mod trace;
mod yaml;

#[cfg(test)]
mod bundled_tests;
#[cfg(test)]
mod lifecycle_tests;
#[cfg(test)]
mod limits_tests;
#[cfg(test)]
mod reservations_tests;
#[cfg(test)]
mod settings_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_ca;
#[cfg(test)]
mod workload_items_tests;

use std::path::{Path, PathBuf};

pub use error::{Position, Problem, ScenarioError, SweepProblem};
pub use prepare::{BundledRegions, PrepareError, Prepared, prepare, pricing_identity};
pub use read::ca::ClusterAutoscalerConfig;
pub use read::interruptions::{
    InterruptionsConfig, KnownNames, SpotConfig, SpotInputError, SpotInputs, SpotProblem,
    TimedFile, WrittenName, load as load_spot_inputs,
};

use crate::sim::{LaunchLatency, SimDuration, SimTime};

/// Region used when a scenario names none.
pub const DEFAULT_REGION: &str = "us-east-1";
/// Namespace used by `scale` and `delete` when none is given.
pub const DEFAULT_NAMESPACE: &str = "default";
/// Default median node launch-to-ready latency.
pub const DEFAULT_LAUNCH_MEDIAN: SimDuration = SimDuration::from_secs(35);
/// Default 90th-percentile node launch-to-ready latency.
pub const DEFAULT_LAUNCH_P90: SimDuration = SimDuration::from_secs(60);

/// A validated scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Name used for reports (the file name without extension by default).
    pub name: String,
    /// Absolute path of the scenario file.
    pub source: PathBuf,
    /// Seed from which every random stream of the run is derived.
    pub seed: u64,
    /// Simulated run length; greater than zero.
    pub duration: SimDuration,
    /// Cloud region.
    pub region: String,
    /// Zones nodes may be launched in, in the order given (or the catalog's
    /// order by default).
    pub zones: Vec<String>,
    /// Node launch-to-ready (initialized) latency.
    pub node_launch_latency: LaunchLatency,
    /// `nodeLaunchLatency.initialization`: the last part of each launch
    /// latency, from registration to initialization.
    pub node_initialization: SimDuration,
    /// What happens to the cluster, in time order.
    pub workloads: Vec<WorkloadStep>,
    /// Provisioning configurations under test, in file order; names unique.
    pub variants: Vec<Variant>,
    /// Spot interruptions and price history (see [`SpotConfig`]); empty
    /// when the scenario has neither key.
    pub spot: SpotConfig,
    /// The pinned pricing snapshot file, if any (else the bundled one).
    pub pricing_snapshot: Option<PinnedSnapshot>,
    /// The cluster snapshot the run begins from (absolute path), if any.
    pub initial_state: Option<PathBuf>,
    /// The account's capacity reservations (`capacityReservations`), in
    /// file order; EC2NodeClasses select from them.
    pub capacity_reservations: Vec<ReservationSpec>,
}

/// One `capacityReservations` entry as written; its instance type is
/// checked and its price defaulted when the scenario is prepared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReservationSpec {
    /// `id` (`cr-…`), unique among the entries.
    pub id: &'static str,
    /// `instanceType`, with where it is written.
    pub instance_type: WrittenName,
    /// `zone`: one of the scenario's zones.
    pub zone: String,
    /// `count` ≥ 1.
    pub count: u32,
    /// `type` (default `default`).
    pub reservation_type: crate::cloud::ReservationType,
    /// `end`, from the run's start; required for a capacity block.
    pub end: Option<SimTime>,
    /// `tags`.
    pub tags: std::collections::BTreeMap<String, String>,
    /// `ownerID`.
    pub owner_id: Option<String>,
    /// `price` per instance-hour (default: the type's On-Demand price).
    pub price: Option<crate::cloud::Price>,
}

/// A snapshot file a scenario pins with `pricingSnapshot`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedSnapshot {
    /// The resolved path (absolute, for this process only).
    pub path: PathBuf,
    /// The path as the scenario writes it: what reports record, so they
    /// stay the same on every machine.
    pub written: String,
}

/// One timed action on the cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadStep {
    /// When it happens; before the end of the run.
    pub at: SimTime,
    /// What happens.
    pub action: WorkloadAction,
    /// Where it is written, for messages about it once the manifests are
    /// read: the object's name for `scale` and `delete`, else the item.
    pub position: Position,
}

/// What a workload step does.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkloadAction {
    /// Create the objects in these Kubernetes manifest files (absolute
    /// paths, in the order given).
    Apply {
        /// Manifest files; at least one.
        manifests: Vec<PathBuf>,
    },
    /// Set the replica count of a Deployment, StatefulSet or ReplicaSet.
    Scale {
        /// The object to scale.
        target: ObjectRef,
        /// The new replica count.
        replicas: u32,
    },
    /// Delete an object (its pods go with it).
    Delete {
        /// The object to delete.
        target: ObjectRef,
    },
    /// Replace every Karpenter variant's NodePools with those in these
    /// files (absolute paths, in the order given; at least one).
    NodePools {
        /// NodePool and EC2NodeClass files.
        node_pools: Vec<PathBuf>,
    },
    /// Set a status condition of a node (by name: a node of the
    /// `initialState` snapshot, or a NodeClaim's `<nodepool>-NNNNN`).
    NodeCondition {
        /// The node's name.
        node: String,
        /// Condition type (one of the repair policies' types).
        condition_type: String,
        /// The new status.
        status: crate::karpenter::node_repair::ConditionStatus,
    },
    /// Run a workload generator from `at` (see [`generate`]).
    Generate {
        /// What it generates.
        generator: generate::GeneratorSpec,
        /// It produces nothing at or after this instant (its `until`, or
        /// the end of the run).
        until: SimTime,
    },
    /// Replay a trace file, streamed (see [`trace`]).
    Trace(trace::TraceSpec),
}

/// The kinds of object a workload step can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ObjectKind {
    /// apps/v1 Deployment.
    Deployment,
    /// apps/v1 StatefulSet.
    StatefulSet,
    /// apps/v1 ReplicaSet.
    ReplicaSet,
    /// apps/v1 DaemonSet.
    DaemonSet,
    /// batch/v1 Job.
    Job,
    /// v1 Pod.
    Pod,
}

impl ObjectKind {
    /// The Kubernetes `kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Deployment => "Deployment",
            ObjectKind::StatefulSet => "StatefulSet",
            ObjectKind::ReplicaSet => "ReplicaSet",
            ObjectKind::DaemonSet => "DaemonSet",
            ObjectKind::Job => "Job",
            ObjectKind::Pod => "Pod",
        }
    }
}

/// A namespaced Kubernetes object named by a workload step.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectRef {
    /// Its kind.
    pub kind: ObjectKind,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// One provisioning configuration under test.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// Unique name, used in reports.
    pub name: String,
    /// How nodes are provisioned.
    pub provisioner: Provisioner,
}

/// The node provisioner of a variant.
#[derive(Debug, Clone, PartialEq)]
pub enum Provisioner {
    /// Karpenter with the given NodePools.
    Karpenter(KarpenterConfig),
    /// Cluster Autoscaler with the given node groups and flags.
    ClusterAutoscaler(Box<ClusterAutoscalerConfig>),
}

/// A Karpenter variant's inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct KarpenterConfig {
    /// Files holding `karpenter.sh/v1` NodePools and `karpenter.k8s.aws/v1`
    /// EC2NodeClasses (absolute paths, in the order given; at least one,
    /// or none to use the NodePools of the scenario's `initialState`).
    pub node_pools: Vec<PathBuf>,
    /// The operator settings (`settings:`), upstream's defaults when absent.
    pub settings: KarpenterSettings,
    /// `startupFailures`: windows in which launches hang, in file order.
    pub startup_failures: Vec<StartupFailureSpec>,
    /// Edits applied to every NodePool of `node_pools` before it is read
    /// (a sweep's `vary`); none for a scenario's own variants.
    pub node_pool_edits: Vec<crate::nodepools::edit::NodePoolEdit>,
}

/// One entry of a Karpenter variant's `startupFailures`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartupFailureSpec {
    /// `nodePool`, with where it is written; `None`: every NodePool.
    pub node_pool: Option<WrittenName>,
    /// `from`, `until` and `node`.
    pub failure: crate::sim::engine::StartupFailure,
}

/// Karpenter's operator settings a variant may set (core
/// pkg/operator/options/options.go), with upstream's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KarpenterSettings {
    /// `featureGates.SpotToSpotConsolidation` (default false).
    pub spot_to_spot_consolidation: bool,
    /// `featureGates.NodeOverlay` (default false): NodeOverlays apply.
    pub node_overlay: bool,
    /// `featureGates.ReservedCapacity` (default true since v1.6): the
    /// scenario's capacity reservations that EC2NodeClasses select become
    /// `reserved` offerings; off, they are ignored.
    pub reserved_capacity: bool,
    /// `featureGates.StaticCapacity` (default false): static NodePools
    /// (`spec.replicas`) get their NodeClaims.
    pub static_capacity: bool,
    /// `featureGates.NodeRepair` (default false): unhealthy nodes are
    /// deleted after their repair policy's toleration.
    pub node_repair: bool,
    /// `minValuesPolicy` and `preferencePolicy` (defaults Strict, Respect).
    pub scheduling: crate::karpenter::provisioning::SchedulingPolicies,
    /// `batchIdleDuration` (default 1s).
    pub batch_idle_duration: crate::sim::SimDuration,
    /// `batchMaxDuration` (default 10s).
    pub batch_max_duration: crate::sim::SimDuration,
}

impl Default for KarpenterSettings {
    fn default() -> KarpenterSettings {
        KarpenterSettings {
            spot_to_spot_consolidation: false,
            node_overlay: false,
            reserved_capacity: true,
            static_capacity: false,
            node_repair: false,
            scheduling: Default::default(),
            batch_idle_duration: crate::sim::engine::BATCH_IDLE,
            batch_max_duration: crate::sim::engine::BATCH_MAX,
        }
    }
}

impl KarpenterSettings {
    /// The engine's form of these settings.
    pub fn engine_options(&self) -> crate::sim::engine::KarpenterOptions {
        crate::sim::engine::KarpenterOptions {
            batch_idle_duration: self.batch_idle_duration,
            batch_max_duration: self.batch_max_duration,
            static_capacity: self.static_capacity,
            node_repair: self.node_repair,
            scheduling: self.scheduling,
            disruption: crate::karpenter::disruption::DisruptionOptions {
                spot_to_spot_consolidation: self.spot_to_spot_consolidation,
                ..Default::default()
            },
        }
    }
}

/// The regions and zones a scenario may name, supplied by the caller (the
/// instance-type catalog lives elsewhere).
pub trait RegionCatalog {
    /// Every known region, in the order to list them in messages.
    fn regions(&self) -> Vec<&str>;
    /// The zones of `region` in catalog order, or `None` for an unknown
    /// region.
    fn zones(&self, region: &str) -> Option<Vec<&str>>;
}

/// A fixed table of `(region, zones)` pairs.
impl RegionCatalog for [(&str, &[&str])] {
    fn regions(&self) -> Vec<&str> {
        self.iter().map(|(region, _)| *region).collect()
    }

    fn zones(&self, region: &str) -> Option<Vec<&str>> {
        self.iter()
            .find(|(name, _)| *name == region)
            .map(|(_, zones)| zones.to_vec())
    }
}

impl Scenario {
    /// Makes every trace of the scenario skip unusable rows (counting
    /// them) instead of failing on the first (`--skip-bad-rows`).
    pub fn set_skip_bad_rows(&mut self, skip: bool) {
        for step in &mut self.workloads {
            if let WorkloadAction::Trace(spec) = &mut step.action {
                spec.skip_bad_rows = skip;
            }
        }
    }

    /// Reads and validates the scenario file at `path`. Errors name `path`
    /// as given.
    pub fn load<C: RegionCatalog + ?Sized>(
        path: &Path,
        catalog: &C,
    ) -> Result<Scenario, ScenarioError> {
        Scenario::load_with(path, catalog, true)
    }

    /// Validates `text` as the content of the scenario file at `path`, which
    /// gives the default name, the base for relative paths and the file name
    /// in errors. Referenced files must exist.
    pub fn parse<C: RegionCatalog + ?Sized>(
        text: &str,
        path: &Path,
        catalog: &C,
    ) -> Result<Scenario, ScenarioError> {
        read::read_scenario(text, path, catalog, true)
    }

    /// [`Scenario::load`] for a caller that supplies the variants itself
    /// (`compare --nodepools`, through [`Scenario::set_nodepool_variants`]):
    /// a file without `variants:` reads, with no variants.
    pub fn load_without_variants<C: RegionCatalog + ?Sized>(
        path: &Path,
        catalog: &C,
    ) -> Result<Scenario, ScenarioError> {
        Scenario::load_with(path, catalog, false)
    }

    fn load_with<C: RegionCatalog + ?Sized>(
        path: &Path,
        catalog: &C,
        variants_required: bool,
    ) -> Result<Scenario, ScenarioError> {
        let bytes = std::fs::read(path).map_err(|err| ScenarioError::Read {
            file: path.display().to_string(),
            reason: err.to_string(),
        })?;
        let text = crate::yaml::utf8_text(&bytes).map_err(|err| ScenarioError::Yaml {
            file: path.display().to_string(),
            position: err.position,
            message: err.to_string(),
        })?;
        read::read_scenario(text, path, catalog, variants_required)
    }
}
