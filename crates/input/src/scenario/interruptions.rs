//! The spot-market part of a scenario: the `interruptions` block and
//! `spotPriceHistory`, checked like the rest of the file (errors name
//! `file:line:column` and the field), and [`load`], which reads the trace
//! and price-history files they reference, with row-level errors, into the
//! inputs the engine consumes.
//!
//! ```yaml
//! interruptions:
//!   advisorHazard: true            # optional, default false
//!   rebalanceRecommendations: true # optional: true (10m lead), false, or {leadTime: 5m}
//!   events:                        # optional capacity storms, in time order
//!     - {at: 5h, instanceTypes: [c6a.xlarge], zones: [us-east-1a], fraction: 1.0, unavailableFor: 30m}
//!   trace: interruptions.csv       # optional; or {file: x.csv, start: 2024-03-01T00:00:00Z}
//! spotPriceHistory: prices.json    # optional; or {file: prices.json, start: 2021-01-20T00:00:00Z}
//! ```
//!
//! - `advisorHazard`: every spot node gets a constant interruption hazard
//!   from the Spot Advisor band of its offering
//!   ([`band_hazard_per_hour`](crate::sim::spot::band_hazard_per_hour)).
//! - `rebalanceRecommendations`: a rebalance recommendation precedes every
//!   notice by `leadTime` (default
//!   [`DEFAULT_REBALANCE_LEAD`](crate::sim::spot::DEFAULT_REBALANCE_LEAD)),
//!   never before the node's launch.
//! - `events`: `at` (required, before the end of the run, in time order),
//!   `instanceTypes` and `zones` (non-empty lists without repeats; omitted
//!   means all; zones must be among the scenario's zones), `fraction` of
//!   the matching running spot nodes to interrupt (greater than 0, at most
//!   1, at most six decimals; default 1; rounded up to whole nodes) and
//!   `unavailableFor` (default 0: how long the matching offerings cannot
//!   be launched from `at`) and `capacityType` (`spot`, the default, or
//!   `on-demand`, or a list of both: which offerings the outage covers;
//!   nodes get notices only when spot is listed).
//! - `trace`: a CSV `time,instance_type,zone[,node]` of notices
//!   ([`parse_trace`]); wall-clock times need `start`.
//! - `spotPriceHistory`: a `DescribeSpotPriceHistory` JSON or a CSV
//!   `time,instance_type,zone,price` ([`PriceHistory`]); wall-clock times
//!   are placed on the run's clock by `start`, by default the file's
//!   earliest timestamp.
//! - `start` is an ISO-8601 instant such as `2021-01-20T00:00:00Z` (quote
//!   it or not; `+00:00` offsets work too): the wall-clock time of the run's
//!   time 0.
//!
//! Paths are relative to the scenario file, like every other path.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::super::error::{Position, Problem, ScenarioError};
use super::super::yaml::{Node, Value};
use super::{Keys, Mapping, Reader, index};
use crate::cloud::{CapacityType, Catalog};
use crate::sim::spot::{
    DEFAULT_REBALANCE_LEAD, Fraction, InterruptionSettings, NameFilter, PriceChange, PriceHistory,
    SpotFileError, Storm, Timestamp, parse_trace,
};
use crate::time::{SimDuration, SimTime};

/// The spot-market inputs of a scenario (both parts optional).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpotConfig {
    /// The `interruptions` block, when given.
    pub interruptions: Option<InterruptionsConfig>,
    /// The `spotPriceHistory` file, when given.
    pub price_history: Option<TimedFile>,
}

/// The `interruptions` block.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InterruptionsConfig {
    /// Hazard interruptions from each offering's Spot Advisor band.
    pub advisor_hazard: bool,
    /// Lead of rebalance recommendations before notices; `None`: off.
    pub rebalance_lead: Option<SimDuration>,
    /// Capacity storms, in time order.
    pub storms: Vec<Storm>,
    /// Where each storm's instance types are written, checked against the
    /// catalog by [`load`].
    pub storm_instance_types: Vec<WrittenName>,
    /// The interruption trace, when given.
    pub trace: Option<TimedFile>,
}

/// A name written in the scenario file, with its place for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenName {
    /// The name.
    pub name: String,
    /// Its field path, e.g. `interruptions.events[0].instanceTypes[1]`.
    pub field: String,
    /// Where it is.
    pub position: Position,
}

