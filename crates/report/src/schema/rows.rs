//! One struct per CSV file of a variant folder. Its fields, in order, are
//! the file's columns (serde names them); the writers serialize these rows
//! and the readers deserialize them, by header name.

use serde::{Deserialize, Serialize};

use super::values::{Thousandths, Usd, optional_seconds, seconds};
use crate::sim::engine::{DisruptionNote, EventRecord, NodeClaimRecord, Sample, UnremovableRecord};

/// `events.csv`: the run's event log.
pub const EVENTS_FILE: &str = "events.csv";
/// `nodeclaims.csv`: a Karpenter variant's NodeClaims.
pub const NODECLAIMS_FILE: &str = "nodeclaims.csv";
/// `nodes.csv`: a Cluster Autoscaler variant's nodes (the columns of
/// `nodeclaims.csv`, `nodepool` being the node group).
pub const NODES_FILE: &str = "nodes.csv";
/// `timeseries.csv`: one sample per simulated minute.
pub const TIMESERIES_FILE: &str = "timeseries.csv";
/// `disruption.csv`: why Karpenter did not disrupt each node.
pub const DISRUPTION_FILE: &str = "disruption.csv";
/// `scaledown.csv`: Cluster Autoscaler's unremovable reasons.
pub const SCALEDOWN_FILE: &str = "scaledown.csv";

/// A row of one of the CSV files.
pub trait Row {
    /// The header: the field names, in file order.
    fn columns() -> &'static [&'static str];

    /// Columns that files written by earlier versions may lack (read as
    /// empty).
    const OPTIONAL_COLUMNS: &'static [&'static str] = &[];
}

/// The names serde gives the fields of `T`, in declaration order (which is
/// also the order `T` is serialized in).
pub(super) fn field_names<T: Deserialize<'static>>() -> &'static [&'static str] {
    use serde::de::{self, Visitor};

    struct FieldNames(Option<&'static [&'static str]>);

    impl<'de> de::Deserializer<'de> for &mut FieldNames {
        type Error = de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = Some(fields);
            Err(de::Error::custom("only the field names are read"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }

    let mut names = FieldNames(None);
    let _ = T::deserialize(&mut names);
    names.0.expect("a row is a struct")
}

/// One row of `events.csv`, like a Kubernetes Event. `S` is `&str` when
/// written from the run's events or read without copying, `String` when
/// kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventRow<S = String> {
    /// Simulated time, milliseconds from the start.
    #[serde(rename = "time_s", with = "seconds")]
    pub time_ms: u64,
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub kind: S,
    /// The event reason (`Launched`, `Scheduled`, ...).
    pub reason: S,
    /// `pod/ns/name`, `nodeclaim/name`, `node/name`, `deployment/ns/name`...
    pub object: S,
    /// The event message.
    pub message: S,
}

impl<S> Row for EventRow<S> {
    fn columns() -> &'static [&'static str] {
        field_names::<EventRow<&'static str>>()
    }
}

impl<'a> From<&'a EventRecord> for EventRow<&'a str> {
    fn from(event: &'a EventRecord) -> EventRow<&'a str> {
        EventRow {
            time_ms: event.time.as_millis(),
            kind: event.kind.as_str(),
            reason: &event.reason,
            object: &event.object,
            message: &event.message,
        }
    }
}

impl EventRow {
    /// The row borrowing its strings.
    pub fn borrowed(&self) -> EventRow<&str> {
        EventRow {
            time_ms: self.time_ms,
            kind: &self.kind,
            reason: &self.reason,
            object: &self.object,
            message: &self.message,
        }
    }
}

impl EventRow<&str> {
    /// The row with its own strings.
    pub fn to_owned(&self) -> EventRow {
        EventRow {
            time_ms: self.time_ms,
            kind: self.kind.to_string(),
            reason: self.reason.to_string(),
            object: self.object.to_string(),
            message: self.message.to_string(),
        }
    }
}

/// One row of `nodeclaims.csv` (or `nodes.csv`): a NodeClaim and its bill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeClaimRow {
    /// NodeClaim (or node) name.
    pub name: String,
    /// NodePool (or node group).
    pub nodepool: String,
    /// Instance type.
    pub instance_type: String,
    /// `on-demand`, `spot`, ...
    pub capacity_type: String,
    /// Zone.
    pub zone: String,
    /// Hourly price at launch.
    pub price_usd_per_hour: Usd,
    /// Launch (billing start), ms.
    #[serde(rename = "launched_at_s", with = "seconds")]
    pub launched_at_ms: u64,
    /// Registered and initialized, ms.
    #[serde(rename = "ready_at_s", with = "optional_seconds")]
    pub ready_at_ms: Option<u64>,
    /// Deletion, ms (`None`: still running at the end of the run).
    #[serde(rename = "deleted_at_s", with = "optional_seconds")]
    pub deleted_at_ms: Option<u64>,
    /// Why it was deleted (empty when it ran to the end).
    pub reason_deleted: String,
    /// What it cost from launch to deletion or the end of the run.
    pub cost_usd: Usd,
    /// Why it was launched: `provisioning`, or the disruption reason of
    /// the nodes it replaced.
    #[serde(default)]
    pub reason_launched: String,
}

impl Row for NodeClaimRow {
    fn columns() -> &'static [&'static str] {
        field_names::<Self>()
    }

    const OPTIONAL_COLUMNS: &'static [&'static str] = &["reason_launched"];
}

