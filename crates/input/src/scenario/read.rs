//! Checks a parsed YAML tree against the scenario schema and builds the
//! [`Scenario`]. Every check reports the first problem it finds with the
//! position of the node at fault and its field path.

use std::path::{Path, PathBuf};

use super::error::{Position, Problem, ScenarioError};
use super::limits::{MAX_DURATION, MAX_REPLICAS};
use super::names::{check_dns_label, check_dns_subdomain, check_report_name};
use super::yaml::{self, Node, Value};
use super::{
    DEFAULT_LAUNCH_MEDIAN, DEFAULT_LAUNCH_P90, DEFAULT_NAMESPACE, DEFAULT_REGION, KarpenterConfig,
    ObjectKind, ObjectRef, PinnedSnapshot, Provisioner, RegionCatalog, Scenario, Variant,
    WorkloadAction, WorkloadStep,
};
use crate::sim::engine::DEFAULT_NODE_INITIALIZATION;
use crate::sim::{LaunchLatency, SimDuration, SimTime, parse_duration};

/// The spot keys (`interruptions`, `spotPriceHistory`); a child module so
/// that it shares this reader's checks.
#[path = "interruptions.rs"]
pub(super) mod interruptions;

/// The `clusterAutoscaler` variant block; a child module for the same
/// reason.
#[path = "read_ca.rs"]
pub(super) mod ca;

/// The `generate` workload items.
#[path = "generators.rs"]
pub(super) mod generators;

/// The `karpenter.settings` block of a variant.
#[path = "read_settings.rs"]
mod settings;

/// The `trace` workload items.
#[path = "traces.rs"]
mod traces;

/// The `capacityReservations` list.
#[path = "read_reservations.rs"]
mod reservations;

/// Sweep files, read with the same checks.
#[path = "read_sweep.rs"]
mod sweep;
pub(super) use sweep::read_sweep;

/// The keys allowed in one mapping, and those reserved for later versions.
struct Keys {
    valid: &'static [&'static str],
    /// `(key, what it will describe)`.
    reserved: &'static [(&'static str, &'static str)],
}

const TOP_KEYS: Keys = Keys {
    valid: &[
        "name",
        "seed",
        "duration",
        "region",
        "zones",
        "nodeLaunchLatency",
        "workloads",
        "variants",
        "interruptions",
        "spotPriceHistory",
        "pricingSnapshot",
        "initialState",
        "capacityReservations",
    ],
    reserved: &[],
};

const LATENCY_KEYS: Keys = Keys {
    valid: &["median", "p90", "fixed", "initialization"],
    reserved: &[],
};

/// The actions of a workload item; exactly one per item.
const WORKLOAD_ACTIONS: &[&str] = &[
    "manifests",
    "scale",
    "delete",
    "nodePools",
    "nodeCondition",
    "generate",
    "trace",
];

const WORKLOAD_KEYS: Keys = Keys {
    valid: &[
        "at",
        "manifests",
        "scale",
        "delete",
        "nodePools",
        "nodeCondition",
        "generate",
        "trace",
        "format",
        "start",
        "end",
        "timeScale",
        "sample",
        "excludeNamespaces",
    ],
    reserved: &[],
};

/// The kinds `scale` accepts, as keys.
const SCALABLE: &[&str] = &["deployment", "statefulset", "replicaset"];

const SCALE_KEYS: Keys = Keys {
    valid: &[
        "deployment",
        "statefulset",
        "replicaset",
        "namespace",
        "replicas",
    ],
    reserved: &[],
};

/// The kinds `delete` accepts, as keys.
const DELETABLE: &[&str] = &[
    "deployment",
    "statefulset",
    "replicaset",
    "daemonset",
    "job",
    "pod",
];

const NODE_CONDITION_KEYS: Keys = Keys {
    valid: &["node", "type", "status"],
    reserved: &[],
};

const DELETE_KEYS: Keys = Keys {
    valid: &[
        "deployment",
        "statefulset",
        "replicaset",
        "daemonset",
        "job",
        "pod",
        "namespace",
    ],
    reserved: &[],
};

/// The provisioners of a variant; exactly one per variant.
const PROVISIONERS: &[&str] = &["karpenter", "clusterAutoscaler"];