/// A referenced file whose rows may carry wall-clock times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedFile {
    /// Absolute path.
    pub path: PathBuf,
    /// The wall-clock instant of the run's time 0, when given.
    pub start: Option<Timestamp>,
}

pub use crate::scenario::error::SpotProblem;

const INTERRUPTION_KEYS: Keys = Keys {
    valid: &[
        "advisorHazard",
        "rebalanceRecommendations",
        "events",
        "trace",
    ],
    reserved: &[],
};

const REBALANCE_KEYS: Keys = Keys {
    valid: &["leadTime"],
    reserved: &[],
};

const STORM_KEYS: Keys = Keys {
    valid: &[
        "at",
        "instanceTypes",
        "zones",
        "fraction",
        "unavailableFor",
        "capacityType",
    ],
    reserved: &[],
};

const TIMED_FILE_KEYS: Keys = Keys {
    valid: &["file", "start"],
    reserved: &[],
};

impl Reader<'_> {
    /// Reads `interruptions` and `spotPriceHistory` from the top-level
    /// mapping; `end` is the run's duration and its text, `zones` the
    /// scenario's zones.
    pub(super) fn spot(
        &self,
        top: &Mapping<'_>,
        end: (SimDuration, &str),
        zones: &[String],
    ) -> Result<SpotConfig, ScenarioError> {
        let interruptions = match top.get("interruptions") {
            Some(node) => Some(self.interruptions(node, end, zones)?),
            None => None,
        };
        let price_history = match top.get("spotPriceHistory") {
            Some(node) => Some(self.timed_file(node, "spotPriceHistory")?),
            None => None,
        };
        Ok(SpotConfig {
            interruptions,
            price_history,
        })
    }

    fn spot_problem(&self, node: &Node, field: &str, problem: SpotProblem) -> ScenarioError {
        self.invalid(node.position, field, Problem::Spot(problem))
    }

    fn interruptions(
        &self,
        node: &Node,
        end: (SimDuration, &str),
        zones: &[String],
    ) -> Result<InterruptionsConfig, ScenarioError> {
        let map = self.mapping(node, "interruptions", &INTERRUPTION_KEYS)?;
        let mut config = InterruptionsConfig::default();
        if let Some(node) = map.get("advisorHazard") {
            config.advisor_hazard = self.boolean(node, &map.field("advisorHazard"))?;
        }
        if let Some(node) = map.get("rebalanceRecommendations") {
            let field = map.field("rebalanceRecommendations");
            config.rebalance_lead = match &node.value {
                Value::Bool(true) => Some(DEFAULT_REBALANCE_LEAD),
                Value::Bool(false) => None,
                Value::Map(_) => {
                    let lead = self.mapping(node, &field, &REBALANCE_KEYS)?;
                    let time = self.required(&lead, "leadTime")?;
                    Some(self.duration(time, &lead.field("leadTime"))?)
                }
                _ => return Err(self.wrong_type(node, &field, "true, false or {leadTime: 10m}")),
            };
        }
        if let Some(node) = map.get("events") {
            self.storms(node, &map.field("events"), end, zones, &mut config)?;
        }
        if let Some(node) = map.get("trace") {
            config.trace = Some(self.timed_file(node, &map.field("trace"))?);
        }
        Ok(config)
    }

    fn boolean(&self, node: &Node, field: &str) -> Result<bool, ScenarioError> {
        match node.value {
            Value::Bool(value) => Ok(value),
            _ => Err(self.wrong_type(node, field, "true or false")),
        }
    }

    fn storms(
        &self,
        node: &Node,
        field: &str,
        end: (SimDuration, &str),
        zones: &[String],
        config: &mut InterruptionsConfig,
    ) -> Result<(), ScenarioError> {
        let Value::Seq(items) = &node.value else {
            return Err(self.wrong_type(node, field, "a list of events"));
        };
        // The latest time so far: (time, its text, its field).
        let mut previous: Option<(SimTime, String, String)> = None;
        for (i, item) in items.iter().enumerate() {
            let item_field = index(field, i);
            let map = self.mapping(item, &item_field, &STORM_KEYS)?;
            let at_node = self.required(&map, "at")?;
            let at_field = map.field("at");
            let at_text = self.written(at_node);
            let at = self.duration(at_node, &at_field)?;
            if at >= end.0 {
                let problem = Problem::AfterEnd {
                    at: at_text,
                    duration: end.1.to_string(),
                };
                return Err(self.invalid(at_node.position, &at_field, problem));
            }
            let at = SimTime::ZERO + at;
            if let Some((previous_at, previous_text, previous_field)) = &previous
                && at < *previous_at
            {
                let problem = SpotProblem::OutOfOrder {
                    at: at_text,
                    previous_field: previous_field.clone(),
                    previous_at: previous_text.clone(),
                };
                return Err(self.spot_problem(at_node, &at_field, problem));
            }
            let instance_types = match map.get("instanceTypes") {
                Some(node) => {
                    let names = self.names(node, &map.field("instanceTypes"))?;
                    for (name, field, position) in &names {
                        config.storm_instance_types.push(WrittenName {
                            name: name.clone(),
                            field: field.clone(),
                            position: *position,
                        });
                    }
                    NameFilter::Only(names.into_iter().map(|(name, _, _)| name).collect())
                }
                None => NameFilter::All,
            };
            let storm_zones = match map.get("zones") {
                Some(node) => {
                    let names = self.names(node, &map.field("zones"))?;
                    for (zone, field, position) in &names {
                        if !zones.contains(zone) {
                            let problem = SpotProblem::ZoneNotInScenario {
                                zone: zone.clone(),
                                zones: zones.to_vec(),
                            };
                            return Err(self.invalid(*position, field, Problem::Spot(problem)));
                        }
                    }
                    NameFilter::Only(names.into_iter().map(|(name, _, _)| name).collect())
                }
                None => NameFilter::All,
            };
            let fraction = match map.get("fraction") {
                Some(node) => self.fraction(node, &map.field("fraction"))?,
                None => Fraction::ONE,
            };
            let unavailable_for = match map.get("unavailableFor") {
                Some(node) => self.duration(node, &map.field("unavailableFor"))?,
                None => SimDuration::ZERO,
            };
            let capacity_types = match map.get("capacityType") {
                Some(node) => self.storm_capacity_types(node, &map.field("capacityType"))?,
                None => Storm::spot_only(),
            };
            config.storms.push(Storm {
                at,
                instance_types,
                zones: storm_zones,
                fraction,
                unavailable_for,
                capacity_types,
            });
            previous = Some((at, self.written(at_node), at_field));
        }
        Ok(())
    }

    /// A storm's `capacityType`: `spot` or `on-demand`, or a list of them.
    fn storm_capacity_types(
        &self,
        node: &Node,
        field: &str,
    ) -> Result<BTreeSet<CapacityType>, ScenarioError> {
        const VALID: &[&str] = &["spot", "on-demand"];
        let written: Vec<(String, Position)> = match &node.value {
            Value::Seq(_) => self
                .names(node, field)?
                .into_iter()
                .map(|(name, _, position)| (name, position))
                .collect(),
            _ => vec![(self.string(node, field)?.to_string(), node.position)],
        };
        let mut types = BTreeSet::new();
        for (text, position) in written {
            let capacity_type = match text.as_str() {
                "spot" => CapacityType::Spot,
                "on-demand" => CapacityType::OnDemand,
                _ => {
                    let problem = Problem::NotOneOf {
                        found: text,
                        valid: VALID,
                    };
                    return Err(self.invalid(position, field, problem));
                }
            };
            types.insert(capacity_type);
        }
        Ok(types)
    }

    /// A non-empty list of distinct non-empty strings, each with its field
    /// and position.
    fn names(
        &self,
        node: &Node,
        field: &str,
    ) -> Result<Vec<(String, String, Position)>, ScenarioError> {
        let Value::Seq(items) = &node.value else {
            return Err(self.wrong_type(node, field, "a list of names"));
        };
        if items.is_empty() {
            return Err(self.invalid(node.position, field, Problem::EmptyList));
        }
        let mut names: Vec<(String, String, Position)> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let item_field = index(field, i);
            let name = self.string(item, &item_field)?;
            if names.iter().any(|(seen, _, _)| seen == name) {
                let problem = SpotProblem::Repeated {
                    name: name.to_string(),
                };
                return Err(self.spot_problem(item, &item_field, problem));
            }
            names.push((name.to_string(), item_field, item.position));
        }
        Ok(names)
    }

    /// A number in (0, 1], read exactly as written.
    fn fraction(&self, node: &Node, field: &str) -> Result<Fraction, ScenarioError> {
        match node.value {
            Value::Int(_) | Value::Float(_) => Fraction::parse(&self.raw(node))
                .map_err(|reason| self.spot_problem(node, field, SpotProblem::Fraction(reason))),
            _ => Err(self.wrong_type(node, field, "a number greater than 0 and at most 1")),
        }
    }

    /// `path` or `{file: path, start: <ISO-8601>}`.
    fn timed_file(&self, node: &Node, field: &str) -> Result<TimedFile, ScenarioError> {
        match &node.value {
            Value::Str(_) => Ok(TimedFile {
                path: self.file(node, field)?,
                start: None,
            }),
            Value::Map(_) => {
                let map = self.mapping(node, field, &TIMED_FILE_KEYS)?;
                let file = self.required(&map, "file")?;
                let path = self.file(file, &map.field("file"))?;
                let start = match map.get("start") {
                    Some(node) => {
                        let start_field = map.field("start");
                        let text = self.string(node, &start_field)?;
                        let instant = Timestamp::parse(text)
                            .map_err(|err| self.spot_problem(node, &start_field, err.into()))?;
                        Some(instant)
                    }
                    None => None,
                };
                Ok(TimedFile { path, start })
            }
            _ => Err(self.wrong_type(node, field, "a file path or {file: ..., start: ...}")),
        }
    }
}

