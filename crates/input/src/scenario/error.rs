//! Errors from reading a scenario file. Each one renders as a single line
//! that starts with `file:line:column:` and, for schema problems, the path of
//! the offending field (`workloads[2].at`), so editors and terminals can jump
//! straight to it.

use std::fmt;

use crate::karpenter::disruption::cron::CronError;
use crate::sim::spot::TimestampError;
use crate::sim::{DurationParseError, LatencyError};

/// A 1-based line and column in the scenario file (0:0 when unknown).
pub use crate::yaml::Position;

/// Why a scenario file was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScenarioError {
    /// The file itself could not be read.
    #[error("{file}: cannot read scenario file: {reason}")]
    Read {
        /// The scenario file as the caller named it.
        file: String,
        /// The operating system's explanation.
        reason: String,
    },
    /// A sweep file could not be read.
    #[error("{file}: cannot read sweep file: {reason}")]
    ReadSweep {
        /// The sweep file as the caller named it.
        file: String,
        /// The operating system's explanation.
        reason: String,
    },
    /// The text is not valid YAML, or not a single YAML document.
    #[error("{file}:{position}: {message}")]
    Yaml {
        /// The scenario file as the caller named it.
        file: String,
        /// Where the YAML reader stopped.
        position: Position,
        /// The YAML reader's explanation, on one line.
        message: String,
    },
    /// Valid YAML that does not follow the scenario schema.
    #[error("{file}:{position}: {}{problem}", FieldPrefix(field))]
    Invalid {
        /// The scenario file as the caller named it.
        file: String,
        /// Where the offending node starts.
        position: Position,
        /// Path of the offending field, e.g. `workloads[2].at`; empty for the
        /// document itself.
        field: String,
        /// What is wrong (boxed to keep `Result`s small).
        problem: Box<Problem>,
    },
}

impl ScenarioError {
    /// The schema problem, if this is one.
    pub fn problem(&self) -> Option<&Problem> {
        match self {
            ScenarioError::Invalid { problem, .. } => Some(problem),
            _ => None,
        }
    }
}

/// Renders `field: ` or nothing for the document itself.
struct FieldPrefix<'a>(&'a str);

impl fmt::Display for FieldPrefix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(f, "{}: ", self.0)
        }
    }
}