const VARIANT_KEYS: Keys = Keys {
    valid: &["name", "karpenter", "clusterAutoscaler"],
    reserved: &[],
};

const KARPENTER_KEYS: Keys = Keys {
    valid: &["nodePools", "settings", "startupFailures"],
    reserved: &[],
};

const KARPENTER_STARTUP_FAILURE_KEYS: Keys = Keys {
    valid: &["nodePool", "from", "until", "node"],
    reserved: &[],
};

/// Reads `text`, the content of the scenario file at `path`.
pub(super) fn read_scenario<C: RegionCatalog + ?Sized>(
    text: &str,
    path: &Path,
    catalog: &C,
    variants_required: bool,
) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let source = std::path::absolute(path).map_err(|err| ScenarioError::Read {
        file: file.clone(),
        reason: format!("cannot resolve the path: {err}"),
    })?;
    let base_dir = source.parent().map(Path::to_path_buf).unwrap_or_default();
    let root = yaml::parse_document(text).map_err(|err| ScenarioError::Yaml {
        file: file.clone(),
        position: err.position,
        message: err.message,
    })?;
    let reader = Reader {
        file,
        text,
        base_dir,
        variants_required,
        initial_state_given: std::cell::Cell::new(false),
    };
    match root {
        Some(root) => reader.scenario(&root, &source, catalog),
        None => Err(reader.invalid(Position::START, "", Problem::EmptyDocument)),
    }
}

/// What every check needs: the file name for errors, the text for quoting
/// numbers as written, and the base for relative paths.
struct Reader<'t> {
    file: String,
    text: &'t str,
    base_dir: PathBuf,
    /// False when the caller supplies the variants (`compare --nodepools`).
    variants_required: bool,
    /// The scenario begins from a snapshot: a Karpenter variant may leave
    /// out `nodePools` (the snapshot's are used) and `workloads` may be
    /// empty.
    initial_state_given: std::cell::Cell<bool>,
}

/// A mapping whose keys have been checked against its [`Keys`].
struct Mapping<'n> {
    node: &'n Node,
    field: String,
    /// `(key, key node, value node)` in file order.
    entries: Vec<(&'n str, &'n Node, &'n Node)>,
}

impl<'n> Mapping<'n> {
    fn get(&self, key: &str) -> Option<&'n Node> {
        self.entries
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|(_, _, value)| *value)
    }

    /// The field path of `key` in this mapping.
    fn field(&self, key: &str) -> String {
        child(&self.field, key)
    }

    /// The entries whose keys are among `choices`, in file order.
    fn present(&self, choices: &[&str]) -> Vec<(&'n str, &'n Node, &'n Node)> {
        self.entries
            .iter()
            .filter(|(k, _, _)| choices.contains(k))
            .copied()
            .collect()
    }
}

fn child(field: &str, key: &str) -> String {
    if field.is_empty() {
        key.to_string()
    } else {
        format!("{field}.{key}")
    }
}

fn index(field: &str, i: usize) -> String {
    format!("{field}[{i}]")
}