/// The names a scenario's spot inputs are checked against.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KnownNames {
    /// The region.
    pub region: String,
    /// Every zone of the region.
    pub region_zones: Vec<String>,
    /// Every instance type of the region's catalog.
    pub instance_types: BTreeSet<String>,
}

impl KnownNames {
    /// The names of a loaded catalog.
    pub fn from_catalog(catalog: &Catalog) -> KnownNames {
        KnownNames {
            region: catalog.region().to_string(),
            region_zones: catalog.zones().iter().map(|z| z.name.to_string()).collect(),
            instance_types: catalog
                .instance_types()
                .iter()
                .map(|t| t.name().to_string())
                .collect(),
        }
    }
}

/// The spot inputs of a run, read and checked.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpotInputs {
    /// Hazard flag, rebalance lead, storms and trace notices.
    pub interruptions: InterruptionSettings,
    /// Spot price changes before the end of the run, by time, then instance
    /// type, then zone.
    pub price_changes: Vec<PriceChange>,
    /// Rows ignored on purpose, one line each.
    pub warnings: Vec<String>,
}

/// Why a scenario's spot files could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpotInputError {
    /// A file could not be read.
    #[error("cannot read {file}: {reason}")]
    Read {
        /// The file.
        file: String,
        /// The OS error.
        reason: String,
    },
    /// A file is not UTF-8 text.
    #[error("{file}:{}: {error}", error.position)]
    NotUtf8 {
        /// The file.
        file: String,
        /// Where its first invalid byte is.
        error: crate::yaml::NotUtf8,
    },
    /// A row or field of a file is wrong.
    #[error(transparent)]
    File(#[from] SpotFileError),
    /// A storm names an instance type the catalog does not have.
    #[error(
        "{file}:{position}: {field}: unknown instance type {name:?} (not in the {region} catalog)"
    )]
    UnknownInstanceType {
        /// The scenario file.
        file: String,
        /// Where the name is.
        position: Position,
        /// Its field path.
        field: String,
        /// The name.
        name: String,
        /// The region.
        region: String,
    },
}

