//! karpsim's generic trace CSV: one row per create, scale or delete event,
//! in time order, with a header naming the columns (any order; only
//! `time`, `event`, `kind` and `name` are required):
//!
//! | column | meaning |
//! |---|---|
//! | `time` | seconds since the trace's origin (`90`, `1.5`) or a duration (`1h30m`) |
//! | `event` | `create`, `scale` or `delete` |
//! | `kind` | `Pod`, `Deployment`, `StatefulSet`, `ReplicaSet`, `Job` or `DaemonSet` |
//! | `name` | object name (DNS-1123 subdomain) |
//! | `namespace` | default `default` |
//! | `owner` | informational: kept as the pod label `karpsim.dev/owner` |
//! | `replicas` | `create`/`scale`: replica count (Job: parallelism and completions); default 1 |
//! | `requests` | `cpu=500m;memory=1Gi;nvidia.com/gpu=1` (well-known resource names) |
//! | `limits` | same form; a resource with a limit and no request requests its limit, as in Kubernetes |
//! | `labels` | `app=web;tier=front` |
//! | `nodeSelector` | `karpenter.sh/capacity-type=spot` |
//! | `tolerations` | `key=value:Effect;key:Effect;key` (kubectl taint form; no value = `Exists`) |
//! | `duration` | run time of a Pod's or Job's pods, seconds or a duration; empty = no end |
//!
//! Empty cells take the default. Only `create` rows read the pod columns.

use std::collections::BTreeMap;

use super::{RowFormat, RowProblem, TraceAction, TraceEvent};
use crate::kube::pod::PodSpec;
use crate::kube::quantity::Quantity;
use crate::kube::resources::{ResourceKind, Resources};
use crate::kube::taints::{TaintEffect, Toleration};
use crate::scenario::DEFAULT_NAMESPACE;
use crate::scenario::limits::MAX_REPLICAS;
use crate::scenario::names::{check_dns_label, check_dns_subdomain};
use crate::sim::engine::{Target, TargetKind};
use crate::sim::parse_duration;

/// Label that keeps a generic trace row's `owner`.
pub const OWNER_LABEL: &str = "karpsim.dev/owner";

/// Every column, required ones first.
pub const COLUMNS: [&str; 13] = [
    "time",
    "event",
    "kind",
    "name",
    "namespace",
    "owner",
    "replicas",
    "requests",
    "limits",
    "labels",
    "nodeSelector",
    "tolerations",
    "duration",
];
const REQUIRED: usize = 4;

/// Column positions of a generic trace.
#[derive(Debug, Clone, Default)]
pub struct GenericFormat {
    columns: [Option<usize>; COLUMNS.len()],
}

/// One row's cells by column name.
struct Cells<'r> {
    format: &'r GenericFormat,
    record: &'r csv::StringRecord,
}

impl<'r> Cells<'r> {
    /// The trimmed cell of `column` (empty when absent).
    fn get(&self, column: &str) -> &'r str {
        COLUMNS
            .iter()
            .position(|c| *c == column)
            .and_then(|slot| self.format.columns[slot])
            .and_then(|i| self.record.get(i))
            .map_or("", str::trim)
    }
}

impl RowFormat for GenericFormat {
    fn header(&mut self, header: &csv::StringRecord) -> Result<(), String> {
        for (slot, name) in COLUMNS.iter().enumerate() {
            self.columns[slot] = header.iter().position(|h| h.trim() == *name);
        }
        if let Some(unknown) = header.iter().find(|h| !COLUMNS.contains(&h.trim())) {
            return Err(format!(
                "unknown column {unknown:?} (columns: {})",
                COLUMNS.join(", ")
            ));
        }
        match COLUMNS[..REQUIRED]
            .iter()
            .zip(&self.columns)
            .find(|(_, position)| position.is_none())
        {
            Some((name, _)) => Err(format!(
                "missing column {name:?} (required: {})",
                COLUMNS[..REQUIRED].join(", ")
            )),
            None => Ok(()),
        }
    }

    fn row(&self, record: &csv::StringRecord) -> Result<TraceEvent, RowProblem> {
        let cells = Cells {
            format: self,
            record,
        };
        let time = seconds(cells.get("time"), "time")?
            .ok_or_else(|| RowProblem::new("time", "must not be empty"))?;
        let kind = kind(cells.get("kind"))?;
        let name = cells.get("name");
        check_dns_subdomain(name).map_err(|reason| {
            RowProblem::new("name", format!("invalid name {name:?}: {reason}"))
        })?;
        let namespace = match cells.get("namespace") {
            "" => DEFAULT_NAMESPACE,
            ns => {
                check_dns_label(ns).map_err(|reason| {
                    RowProblem::new("namespace", format!("invalid namespace {ns:?}: {reason}"))
                })?;
                ns
            }
        };
        let target = Target {
            kind,
            namespace: namespace.to_string(),
            name: name.to_string(),
        };
        let replicas = match cells.get("replicas") {
            "" => 1,
            text => text
                .parse::<u32>()
                .ok()
                .filter(|r| u64::from(*r) <= MAX_REPLICAS)
                .ok_or_else(|| {
                    RowProblem::new(
                        "replicas",
                        format!(
                            "expected a whole number from 0 to {MAX_REPLICAS} (the most \
                             replicas per workload, see Limits in scenarios/README.md), \
                             found {text:?}"
                        ),
                    )
                })?,
        };
        let action = match cells.get("event") {
            "create" => {
                let duration = seconds(cells.get("duration"), "duration")?;
                TraceAction::Create {
                    pod: Box::new(pod_spec(&cells, namespace)?),
                    target,
                    replicas,
                    duration,
                }
            }
            "scale" => match kind {
                TargetKind::Deployment | TargetKind::StatefulSet | TargetKind::ReplicaSet => {
                    TraceAction::Scale { target, replicas }
                }
                other => {
                    return Err(RowProblem::new(
                        "kind",
                        format!("cannot scale a {}", other.resource()),
                    ));
                }
            },
            "delete" => TraceAction::Delete { target },
            other => {
                return Err(RowProblem::new(
                    "event",
                    format!("unknown event {other:?} (events: create, scale, delete)"),
                ));
            }
        };
        Ok(TraceEvent { time, action })
    }
}