impl From<&NodeClaimRecord> for NodeClaimRow {
    fn from(claim: &NodeClaimRecord) -> NodeClaimRow {
        NodeClaimRow {
            name: claim.name.clone(),
            nodepool: claim.nodepool.clone(),
            instance_type: claim.instance_type.clone(),
            capacity_type: claim.capacity_type.label().to_string(),
            zone: claim.zone.clone(),
            price_usd_per_hour: claim.price.into(),
            launched_at_ms: claim.launched_at.as_millis(),
            ready_at_ms: claim.ready_at.map(|t| t.as_millis()),
            deleted_at_ms: claim.deleted_at.map(|t| t.as_millis()),
            reason_deleted: claim.reason_deleted.clone(),
            cost_usd: claim.cost.into(),
            reason_launched: claim.reason_launched.clone(),
        }
    }
}

/// The column of `timeseries.csv` holding the cheapest possible $/h for
/// the requests of that minute; files of earlier versions lack it.
pub const LOWER_BOUND_COLUMN: &str = "lower_bound_usd_per_hour";

/// One row of `timeseries.csv`: the cluster at one simulated minute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeseriesRow {
    /// The instant, ms from the start.
    #[serde(rename = "time_s", with = "seconds")]
    pub time_ms: u64,
    /// Nodes launched and not yet deleted.
    pub nodes: u64,
    /// Nodes Ready (registered and initialized).
    pub nodes_ready: u64,
    /// The fleet's price per hour.
    pub cost_usd_per_hour: Usd,
    /// Requested CPU (cores) of pods on nodes.
    pub cpu_requested: Thousandths,
    /// Allocatable CPU (cores).
    pub cpu_allocatable: Thousandths,
    /// Requested memory (GiB).
    pub memory_requested_gib: Thousandths,
    /// Allocatable memory (GiB).
    pub memory_allocatable_gib: Thousandths,
    /// Pods waiting for a node.
    pub pending_pods: u64,
    /// The cost lower bound's rate (`None` when the file has no value).
    #[serde(default)]
    pub lower_bound_usd_per_hour: Option<Usd>,
}

impl Row for TimeseriesRow {
    fn columns() -> &'static [&'static str] {
        field_names::<Self>()
    }

    const OPTIONAL_COLUMNS: &'static [&'static str] = &[LOWER_BOUND_COLUMN];
}

impl From<&Sample> for TimeseriesRow {
    fn from(s: &Sample) -> TimeseriesRow {
        TimeseriesRow {
            time_ms: s.time.as_millis(),
            nodes: s.nodes as u64,
            nodes_ready: s.nodes_ready as u64,
            cost_usd_per_hour: s.hourly_rate.into(),
            cpu_requested: Thousandths(s.cpu_requested_millis),
            cpu_allocatable: Thousandths(s.cpu_allocatable_millis),
            memory_requested_gib: Thousandths::gib(s.memory_requested_bytes),
            memory_allocatable_gib: Thousandths::gib(s.memory_allocatable_bytes),
            pending_pods: s.pending_pods as u64,
            lower_bound_usd_per_hour: Some(s.lower_bound_rate.into()),
        }
    }
}

/// One row of `disruption.csv`: the last published reason the disruption
/// controller did not disrupt a node (or dropped its command), with the
/// time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DisruptionRow {
    /// The node.
    pub node: String,
    /// When the reason was given, ms.
    #[serde(rename = "time_s", with = "seconds")]
    pub time_ms: u64,
    /// The reason.
    pub reason: String,
}

impl Row for DisruptionRow {
    fn columns() -> &'static [&'static str] {
        field_names::<Self>()
    }
}

impl From<&DisruptionNote> for DisruptionRow {
    fn from(note: &DisruptionNote) -> DisruptionRow {
        DisruptionRow {
            node: note.node.clone(),
            time_ms: note.time.as_millis(),
            reason: note.reason.clone(),
        }
    }
}

/// One row of `scaledown.csv`: a node's unremovable reason (as Cluster
/// Autoscaler names it), each time it changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScaleDownRow {
    /// When the reason was given, ms.
    #[serde(rename = "time_s", with = "seconds")]
    pub time_ms: u64,
    /// The node.
    pub node: String,
    /// The reason.
    pub reason: String,
}

impl Row for ScaleDownRow {
    fn columns() -> &'static [&'static str] {
        field_names::<Self>()
    }
}

impl From<&UnremovableRecord> for ScaleDownRow {
    fn from(record: &UnremovableRecord) -> ScaleDownRow {
        ScaleDownRow {
            time_ms: record.time.as_millis(),
            node: record.node.clone(),
            reason: record.reason.clone(),
        }
    }
}

/// A scale-down reason is a reason a node was kept, like a disruption
/// one.
impl From<ScaleDownRow> for DisruptionRow {
    fn from(row: ScaleDownRow) -> DisruptionRow {
        DisruptionRow {
            node: row.node,
            time_ms: row.time_ms,
            reason: row.reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_the_field_names_in_order() {
        assert_eq!(
            EventRow::<String>::columns(),
            ["time_s", "type", "reason", "object", "message"]
        );
        assert_eq!(DisruptionRow::columns(), ["node", "time_s", "reason"]);
        assert_eq!(ScaleDownRow::columns(), ["time_s", "node", "reason"]);
        assert_eq!(TimeseriesRow::columns().last(), Some(&LOWER_BOUND_COLUMN));
        for optional in NodeClaimRow::OPTIONAL_COLUMNS {
            assert!(NodeClaimRow::columns().contains(optional));
        }
    }
}