/// Reads the trace and price-history files of `spot` (a scenario of
/// `duration` over `zones`, read from `scenario_file`) and checks every row
/// against `known`:
///
/// - trace rows must name a catalog instance type and one of the scenario's
///   zones (a notice elsewhere could never hit a node);
/// - price-history rows must name a zone of the region; rows for instance
///   types outside the catalog are skipped with one warning, since a real
///   `DescribeSpotPriceHistory` dump lists types karpsim does not model;
///   a history with no usable row is an error;
/// - storms' instance types must be in the catalog.
pub fn load(
    spot: &SpotConfig,
    scenario_file: &Path,
    duration: SimDuration,
    zones: &[String],
    known: &KnownNames,
) -> Result<SpotInputs, SpotInputError> {
    let mut inputs = SpotInputs::default();
    if let Some(config) = &spot.interruptions {
        if let Some(unknown) = config
            .storm_instance_types
            .iter()
            .find(|n| !known.instance_types.contains(&n.name))
        {
            return Err(SpotInputError::UnknownInstanceType {
                file: shown(scenario_file),
                position: unknown.position,
                field: unknown.field.clone(),
                name: unknown.name.clone(),
                region: known.region.clone(),
            });
        }
        inputs.interruptions = InterruptionSettings {
            advisor_hazard: config.advisor_hazard,
            rebalance_lead: config.rebalance_lead,
            storms: config.storms.clone(),
            trace: Vec::new(),
        };
        if let Some(trace) = &config.trace {
            let file = shown(&trace.path);
            let notices = parse_trace(&read(&trace.path)?, &file, trace.start)?;
            for notice in &notices {
                let problem = |field: &str, reason: String| SpotFileError::Field {
                    file: file.clone(),
                    row: notice.row,
                    field: field.to_string(),
                    reason,
                };
                if !known.instance_types.contains(&notice.instance_type) {
                    return Err(problem(
                        "instance_type",
                        format!(
                            "unknown instance type {:?} (not in the {} catalog)",
                            notice.instance_type, known.region
                        ),
                    )
                    .into());
                }
                if !zones.contains(&notice.zone) {
                    return Err(problem(
                        "zone",
                        format!(
                            "zone {:?} is not among the scenario's zones ({})",
                            notice.zone,
                            zones.join(", ")
                        ),
                    )
                    .into());
                }
            }
            let end = SimTime::ZERO + duration;
            inputs.interruptions.trace = notices.into_iter().filter(|n| n.at < end).collect();
        }
    }
    if let Some(history) = &spot.price_history {
        let file = shown(&history.path);
        let mut parsed = PriceHistory::parse(&read(&history.path)?, &file)?;
        if let Some(point) = parsed
            .points
            .iter()
            .find(|p| !known.region_zones.contains(&p.zone))
        {
            let field = match point.row {
                crate::sim::spot::RowRef::Line(_) => "zone",
                crate::sim::spot::RowRef::Item(_) => "AvailabilityZone",
            };
            return Err(SpotFileError::Field {
                file,
                row: point.row,
                field: field.to_string(),
                reason: format!(
                    "zone {:?} is not in region {} (its zones: {})",
                    point.zone,
                    known.region,
                    known.region_zones.join(", ")
                ),
            }
            .into());
        }
        let unknown: BTreeSet<String> = parsed
            .points
            .iter()
            .filter(|p| !known.instance_types.contains(&p.instance_type))
            .map(|p| p.instance_type.clone())
            .collect();
        if !unknown.is_empty() {
            let before = parsed.points.len();
            parsed
                .points
                .retain(|p| known.instance_types.contains(&p.instance_type));
            const SHOWN: usize = 10;
            let mut names: Vec<String> = unknown.iter().take(SHOWN).cloned().collect();
            if unknown.len() > SHOWN {
                names.push("...".to_string());
            }
            inputs.warnings.push(format!(
                "{file}: {} rows for {} instance types not in the {} catalog ignored ({})",
                before - parsed.points.len(),
                unknown.len(),
                known.region,
                names.join(", ")
            ));
        }
        if parsed.points.is_empty() {
            return Err(SpotFileError::File {
                file,
                reason: "no Linux/UNIX price rows for instance types of the catalog".to_string(),
            }
            .into());
        }
        let end = SimTime::ZERO + duration;
        inputs.price_changes = parsed
            .changes(&file, history.start)?
            .into_iter()
            .filter(|change| change.at < end)
            .collect();
    }
    Ok(inputs)
}

fn read(path: &Path) -> Result<String, SpotInputError> {
    let bytes = std::fs::read(path).map_err(|err| SpotInputError::Read {
        file: shown(path),
        reason: err.to_string(),
    })?;
    match crate::yaml::utf8_text(&bytes) {
        Ok(text) => Ok(text.to_string()),
        Err(error) => Err(SpotInputError::NotUtf8 {
            file: shown(path),
            error,
        }),
    }
}

/// A path as the user would write it: relative to the working directory
/// when it is below it.
fn shown(path: &Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf())
        .display()
        .to_string()
}

#[cfg(test)]
#[path = "interruptions_tests.rs"]
mod tests;