fn kind(text: &str) -> Result<TargetKind, RowProblem> {
    Ok(match text {
        "Pod" => TargetKind::Pod,
        "Deployment" => TargetKind::Deployment,
        "StatefulSet" => TargetKind::StatefulSet,
        "ReplicaSet" => TargetKind::ReplicaSet,
        "Job" => TargetKind::Job,
        "DaemonSet" => TargetKind::DaemonSet,
        other => {
            return Err(RowProblem::new(
                "kind",
                format!(
                    "unknown kind {other:?} (kinds: Pod, Deployment, StatefulSet, ReplicaSet, Job, DaemonSet)"
                ),
            ));
        }
    })
}

/// Seconds, written as a number or a duration; `None` when empty.
fn seconds(text: &str, column: &str) -> Result<Option<f64>, RowProblem> {
    if text.is_empty() {
        return Ok(None);
    }
    if let Ok(value) = text.parse::<f64>() {
        if !value.is_finite() || value < 0.0 {
            return Err(RowProblem::new(
                column,
                format!("must be a finite number of seconds ≥ 0, found {text:?}"),
            ));
        }
        return Ok(Some(value));
    }
    if text.starts_with('-') {
        return Err(RowProblem::new(
            column,
            format!("must not be negative, found {text:?}"),
        ));
    }
    parse_duration(text)
        .map(|d| Some(d.as_millis() as f64 / 1000.0))
        .map_err(|e| RowProblem::new(column, format!("expected seconds or a duration: {e}")))
}

/// `k=v;k2=v2` pairs (empty = none).
fn pairs<'t>(text: &'t str, column: &str) -> Result<Vec<(&'t str, &'t str)>, RowProblem> {
    text.split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|pair| {
            pair.split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .filter(|(k, _)| !k.is_empty())
                .ok_or_else(|| {
                    RowProblem::new(column, format!("expected key=value, found {pair:?}"))
                })
        })
        .collect()
}

fn resources(text: &str, column: &str) -> Result<Vec<(ResourceKind, i64)>, RowProblem> {
    pairs(text, column)?
        .into_iter()
        .map(|(name, value)| {
            let kind = ResourceKind::from_well_known_name(name).ok_or_else(|| {
                RowProblem::new(
                    column,
                    format!("unknown resource {name:?} (well-known names only)"),
                )
            })?;
            let quantity = Quantity::parse(value)
                .map_err(|e| RowProblem::new(column, format!("{name}: {e}")))?;
            if quantity.is_negative() {
                return Err(RowProblem::new(
                    column,
                    format!("{name}: negative quantity {value:?}"),
                ));
            }
            Ok((kind, kind.amount(quantity)))
        })
        .collect()
}

fn tolerations(text: &str) -> Result<Vec<Toleration>, RowProblem> {
    text.split(';')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|item| {
            let (key_value, effect) = match item.rsplit_once(':') {
                Some((kv, effect)) => {
                    let effect = TaintEffect::parse(effect.trim()).ok_or_else(|| {
                        RowProblem::new(
                            "tolerations",
                            format!("unknown effect {effect:?} in {item:?}"),
                        )
                    })?;
                    (kv, Some(effect))
                }
                None => (item, None),
            };
            Ok(match key_value.split_once('=') {
                Some((key, value)) => Toleration::equal(key.trim(), value.trim(), effect),
                None => Toleration::exists(key_value.trim(), effect),
            })
        })
        .collect()
}

fn pod_spec(cells: &Cells<'_>, namespace: &str) -> Result<PodSpec, RowProblem> {
    let mut requests = Resources::ZERO.with(ResourceKind::Pods, 1);
    let limits = resources(cells.get("limits"), "limits")?;
    for (kind, amount) in &limits {
        requests.set(*kind, *amount);
    }
    for (kind, amount) in resources(cells.get("requests"), "requests")? {
        requests.set(kind, amount);
    }
    let map = |column: &str| -> Result<BTreeMap<String, String>, RowProblem> {
        Ok(pairs(cells.get(column), column)?
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect())
    };
    let mut labels = map("labels")?;
    let owner = cells.get("owner");
    if !owner.is_empty() {
        labels.insert(OWNER_LABEL.to_string(), owner.to_string());
    }
    Ok(PodSpec {
        namespace: namespace.to_string(),
        labels,
        requests,
        node_selector: map("nodeSelector")?,
        tolerations: tolerations(cells.get("tolerations"))?,
        ..PodSpec::default()
    })
}