/// A schema problem in a scenario file, without its location.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// The file holds no YAML document (empty, or only comments).
    #[error("the file is empty; a scenario needs at least duration, workloads and variants")]
    EmptyDocument,
    /// A key the schema does not have.
    #[error("unknown key {key:?} (valid keys: {})", valid.join(", "))]
    UnknownKey {
        /// The key as written.
        key: String,
        /// The keys allowed at this place.
        valid: &'static [&'static str],
    },
    /// A duration that must be positive is zero.
    #[error("must be longer than 0")]
    NotPositive,
    /// A Karpenter setting at a value whose behaviour is not simulated.
    #[error("{setting}: {value} is not modelled yet by karpsim (upstream default: {default})")]
    NotModelledYet {
        /// The setting.
        setting: &'static str,
        /// The value as written.
        value: String,
        /// Upstream's default, which is modelled.
        default: &'static str,
    },
    /// A key reserved for a later version of the schema.
    #[error("{feature} ({key:?}) is not supported yet by this version of karpsim")]
    NotSupportedYet {
        /// The key as written.
        key: String,
        /// What the key will describe.
        feature: &'static str,
    },
    /// A mapping key given twice.
    #[error("duplicate key {key:?} (first given at {first})")]
    DuplicateKey {
        /// The key as written.
        key: String,
        /// Where it first appeared.
        first: Position,
    },
    /// A mapping key that is not a string.
    #[error("keys must be strings, found {found}")]
    NonStringKey {
        /// What the key is.
        found: &'static str,
    },
    /// A required key is absent.
    #[error("missing required key {key:?}")]
    MissingKey {
        /// The key that is needed.
        key: &'static str,
    },
    /// Exactly one of several keys must be present.
    #[error("{}", exactly_one_message(choices, found))]
    ExactlyOne {
        /// The keys of which one must be given.
        choices: &'static [&'static str],
        /// The keys that were given (none or several).
        found: Vec<String>,
    },
    /// Two keys that exclude each other.
    #[error("{first:?} cannot be combined with {second:?}")]
    Conflict {
        /// The key given first.
        first: String,
        /// The key that conflicts with it.
        second: String,
    },
    /// A value of the wrong YAML type.
    #[error("expected {expected}, found {found}")]
    WrongType {
        /// What the schema wants here.
        expected: &'static str,
        /// What the file has.
        found: String,
    },
    /// A duration that does not parse.
    #[error(transparent)]
    InvalidDuration(#[from] DurationParseError),
    /// The run length must be positive.
    #[error("the run must last longer than 0")]
    ZeroDuration,
    /// A negative number where only zero or more makes sense.
    #[error("must not be negative, found {text}")]
    Negative {
        /// The number as written.
        text: String,
    },
    /// A number outside the allowed range (or not a whole number).
    #[error("expected a whole number from 0 to {max}, found {text}")]
    OutOfRange {
        /// The number as written.
        text: String,
        /// The largest value allowed.
        max: u64,
    },
    /// A value past what one run simulates (see [`super::limits`]).
    #[error("{found} is over the limit of {limit} (see Limits in scenarios/README.md)")]
    OverLimit {
        /// The value, as written or as derived (`about 8640000 pods`).
        found: String,
        /// The limit and what it bounds (`100000 replicas per workload`).
        limit: String,
    },
    /// A `scale` or `delete` step whose object does not exist then.
    #[error("cannot {verb}: no {object} at {at}{hint}")]
    MissingTarget {
        /// `scale` or `delete`.
        verb: &'static str,
        /// `Deployment "web" in namespace "default"`.
        object: String,
        /// The step's time.
        at: String,
        /// What does exist, starting with `; ` (or nothing).
        hint: String,
    },
    /// An empty string where a name or path is needed.
    #[error("must not be empty")]
    EmptyString,
    /// A list that must have at least one entry.
    #[error("needs at least one entry")]
    EmptyList,
    /// A name that cannot be used.
    #[error("invalid name {name:?}: {reason}")]
    InvalidName {
        /// The name as written.
        name: String,
        /// What rule it breaks.
        reason: &'static str,
    },
    /// No `name` key, and the file name does not make a valid name.
    #[error(
        "no name given and the file name {stem:?} is not a valid name ({reason}); add a name key"
    )]
    InvalidDefaultName {
        /// The file name without extension.
        stem: String,
        /// What rule it breaks.
        reason: &'static str,
    },
    /// Two variants with the same name.
    #[error("variant name {name:?} is already used by {first_field} (line {first_line})")]
    DuplicateVariant {
        /// The repeated name.
        name: String,
        /// Field path of the first variant with that name.
        first_field: String,
        /// Line of the first variant's name.
        first_line: u64,
    },
    /// A time window whose end is not after its start.
    #[error("until ({until}) must be after from ({from})")]
    EmptyWindow {
        /// `from` as written.
        from: String,
        /// `until` as written.
        until: String,
    },
    /// A workload step at or after the end of the run.
    #[error("{at} is not before the end of the run (duration {duration})")]
    AfterEnd {
        /// The step's time as written.
        at: String,
        /// The run's duration as written.
        duration: String,
    },
    /// A workload step listed before an earlier-listed later step.
    #[error("{at} is earlier than {previous_field} ({previous_at}); list workloads in time order")]
    OutOfOrder {
        /// The step's time as written.
        at: String,
        /// Field path of the preceding step's time.
        previous_field: String,
        /// The preceding step's time as written.
        previous_at: String,
    },
    /// A region the caller's catalog does not have.
    #[error("unknown region {region:?} (known regions: {})", known.join(", "))]
    UnknownRegion {
        /// The region as written (or defaulted).
        region: String,
        /// The regions the catalog has.
        known: Vec<String>,
    },
    /// A zone that is not in the scenario's region.
    #[error("zone {zone:?} is not in region {region} (its zones: {})", known.join(", "))]
    UnknownZone {
        /// The zone as written.
        zone: String,
        /// The scenario's region.
        region: String,
        /// The region's zones.
        known: Vec<String>,
    },
    /// The same zone listed twice.
    #[error("zone {zone:?} is listed twice")]
    DuplicateZone {
        /// The repeated zone.
        zone: String,
    },
    /// The latency description is inconsistent.
    #[error(transparent)]
    Latency(#[from] LatencyError),
    /// A problem in `interruptions` or `spotPriceHistory`.
    #[error(transparent)]
    Spot(#[from] SpotProblem),
    /// A problem in a `generate` or `trace` workload item.
    #[error(transparent)]
    Workload(#[from] WorkloadProblem),
    /// A problem particular to a sweep file.
    #[error(transparent)]
    Sweep(#[from] SweepProblem),
    /// A Cluster Autoscaler setting CA itself would refuse.
    #[error(transparent)]
    ClusterAutoscaler(#[from] crate::autoscaler::CaConfigError),
    /// A value outside a fixed set.
    #[error("unknown value {found:?} (valid values: {})", valid.join(", "))]
    NotOneOf {
        /// The value as written.
        found: String,
        /// The valid values.
        valid: &'static [&'static str],
    },
    /// A name listed twice.
    #[error("{name:?} is listed twice")]
    Repeated {
        /// The name.
        name: String,
    },
    /// A zone of the region that the scenario's `zones` leave out.
    #[error("zone {zone:?} is not among the scenario's zones ({})", zones.join(", "))]
    ZoneNotUsed {
        /// The zone as written.
        zone: String,
        /// The scenario's zones.
        zones: Vec<String>,
    },
    /// A count that must be at least one.
    #[error("must be at least 1")]
    ZeroCount,
    /// `end` on an On-Demand Capacity Reservation.
    #[error(
        "end is modelled for capacity blocks only (type: capacity-block); when an ODCR ends its instances keep running as on-demand, which karpsim does not model yet"
    )]
    OdcrEnd,
    /// A price that does not parse.
    #[error("invalid price {text:?} (expected dollars per instance-hour, e.g. 0.192)")]
    InvalidPrice {
        /// The value as written.
        text: String,
    },
    /// A NodePool name no NodePool file of the variant defines.
    #[error("no NodePool {name:?} in the variant's NodePools (NodePools: {})", known.join(", "))]
    UnknownNodePool {
        /// The name as written.
        name: String,
        /// The NodePools of the variant (its files and `nodePools` steps).
        known: Vec<String>,
    },
    /// An instance type the region's catalog does not have.
    #[error("unknown instance type {name:?} in {region}{hint}")]
    UnknownInstanceType {
        /// The name as written.
        name: String,
        /// The scenario's region.
        region: String,
        /// ` (did you mean "…"?)` or nothing.
        hint: String,
    },
    /// An instance type the catalog does not sell in a zone.
    #[error("instance type {name:?} is not sold in {zone}")]
    NotSoldInZone {
        /// The name as written.
        name: String,
        /// The zone.
        zone: String,
    },
    /// A referenced file does not exist.
    #[error("file {written:?} not found (looked for {resolved:?})")]
    FileNotFound {
        /// The path as written in the scenario.
        written: String,
        /// The absolute path that was checked.
        resolved: String,
    },
    /// A referenced path exists but is not a regular file, or cannot be read.
    #[error("{written:?} is not a readable file ({reason})")]
    NotAFile {
        /// The path as written in the scenario.
        written: String,
        /// What is wrong with it.
        reason: String,
    },
}

fn exactly_one_message(choices: &[&str], found: &[String]) -> String {
    let choices = choices.join(", ");
    match found {
        [] => format!("needs exactly one of: {choices}; found none"),
        found => format!(
            "needs exactly one of: {choices}; found {}",
            found.join(" and ")
        ),
    }
}

/// A schema problem of the spot keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpotProblem {
    /// `fraction` out of range or malformed.
    #[error("invalid fraction: {0}")]
    Fraction(String),
    /// `start` is not an ISO-8601 instant.
    #[error(transparent)]
    Timestamp(#[from] TimestampError),
    /// A storm zone the scenario does not use.
    #[error("zone {zone:?} is not among the scenario's zones ({})", zones.join(", "))]
    ZoneNotInScenario {
        /// The zone as written.
        zone: String,
        /// The scenario's zones.
        zones: Vec<String>,
    },
    /// An event listed before an earlier-listed later one.
    #[error("{at} is earlier than {previous_field} ({previous_at}); list events in time order")]
    OutOfOrder {
        /// The event's time as written.
        at: String,
        /// Field path of the preceding event's time.
        previous_field: String,
        /// The preceding event's time as written.
        previous_at: String,
    },
    /// A name listed twice.
    #[error("{name:?} is listed twice")]
    Repeated {
        /// The name.
        name: String,
    },
}

/// A problem particular to a sweep file (`scenario::sweep`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SweepProblem {
    /// The file holds no YAML document.
    #[error("the file is empty; a sweep needs at least sweep, scenario and seeds")]
    Empty,
    /// `seeds: {from, to}` with `to` below `from`.
    #[error("to ({to}) must not be less than from ({from})")]
    SeedRange {
        /// `from`.
        from: u64,
        /// `to`.
        to: u64,
    },
    /// A `vary` field that is not a field path.
    #[error(transparent)]
    FieldPath(#[from] crate::nodepools::edit::FieldPathError),
    /// A `vary` field outside the NodePool's spec.
    #[error(
        "{field:?} is not under spec: vary sets fields of a NodePool's spec (spec.disruption.consolidateAfter, spec.limits.cpu, ...)"
    )]
    NotUnderSpec {
        /// The field as written.
        field: String,
    },
    /// The same field in two `vary` entries.
    #[error("{field:?} is already varied by {first_field}")]
    RepeatedField {
        /// The field as written.
        field: String,
        /// The field path of the first entry.
        first_field: String,
    },
}

/// A problem in a `generate` or `trace` item.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadProblem {
    /// A rate that does not parse.
    #[error("invalid rate {text:?}: write a number per unit, e.g. 30/h, 2/m, 0.5/s or 100/d")]
    Rate {
        /// As written.
        text: String,
    },
    /// A number outside its range.
    #[error("{what}, found {text}")]
    Range {
        /// The rule.
        what: &'static str,
        /// As written.
        text: String,
    },
    /// A resource quantity that does not parse or is not allowed.
    #[error("{0}")]
    Quantity(String),
    /// A cron schedule that does not parse.
    #[error("invalid schedule: {0}")]
    Cron(#[from] CronError),
    /// Two generators with the same name would draw the same numbers.
    #[error("generator name {0:?} is already used by an earlier generator")]
    DuplicateName(String),
    /// `until` not after `at`.
    #[error("until ({until}) must be after the item's at and before the end of the run")]
    Until {
        /// As written.
        until: String,
    },
    /// A toleration that does not parse.
    #[error("invalid toleration {0:?}: write key=value:Effect, key:Effect or key")]
    Toleration(String),
}