impl Reader<'_> {
    fn invalid(&self, position: Position, field: &str, problem: Problem) -> ScenarioError {
        ScenarioError::Invalid {
            file: self.file.clone(),
            position,
            field: field.to_string(),
            problem: Box::new(problem),
        }
    }

    fn wrong_type(&self, node: &Node, field: &str, expected: &'static str) -> ScenarioError {
        let found = self.describe(node);
        self.invalid(node.position, field, Problem::WrongType { expected, found })
    }

    /// The node's source text, for numbers (exactly as written); a list or
    /// mapping is shown from its items (its recorded span may cover only
    /// the opening bracket).
    fn raw(&self, node: &Node) -> String {
        match &node.value {
            Value::Seq(items) => {
                let items: Vec<String> = items.iter().map(|item| self.raw(item)).collect();
                return format!("[{}]", items.join(", "));
            }
            Value::Map(entries) => {
                let entries: Vec<String> = entries
                    .iter()
                    .map(|(k, v)| format!("{}: {}", self.raw(k), self.raw(v)))
                    .collect();
                return format!("{{{}}}", entries.join(", "));
            }
            _ => {}
        }
        let written = node
            .bytes
            .and_then(|(start, end)| self.text.get(start..end))
            .map(str::trim)
            .filter(|s| !s.is_empty());
        match (written, &node.value) {
            (Some(text), _) => yaml::one_line(text),
            (None, Value::Int(v)) => v.to_string(),
            (None, Value::Float(v)) => v.to_string(),
            (None, value) => value.kind().to_string(),
        }
    }

    /// A scalar as the user meant it: a string's content, a number's text.
    fn written(&self, node: &Node) -> String {
        match &node.value {
            Value::Str(s) => s.clone(),
            _ => self.raw(node),
        }
    }

    /// A short description of a node for "found ..." messages.
    fn describe(&self, node: &Node) -> String {
        const MAX_SHOWN: usize = 40;
        match &node.value {
            Value::Str(s) if s.chars().count() > MAX_SHOWN => {
                let head: String = s.chars().take(MAX_SHOWN).collect();
                format!("the string {head:?}...")
            }
            Value::Str(s) => format!("the string {s:?}"),
            Value::Int(_) | Value::Float(_) => format!("the number {}", self.raw(node)),
            Value::Bool(b) => format!("the boolean {b}"),
            other => other.kind().to_string(),
        }
    }

    /// Checks that `node` is a mapping with only `keys`, no duplicates and
    /// string keys.
    fn mapping<'n>(
        &self,
        node: &'n Node,
        field: &str,
        keys: &Keys,
    ) -> Result<Mapping<'n>, ScenarioError> {
        let Value::Map(pairs) = &node.value else {
            return Err(self.wrong_type(node, field, "a mapping"));
        };
        let mut entries: Vec<(&'n str, &'n Node, &'n Node)> = Vec::with_capacity(pairs.len());
        for (key_node, value) in pairs {
            let Value::Str(key) = &key_node.value else {
                let found = key_node.value.kind();
                return Err(self.invalid(
                    key_node.position,
                    field,
                    Problem::NonStringKey { found },
                ));
            };
            if let Some((_, first, _)) = entries.iter().find(|(k, _, _)| k == key) {
                return Err(self.invalid(
                    key_node.position,
                    field,
                    Problem::DuplicateKey {
                        key: key.clone(),
                        first: first.position,
                    },
                ));
            }
            if let Some((_, feature)) = keys.reserved.iter().find(|(k, _)| k == key) {
                return Err(self.invalid(
                    key_node.position,
                    field,
                    Problem::NotSupportedYet {
                        key: key.clone(),
                        feature,
                    },
                ));
            }
            if !keys.valid.contains(&key.as_str()) {
                return Err(self.invalid(
                    key_node.position,
                    field,
                    Problem::UnknownKey {
                        key: key.clone(),
                        valid: keys.valid,
                    },
                ));
            }
            entries.push((key.as_str(), key_node, value));
        }
        Ok(Mapping {
            node,
            field: field.to_string(),
            entries,
        })
    }

    fn required<'n>(
        &self,
        map: &Mapping<'n>,
        key: &'static str,
    ) -> Result<&'n Node, ScenarioError> {
        map.get(key)
            .ok_or_else(|| self.invalid(map.node.position, &map.field, Problem::MissingKey { key }))
    }

    /// Exactly one of `choices` must be present; returns it and its value.
    fn exactly_one<'n>(
        &self,
        map: &Mapping<'n>,
        choices: &'static [&'static str],
    ) -> Result<(&'n str, &'n Node), ScenarioError> {
        let present = map.present(choices);
        if let [(key, _, value)] = present.as_slice() {
            return Ok((key, value));
        }
        // Point at the second of several, or at the mapping when none.
        let position = present
            .get(1)
            .map_or(map.node.position, |(_, key, _)| key.position);
        let found = present.iter().map(|(key, _, _)| key.to_string()).collect();
        Err(self.invalid(position, &map.field, Problem::ExactlyOne { choices, found }))
    }

    fn string<'n>(&self, node: &'n Node, field: &str) -> Result<&'n str, ScenarioError> {
        match &node.value {
            Value::Str(s) if s.is_empty() => {
                Err(self.invalid(node.position, field, Problem::EmptyString))
            }
            Value::Str(s) => Ok(s),
            _ => Err(self.wrong_type(node, field, "a string")),
        }
    }

    /// A non-empty string that follows the naming rule `check`.
    fn name<'n>(
        &self,
        node: &'n Node,
        field: &str,
        check: fn(&str) -> Result<(), &'static str>,
    ) -> Result<&'n str, ScenarioError> {
        let name = self.string(node, field)?;
        check(name).map_err(|reason| {
            let problem = Problem::InvalidName {
                name: name.to_string(),
                reason,
            };
            self.invalid(node.position, field, problem)
        })?;
        Ok(name)
    }

    /// A whole number from 0 to `max`.
    fn unsigned(&self, node: &Node, field: &str, max: u64) -> Result<u64, ScenarioError> {
        let out_of_range = || {
            let text = self.raw(node);
            let problem = if text.starts_with('-') {
                Problem::Negative { text }
            } else {
                Problem::OutOfRange { text, max }
            };
            self.invalid(node.position, field, problem)
        };
        match node.value {
            Value::Int(v) => u64::try_from(v)
                .ok()
                .filter(|v| *v <= max)
                .ok_or_else(out_of_range),
            Value::Float(_) => Err(out_of_range()),
            _ => Err(self.wrong_type(node, field, "a whole number")),
        }
    }

    /// A replica count: a whole number from 0 to [`MAX_REPLICAS`], past
    /// which the limit is named.
    fn replica_count(&self, node: &Node, field: &str) -> Result<u32, ScenarioError> {
        if matches!(node.value, Value::Int(v) if v > i128::from(MAX_REPLICAS)) {
            let problem = Problem::OverLimit {
                found: format!("{} replicas", self.raw(node)),
                limit: format!("{MAX_REPLICAS} replicas per workload"),
            };
            return Err(self.invalid(node.position, field, problem));
        }
        let count = self.unsigned(node, field, MAX_REPLICAS)?;
        // At most MAX_REPLICAS, so it fits.
        Ok(u32::try_from(count).unwrap_or(u32::MAX))
    }

    /// A duration such as `30s`; plain numbers go through the duration
    /// parser too, so `10` is reported as missing its unit.
    fn duration(&self, node: &Node, field: &str) -> Result<SimDuration, ScenarioError> {
        let text = match &node.value {
            Value::Str(_) | Value::Int(_) | Value::Float(_) => self.written(node),
            _ => return Err(self.wrong_type(node, field, "a duration such as 30s or 1h30m")),
        };
        parse_duration(&text).map_err(|err| self.invalid(node.position, field, err.into()))
    }

    /// One path or a non-empty list of paths, each resolved and checked.
    fn files(&self, node: &Node, field: &str) -> Result<Vec<PathBuf>, ScenarioError> {
        match &node.value {
            Value::Str(_) => Ok(vec![self.file(node, field)?]),
            Value::Seq(items) if items.is_empty() => {
                Err(self.invalid(node.position, field, Problem::EmptyList))
            }
            Value::Seq(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| self.file(item, &index(field, i)))
                .collect(),
            _ => Err(self.wrong_type(node, field, "a file path or a list of file paths")),
        }
    }

    /// A path relative to the scenario file's directory that must name an
    /// existing regular file.
    fn file(&self, node: &Node, field: &str) -> Result<PathBuf, ScenarioError> {
        let written = self.string(node, field)?;
        let resolved = self.base_dir.join(written);
        let problem = match std::fs::metadata(&resolved) {
            Ok(meta) if meta.is_file() => return Ok(resolved),
            Ok(meta) => Problem::NotAFile {
                written: written.to_string(),
                reason: if meta.is_dir() {
                    "it is a directory".to_string()
                } else {
                    "not a regular file".to_string()
                },
            },
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Problem::FileNotFound {
                written: written.to_string(),
                resolved: resolved.display().to_string(),
            },
            Err(err) => Problem::NotAFile {
                written: written.to_string(),
                reason: err.to_string(),
            },
        };
        Err(self.invalid(node.position, field, problem))
    }

    fn scenario<C: RegionCatalog + ?Sized>(
        &self,
        root: &Node,
        source: &Path,
        catalog: &C,
    ) -> Result<Scenario, ScenarioError> {
        let top = self.mapping(root, "", &TOP_KEYS)?;
        let name = match top.get("name") {
            Some(node) => {
                let name = self.name(node, "name", check_report_name)?;
                name.to_string()
            }
            None => {
                let stem = source
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                check_report_name(&stem).map_err(|reason| {
                    let problem = Problem::InvalidDefaultName {
                        stem: stem.clone(),
                        reason,
                    };
                    self.invalid(Position::START, "name", problem)
                })?;
                stem
            }
        };
        let seed = match top.get("seed") {
            Some(node) => self.unsigned(node, "seed", u64::MAX)?,
            None => 0,
        };
        let duration_node = self.required(&top, "duration")?;
        let duration = self.duration(duration_node, "duration")?;
        if duration.is_zero() {
            return Err(self.invalid(duration_node.position, "duration", Problem::ZeroDuration));
        }
        if duration > MAX_DURATION {
            let problem = Problem::OverLimit {
                found: self.written(duration_node),
                limit: format!("{}d per run", MAX_DURATION.as_millis() / 86_400_000),
            };
            return Err(self.invalid(duration_node.position, "duration", problem));
        }
        let (region, zones) = self.region_and_zones(&top, catalog)?;
        let (node_launch_latency, node_initialization) = match top.get("nodeLaunchLatency") {
            Some(node) => self.latency(node, "nodeLaunchLatency")?,
            None => (
                LaunchLatency::lognormal(DEFAULT_LAUNCH_MEDIAN, DEFAULT_LAUNCH_P90).map_err(
                    |err| self.invalid(Position::START, "nodeLaunchLatency", err.into()),
                )?,
                DEFAULT_NODE_INITIALIZATION,
            ),
        };
        let initial_state = match top.get("initialState") {
            Some(node) => Some(self.file(node, "initialState")?),
            None => None,
        };
        self.initial_state_given.set(initial_state.is_some());
        let workloads = match top.get("workloads") {
            None if initial_state.is_some() => Vec::new(),
            _ => {
                let workloads_node = self.required(&top, "workloads")?;
                self.workloads(workloads_node, (duration, &self.written(duration_node)))?
            }
        };
        let region_zones: Vec<String> = catalog
            .zones(&region)
            .unwrap_or_default()
            .into_iter()
            .map(str::to_string)
            .collect();
        let variants = match top.get("variants") {
            None if !self.variants_required => Vec::new(),
            _ => self.variants(self.required(&top, "variants")?, &region, &region_zones)?,
        };
        let spot = self.spot(&top, (duration, &self.written(duration_node)), &zones)?;
        let capacity_reservations = match top.get("capacityReservations") {
            Some(node) => self.capacity_reservations(node, &region, &region_zones, &zones)?,
            None => Vec::new(),
        };
        let pricing_snapshot = match top.get("pricingSnapshot") {
            Some(node) => Some(PinnedSnapshot {
                path: self.file(node, "pricingSnapshot")?,
                written: self.string(node, "pricingSnapshot")?.to_string(),
            }),
            None => None,
        };
        Ok(Scenario {
            name,
            source: source.to_path_buf(),
            seed,
            duration,
            region,
            zones,
            node_launch_latency,
            node_initialization,
            workloads,
            variants,
            spot,
            pricing_snapshot,
            initial_state,
            capacity_reservations,
        })
    }

    fn region_and_zones<C: RegionCatalog + ?Sized>(
        &self,
        top: &Mapping<'_>,
        catalog: &C,
    ) -> Result<(String, Vec<String>), ScenarioError> {
        let (region, position) = match top.get("region") {
            Some(node) => (self.string(node, "region")?, node.position),
            None => (DEFAULT_REGION, Position::START),
        };
        let Some(region_zones) = catalog.zones(region) else {
            let known = catalog.regions().into_iter().map(str::to_string).collect();
            let problem = Problem::UnknownRegion {
                region: region.to_string(),
                known,
            };
            return Err(self.invalid(position, "region", problem));
        };
        let Some(node) = top.get("zones") else {
            let zones = region_zones.into_iter().map(str::to_string).collect();
            return Ok((region.to_string(), zones));
        };
        let Value::Seq(items) = &node.value else {
            return Err(self.wrong_type(node, "zones", "a list of zones"));
        };
        if items.is_empty() {
            return Err(self.invalid(node.position, "zones", Problem::EmptyList));
        }
        let mut zones: Vec<String> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let field = index("zones", i);
            let zone = self.string(item, &field)?;
            if !region_zones.contains(&zone) {
                let problem = Problem::UnknownZone {
                    zone: zone.to_string(),
                    region: region.to_string(),
                    known: region_zones.iter().map(|z| z.to_string()).collect(),
                };
                return Err(self.invalid(item.position, &field, problem));
            }
            if zones.iter().any(|z| z == zone) {
                let problem = Problem::DuplicateZone {
                    zone: zone.to_string(),
                };
                return Err(self.invalid(item.position, &field, problem));
            }
            zones.push(zone.to_string());
        }
        Ok((region.to_string(), zones))
    }

    /// `nodeLaunchLatency`: the launch-to-ready latency, and its
    /// `initialization` part (default [`DEFAULT_NODE_INITIALIZATION`]).
    fn latency(
        &self,
        node: &Node,
        field: &str,
    ) -> Result<(LaunchLatency, SimDuration), ScenarioError> {
        let map = self.mapping(node, field, &LATENCY_KEYS)?;
        let initialization = match map.get("initialization") {
            Some(n) => self.duration(n, &map.field("initialization"))?,
            None => DEFAULT_NODE_INITIALIZATION,
        };
        Ok((self.launch_latency(node, field, &map)?, initialization))
    }

    fn launch_latency(
        &self,
        node: &Node,
        field: &str,
        map: &Mapping<'_>,
    ) -> Result<LaunchLatency, ScenarioError> {
        if let Some(fixed) = map.get("fixed") {
            if let Some((other, key, _)) = map.present(&["median", "p90"]).first() {
                let problem = Problem::Conflict {
                    first: "fixed".to_string(),
                    second: other.to_string(),
                };
                return Err(self.invalid(key.position, field, problem));
            }
            return Ok(LaunchLatency::fixed(
                self.duration(fixed, &map.field("fixed"))?,
            ));
        }
        let median = self.duration(self.required(map, "median")?, &map.field("median"))?;
        let p90 = self.duration(self.required(map, "p90")?, &map.field("p90"))?;
        LaunchLatency::lognormal(median, p90)
            .map_err(|err| self.invalid(node.position, field, err.into()))
    }

    /// The workload steps; `end` is the run's duration and its text.
    fn workloads(
        &self,
        node: &Node,
        end: (SimDuration, &str),
    ) -> Result<Vec<WorkloadStep>, ScenarioError> {
        let Value::Seq(items) = &node.value else {
            return Err(self.wrong_type(node, "workloads", "a list of workload items"));
        };
        if items.is_empty() {
            return Err(self.invalid(node.position, "workloads", Problem::EmptyList));
        }
        let mut steps = Vec::with_capacity(items.len());
        let mut generator_names = Vec::new();
        let mut traces = 0;
        // The latest time so far: (time, its text, its field).
        let mut previous: Option<(SimTime, String, String)> = None;
        for (i, item) in items.iter().enumerate() {
            let field = index("workloads", i);
            let map = self.mapping(item, &field, &WORKLOAD_KEYS)?;
            let at_field = map.field("at");
            let (at, at_text, at_position) = match map.get("at") {
                Some(node) => (
                    self.duration(node, &at_field)?,
                    self.written(node),
                    node.position,
                ),
                None => (
                    SimDuration::ZERO,
                    "0 (no at given)".to_string(),
                    item.position,
                ),
            };
            if at >= end.0 {
                let problem = Problem::AfterEnd {
                    at: at_text,
                    duration: end.1.to_string(),
                };
                return Err(self.invalid(at_position, &at_field, problem));
            }
            let at = SimTime::ZERO + at;
            if let Some((previous_at, previous_text, previous_field)) = &previous
                && at < *previous_at
            {
                let problem = Problem::OutOfOrder {
                    at: at_text,
                    previous_field: previous_field.clone(),
                    previous_at: previous_text.clone(),
                };
                return Err(self.invalid(at_position, &at_field, problem));
            }
            let (action_key, value) = self.exactly_one(&map, WORKLOAD_ACTIONS)?;
            let action_field = map.field(action_key);
            if action_key != "trace" {
                self.no_trace_options(&map, action_key)?;
            }
            let run_end = SimTime::ZERO + end.0;
            let mut position = item.position;
            let action = match action_key {
                "generate" => {
                    let (generator, until) =
                        self.generator(value, &action_field, at, run_end, &mut generator_names)?;
                    WorkloadAction::Generate { generator, until }
                }
                "trace" => {
                    traces += 1;
                    WorkloadAction::Trace(self.trace_item(&map, at, traces - 1)?)
                }
                "manifests" => WorkloadAction::Apply {
                    manifests: self.files(value, &action_field)?,
                },
                "scale" => {
                    let (action, name_position) = self.scale(value, &action_field)?;
                    position = name_position;
                    action
                }
                "nodePools" => WorkloadAction::NodePools {
                    node_pools: self.files(value, &action_field)?,
                },
                "nodeCondition" => {
                    let (action, name_position) = self.node_condition(value, &action_field)?;
                    position = name_position;
                    action
                }
                _ => {
                    let (target, name_position) = self.delete_target(value, &action_field)?;
                    position = name_position;
                    WorkloadAction::Delete { target }
                }
            };
            steps.push(WorkloadStep {
                at,
                action,
                position,
            });
            previous = Some((at, at_text, at_field));
        }
        Ok(steps)
    }

    /// The action and where its object's name is.
    fn scale(&self, node: &Node, field: &str) -> Result<(WorkloadAction, Position), ScenarioError> {
        let map = self.mapping(node, field, &SCALE_KEYS)?;
        let (target, position) = self.object_ref(&map, SCALABLE)?;
        let replicas =
            self.replica_count(self.required(&map, "replicas")?, &map.field("replicas"))?;
        Ok((WorkloadAction::Scale { target, replicas }, position))
    }

    /// `{node: NAME, type: TYPE, status: True|False|Unknown}`, and where the
    /// node's name is.
    fn node_condition(
        &self,
        node: &Node,
        field: &str,
    ) -> Result<(WorkloadAction, Position), ScenarioError> {
        use crate::karpenter::node_repair::{CONDITION_TYPES, ConditionStatus};
        let map = self.mapping(node, field, &NODE_CONDITION_KEYS)?;
        let name_node = self.required(&map, "node")?;
        let name = self.string(name_node, &map.field("node"))?.to_string();
        let condition_type = self
            .one_of(
                self.required(&map, "type")?,
                &map.field("type"),
                CONDITION_TYPES,
            )?
            .to_string();
        let status = match self.one_of(
            self.required(&map, "status")?,
            &map.field("status"),
            &["True", "False", "Unknown"],
        )? {
            "True" => ConditionStatus::True,
            "False" => ConditionStatus::False,
            _ => ConditionStatus::Unknown,
        };
        let action = WorkloadAction::NodeCondition {
            node: name,
            condition_type,
            status,
        };
        Ok((action, name_node.position))
    }

    fn delete_target(
        &self,
        node: &Node,
        field: &str,
    ) -> Result<(ObjectRef, Position), ScenarioError> {
        let map = self.mapping(node, field, &DELETE_KEYS)?;
        self.object_ref(&map, DELETABLE)
    }

    /// `<kind>: <name>` (exactly one of `kinds`) plus an optional
    /// `namespace`, and where the name is.
    fn object_ref(
        &self,
        map: &Mapping<'_>,
        kinds: &'static [&'static str],
    ) -> Result<(ObjectRef, Position), ScenarioError> {
        let (kind_key, name_node) = self.exactly_one(map, kinds)?;
        let kind = match kind_key {
            "deployment" => ObjectKind::Deployment,
            "statefulset" => ObjectKind::StatefulSet,
            "replicaset" => ObjectKind::ReplicaSet,
            "daemonset" => ObjectKind::DaemonSet,
            "job" => ObjectKind::Job,
            _ => ObjectKind::Pod,
        };
        let name_field = map.field(kind_key);
        let name = self.name(name_node, &name_field, check_dns_subdomain)?;
        let namespace = match map.get("namespace") {
            Some(node) => {
                let ns_field = map.field("namespace");
                let namespace = self.name(node, &ns_field, check_dns_label)?;
                namespace.to_string()
            }
            None => DEFAULT_NAMESPACE.to_string(),
        };
        let target = ObjectRef {
            kind,
            namespace,
            name: name.to_string(),
        };
        Ok((target, name_node.position))
    }

    fn variants(
        &self,
        node: &Node,
        region: &str,
        region_zones: &[String],
    ) -> Result<Vec<Variant>, ScenarioError> {
        let Value::Seq(items) = &node.value else {
            return Err(self.wrong_type(node, "variants", "a list of variants"));
        };
        if items.is_empty() {
            return Err(self.invalid(node.position, "variants", Problem::EmptyList));
        }
        let mut variants: Vec<Variant> = Vec::with_capacity(items.len());
        // (field, line) of each accepted variant's name, by index.
        let mut name_origins: Vec<(String, u64)> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let field = index("variants", i);
            let map = self.mapping(item, &field, &VARIANT_KEYS)?;
            let name_node = self.required(&map, "name")?;
            let name_field = map.field("name");
            let name = self.name(name_node, &name_field, check_report_name)?;
            if let Some(first) = variants.iter().position(|v| v.name == name) {
                let (first_field, first_line) = name_origins[first].clone();
                let problem = Problem::DuplicateVariant {
                    name: name.to_string(),
                    first_field,
                    first_line,
                };
                return Err(self.invalid(name_node.position, &name_field, problem));
            }
            let (key, value) = self.exactly_one(&map, PROVISIONERS)?;
            let provisioner = if key == "clusterAutoscaler" {
                Provisioner::ClusterAutoscaler(Box::new(self.cluster_autoscaler(
                    value,
                    &map.field(key),
                    region,
                    region_zones,
                )?))
            } else {
                Provisioner::Karpenter(self.karpenter(value, &map.field("karpenter"))?)
            };
            variants.push(Variant {
                name: name.to_string(),
                provisioner,
            });
            name_origins.push((field, name_node.position.line));
        }
        Ok(variants)
    }

    fn karpenter(&self, node: &Node, field: &str) -> Result<KarpenterConfig, ScenarioError> {
        let map = self.mapping(node, field, &KARPENTER_KEYS)?;
        let settings = match map.get("settings") {
            Some(value) => self.karpenter_settings(value, &map.field("settings"))?,
            None => super::KarpenterSettings::default(),
        };
        let startup_failures = match map.get("startupFailures") {
            Some(value) => self.karpenter_startup_failures(value, &map.field("startupFailures"))?,
            None => Vec::new(),
        };
        if map.get("nodePools").is_none() && self.initial_state_given.get() {
            return Ok(KarpenterConfig {
                node_pools: Vec::new(),
                settings,
                startup_failures,
                node_pool_edits: Vec::new(),
            });
        }
        let pools = self.required(&map, "nodePools")?;
        Ok(KarpenterConfig {
            node_pools: self.files(pools, &map.field("nodePools"))?,
            settings,
            startup_failures,
            node_pool_edits: Vec::new(),
        })
    }

    /// A Karpenter variant's `startupFailures`: windows in which a
    /// NodePool's launches (every NodePool's without `nodePool`) hang; the
    /// NodePool names are checked once the NodePools are read.
    fn karpenter_startup_failures(
        &self,
        node: &Node,
        field: &str,
    ) -> Result<Vec<super::StartupFailureSpec>, ScenarioError> {
        let Value::Seq(items) = &node.value else {
            return Err(self.wrong_type(node, field, "a list of startup failures"));
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let item_field = index(field, i);
            let map = self.mapping(item, &item_field, &KARPENTER_STARTUP_FAILURE_KEYS)?;
            let node_pool = match map.get("nodePool") {
                Some(n) => {
                    let pool_field = map.field("nodePool");
                    Some(super::WrittenName {
                        name: self.string(n, &pool_field)?.to_string(),
                        field: pool_field,
                        position: n.position,
                    })
                }
                None => None,
            };
            out.push(super::StartupFailureSpec {
                node_pool,
                failure: self.startup_failure_window(&map)?,
            });
        }
        Ok(out)
    }
}
