//! `karpsim explain`: one object's decision history from a report folder,
//! written the way `kubectl describe` shows events — a few facts about the
//! object, then an `Events:` table (Type, Reason, At, From, Message) in
//! simulated time order.
//!
//! A NodeClaim's history holds the events of `nodeclaim/NAME` and of its
//! node `node/NAME`; a pod's holds the events of `pod/NS/NAME` and its
//! owner's `SuccessfulCreate` event for it. Pure: works on parsed files.

use std::collections::BTreeSet;

use super::read::{Autoscaler, VariantReport, sim_time};
use super::schema::{EventRow, NodeClaimRow};
use super::table::{Align, write_table};
use crate::suggest::levenshtein as edit_distance;

/// What to explain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A NodeClaim (or, for Cluster Autoscaler, a node) by name.
    NodeClaim(String),
    /// A pod as `ns/name` or `name`.
    Pod(String),
}

/// Why nothing could be explained.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExplainError {
    /// `--variant` names no variant of the report.
    #[error("no variant named {name:?} (variants: {})", known.join(", "))]
    UnknownVariant {
        /// The name given.
        name: String,
        /// The report's variants.
        known: Vec<String>,
    },
    /// No such NodeClaim or pod in any variant looked at.
    #[error("no {kind} named {name:?}{}", near_text(near))]
    Unknown {
        /// `nodeclaim` or `pod`.
        kind: &'static str,
        /// The name given.
        name: String,
        /// Similar names that do exist.
        near: Near,
    },
    /// A bare pod name that exists in several namespaces.
    #[error("pod name {name:?} is ambiguous: {}", candidates.join(", "))]
    AmbiguousPod {
        /// The name given.
        name: String,
        /// Every `ns/name` it could mean.
        candidates: Vec<String>,
    },
}

fn near_text(near: &Near) -> String {
    match near {
        Near::Close(names) => format!(" (did you mean: {}?)", names.join(", ")),
        Near::Nearest(names) if !names.is_empty() => {
            format!(" (nearest: {})", names.join(", "))
        }
        Near::Nearest(_) => String::new(),
    }
}

/// Names that exist, offered in place of an unknown one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Near {
    /// Names within two edits of it, or containing it.
    Close(Vec<String>),
    /// With none close, the few least far (empty when nothing exists).
    Nearest(Vec<String>),
}

/// The history of `target` in each of `variants` (or only in `variant`),
/// one block per variant where the object exists.
pub fn explain(
    variants: &[VariantReport],
    target: &Target,
    variant: Option<&str>,
) -> Result<String, ExplainError> {
    let selected: Vec<&VariantReport> = match variant {
        Some(name) => {
            let found = variants.iter().find(|v| v.name == name).ok_or_else(|| {
                ExplainError::UnknownVariant {
                    name: name.to_string(),
                    known: variants.iter().map(|v| v.name.clone()).collect(),
                }
            })?;
            vec![found]
        }
        None => variants.iter().collect(),
    };
    let show_variant = selected.len() > 1 || variant.is_some();
    let mut blocks = Vec::new();
    match target {
        Target::NodeClaim(name) => {
            for v in &selected {
                if let Some(block) = explain_nodeclaim(v, name) {
                    blocks.push((v.name.as_str(), block));
                }
            }
            if blocks.is_empty() {
                let known: BTreeSet<&str> =
                    selected.iter().flat_map(|v| nodeclaim_names(v)).collect();
                return Err(ExplainError::Unknown {
                    kind: "nodeclaim",
                    name: name.clone(),
                    near: near_matches(name, known),
                });
            }
        }
        Target::Pod(name) => {
            let known: BTreeSet<String> = selected.iter().flat_map(|v| pod_ids(v)).collect();
            let pod = resolve_pod(name, &known)?;
            for v in &selected {
                if let Some(block) = explain_pod(v, &pod) {
                    blocks.push((v.name.as_str(), block));
                }
            }
        }
    }
    let mut text = String::new();
    for (index, (name, block)) in blocks.iter().enumerate() {
        if index > 0 {
            text.push('\n');
        }
        if show_variant {
            text.push_str(&fact("Variant", name));
        }
        text.push_str(block);
    }
    Ok(text)
}

/// The names of every NodeClaim (or node) a variant knows of.
fn nodeclaim_names(v: &VariantReport) -> impl Iterator<Item = &str> {
    v.nodeclaims
        .iter()
        .map(|c| c.name.as_str())
        .chain(v.events.iter().filter_map(|e| {
            e.object
                .strip_prefix("nodeclaim/")
                .or_else(|| e.object.strip_prefix("node/"))
        }))
}

/// Every pod (`ns/name`) a variant's events mention.
fn pod_ids(v: &VariantReport) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for event in &v.events {
        if let Some(id) = event.object.strip_prefix("pod/") {
            ids.insert(id.to_string());
        } else if let Some(id) = created_pod(event) {
            ids.insert(id);
        }
    }
    ids
}

/// For an owner's `SuccessfulCreate` event, the pod it created as
/// `ns/name` (the owner's namespace).
fn created_pod(event: &EventRow) -> Option<String> {
    if event.reason != "SuccessfulCreate" {
        return None;
    }
    let pod = event.message.strip_prefix("Created pod: ")?;
    let mut parts = event.object.splitn(3, '/');
    let (_kind, namespace) = (parts.next()?, parts.next()?);
    parts.next()?;
    Some(format!("{namespace}/{pod}"))
}

fn resolve_pod(name: &str, known: &BTreeSet<String>) -> Result<String, ExplainError> {
    if known.contains(name) {
        return Ok(name.to_string());
    }
    let candidates: Vec<String> = if name.contains('/') {
        Vec::new()
    } else {
        known
            .iter()
            .filter(|id| id.split_once('/').is_some_and(|(_, n)| n == name))
            .cloned()
            .collect()
    };
    match candidates.len() {
        1 => Ok(candidates[0].clone()),
        0 => Err(ExplainError::Unknown {
            kind: "pod",
            name: name.to_string(),
            near: near_matches(name, known.iter().map(String::as_str)),
        }),
        _ => Err(ExplainError::AmbiguousPod {
            name: name.to_string(),
            candidates,
        }),
    }
}

/// Up to five known names close to `name`: those containing it or within
/// two edits, closest first; with none, the three least far.
fn near_matches<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Near {
    let mut scored: Vec<(usize, bool, &str)> = known
        .into_iter()
        .map(|k| {
            let distance = edit_distance(name, k);
            let close = distance <= 2 || (name.len() >= 3 && k.contains(name));
            (distance, close, k)
        })
        .collect();
    scored.sort();
    scored.dedup();
    let names = |scored: &[(usize, bool, &str)], n| {
        scored
            .iter()
            .take(n)
            .map(|(_, _, k)| k.to_string())
            .collect::<Vec<_>>()
    };
    let close: Vec<(usize, bool, &str)> = scored.iter().copied().filter(|s| s.1).collect();
    if close.is_empty() {
        Near::Nearest(names(&scored, 3))
    } else {
        Near::Close(names(&close, 5))
    }
}

/// Every NodeClaim and pod of `variants` (or only of `variant`), one per
/// line as `VARIANT KIND NAME`, for `karpsim explain DIR --list`.
pub fn list(variants: &[VariantReport], variant: Option<&str>) -> Result<String, ExplainError> {
    if let Some(name) = variant
        && !variants.iter().any(|v| v.name == name)
    {
        return Err(ExplainError::UnknownVariant {
            name: name.to_string(),
            known: variants.iter().map(|v| v.name.clone()).collect(),
        });
    }
    let mut rows = Vec::new();
    for v in variants
        .iter()
        .filter(|v| variant.is_none_or(|name| v.name == name))
    {
        let claims: BTreeSet<&str> = nodeclaim_names(v).collect();
        let kind = match v.autoscaler {
            Autoscaler::ClusterAutoscaler => "node",
            Autoscaler::Karpenter => "nodeclaim",
        };
        for claim in claims {
            rows.push(vec![v.name.clone(), kind.to_string(), claim.to_string()]);
        }
        for pod in pod_ids(v) {
            rows.push(vec![v.name.clone(), "pod".to_string(), pod]);
        }
    }
    let mut out = Vec::new();
    write_table(
        &mut out,
        &[
            ("VARIANT", Align::Left),
            ("KIND", Align::Left),
            ("NAME", Align::Left),
        ],
        &rows,
    )
    .expect("writing to memory");
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The component an event comes from, as `kubectl describe` would show
/// it, judged from the reason and the object.
pub fn event_source(event: &EventRow, autoscaler: Autoscaler) -> &'static str {
    let kind = event.object.split('/').next().unwrap_or_default();
    match event.reason.as_str() {
        "Scheduled" | "FailedScheduling" => "default-scheduler",
        "SuccessfulCreate" | "ScalingReplicaSet" => match kind {
            "deployment" => "deployment-controller",
            "job" => "job-controller",
            "daemonset" => "daemonset-controller",
            "statefulset" => "statefulset-controller",
            _ => "trace",
        },
        "Completed" if kind == "job" => "job-controller",
        "Completed" | "Killing" => "kubelet",
        "TriggeredScaleUp" | "NotTriggerScaleUp" | "ScaleDown" | "Unremovable" => {
            "cluster-autoscaler"
        }
        "SpotReclaimed" | "SpotCapacityStorm" => "ec2",
        _ => autoscaler.component(),
    }
}

/// The history of NodeClaim (or node) `name` in one variant, or `None`
/// when the variant has neither a row nor an event for it.
pub fn explain_nodeclaim(v: &VariantReport, name: &str) -> Option<String> {
    let claim = v.nodeclaims.iter().find(|c| c.name == name);
    let objects = [format!("nodeclaim/{name}"), format!("node/{name}")];
    let events: Vec<&EventRow> = v
        .events
        .iter()
        .filter(|e| objects.contains(&e.object))
        .collect();
    if claim.is_none() && events.is_empty() {
        return None;
    }
    let kind = match v.autoscaler {
        Autoscaler::Karpenter => "NodeClaim",
        Autoscaler::ClusterAutoscaler => "Node",
    };
    let mut text = fact("Name", name);
    text.push_str(&fact("Kind", kind));
    if let Some(claim) = claim {
        text.push_str(&claim_facts(claim, v.autoscaler));
    }
    let pods = v
        .events
        .iter()
        .filter(|e| e.reason == "Scheduled" && assigned_node(&e.message) == Some(name))
        .count();
    text.push_str(&fact("Pods scheduled", &pods.to_string()));
    text.push_str(&events_table(&events, v.autoscaler));
    Some(text)
}

fn claim_facts(claim: &NodeClaimRow, autoscaler: Autoscaler) -> String {
    let group = match autoscaler {
        Autoscaler::Karpenter => "NodePool",
        Autoscaler::ClusterAutoscaler => "Node group",
    };
    let with_reason = |time: String, reason: &str| {
        if reason.is_empty() {
            time
        } else {
            format!("{time} ({reason})")
        }
    };
    let mut text = fact(group, &claim.nodepool);
    text.push_str(&fact("Instance type", &claim.instance_type));
    text.push_str(&fact("Capacity type", &claim.capacity_type));
    text.push_str(&fact("Zone", &claim.zone));
    text.push_str(&fact(
        "Price",
        &format!("${:.6}/h", claim.price_usd_per_hour.dollars()),
    ));
    text.push_str(&fact(
        "Launched",
        &with_reason(sim_time(claim.launched_at_ms), &claim.reason_launched),
    ));
    text.push_str(&fact(
        "Ready",
        &claim
            .ready_at_ms
            .map_or_else(|| "never".to_string(), sim_time),
    ));
    let deleted = match claim.deleted_at_ms {
        Some(at) => with_reason(sim_time(at), &claim.reason_deleted),
        None => "still running at the end".to_string(),
    };
    text.push_str(&fact("Deleted", &deleted));
    text.push_str(&fact("Cost", &format!("${:.6}", claim.cost_usd.dollars())));
    text
}

/// The node of a `Scheduled` message (`Successfully assigned ns/pod to NODE`).
fn assigned_node(message: &str) -> Option<&str> {
    message
        .strip_prefix("Successfully assigned ")?
        .rsplit_once(" to ")
        .map(|(_, node)| node)
}

/// The history of pod `id` (`ns/name`) in one variant, or `None` when the
/// variant has no event for it.
pub fn explain_pod(v: &VariantReport, id: &str) -> Option<String> {
    let object = format!("pod/{id}");
    let events: Vec<&EventRow> = v
        .events
        .iter()
        .filter(|e| e.object == object || created_pod(e).as_deref() == Some(id))
        .collect();
    if events.is_empty() {
        return None;
    }
    let (namespace, name) = id.split_once('/').unwrap_or(("", id));
    let mut text = fact("Name", name);
    text.push_str(&fact("Namespace", namespace));
    if let Some(created) = events.iter().find(|e| e.reason == "SuccessfulCreate") {
        let by = if created.object == object {
            "from the trace".to_string()
        } else {
            format!("by {}", created.object)
        };
        text.push_str(&fact(
            "Created",
            &format!("{} {by}", sim_time(created.time_ms)),
        ));
    }
    let nominated: Vec<String> = events
        .iter()
        .filter(|e| e.reason == "Nominated")
        .filter_map(|e| e.message.rsplit_once(": ").map(|(_, to)| to.to_string()))
        .collect();
    if !nominated.is_empty() {
        text.push_str(&fact("Nominated for", &nominated.join(", ")));
    }
    let nodes: Vec<String> = events
        .iter()
        .filter(|e| e.reason == "Scheduled")
        .filter_map(|e| assigned_node(&e.message).map(|n| format!("{n} ({})", sim_time(e.time_ms))))
        .collect();
    let ran_on = if nodes.is_empty() {
        "never scheduled".to_string()
    } else {
        nodes.join(", ")
    };
    text.push_str(&fact("Node", &ran_on));
    text.push_str(&events_table(&events, v.autoscaler));
    Some(text)
}

fn fact(label: &str, value: &str) -> String {
    format!("{:<15} {value}\n", format!("{label}:"))
}

/// The `Events:` table, oldest first (file order among equal times). A
/// run of the same event repeated back to back is one row, `At` reading
/// `46m49s (x5 until 47m29s)`, as `kubectl` counts repeats.
fn events_table(events: &[&EventRow], autoscaler: Autoscaler) -> String {
    if events.is_empty() {
        return "Events:         <none>\n".to_string();
    }
    let mut sorted = events.to_vec();
    sorted.sort_by_key(|e| e.time_ms);
    let mut rows = vec![
        ["----", "------", "--", "----", "-------"]
            .map(String::from)
            .to_vec(),
    ];
    let same = |a: &EventRow, b: &EventRow| {
        (&a.kind, &a.reason, &a.object, &a.message) == (&b.kind, &b.reason, &b.object, &b.message)
    };
    let mut index = 0;
    while let Some(first) = sorted.get(index) {
        let repeats = sorted[index..]
            .iter()
            .take_while(|e| same(e, first))
            .count();
        let last = sorted[index + repeats - 1];
        let at = if repeats == 1 {
            sim_time(first.time_ms)
        } else {
            format!(
                "{} (x{repeats} until {})",
                sim_time(first.time_ms),
                sim_time(last.time_ms)
            )
        };
        rows.push(vec![
            first.kind.clone(),
            first.reason.clone(),
            at,
            event_source(first, autoscaler).to_string(),
            first.message.clone(),
        ]);
        index += repeats;
    }
    let mut table = Vec::new();
    let header = [
        ("Type", Align::Left),
        ("Reason", Align::Left),
        ("At", Align::Left),
        ("From", Align::Left),
        ("Message", Align::Left),
    ];
    // Writing to a Vec cannot fail.
    let _ = write_table(&mut table, &header, &rows);
    let mut text = "Events:\n".to_string();
    for line in String::from_utf8_lossy(&table).lines() {
        text.push_str("  ");
        text.push_str(line);
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Summary, Usd};

    fn event(time_ms: u64, reason: &str, object: &str, message: &str) -> EventRow {
        EventRow {
            time_ms,
            kind: "Normal".into(),
            reason: reason.into(),
            object: object.into(),
            message: message.into(),
        }
    }

    fn variant(name: &str, events: Vec<EventRow>) -> VariantReport {
        let summary = Summary::parse(&format!(
            r#"{{"scenario":"s","variant":"{name}","duration_s":1.0,"total_cost_usd":1.0,
            "node_hours":1.0,"peak_nodes":1,"nodeclaims_launched":1,
            "cpu_allocation":0.5,"memory_allocation":0.5}}"#
        ))
        .unwrap();
        VariantReport {
            name: name.into(),
            dir: Default::default(),
            autoscaler: Autoscaler::Karpenter,
            summary,
            events,
            nodeclaims: vec![NodeClaimRow {
                name: "np-00001".into(),
                nodepool: "np".into(),
                instance_type: "m5.large".into(),
                capacity_type: "spot".into(),
                zone: "z1".into(),
                price_usd_per_hour: Usd(50_000),
                launched_at_ms: 1000,
                ready_at_ms: Some(30_000),
                deleted_at_ms: None,
                reason_deleted: String::new(),
                cost_usd: Usd(500_000),
                reason_launched: "provisioning".into(),
            }],
            kept_nodes: Vec::new(),
        }
    }

    fn sample() -> Vec<VariantReport> {
        vec![variant(
            "a",
            vec![
                event(
                    0,
                    "SuccessfulCreate",
                    "deployment/default/web",
                    "Created pod: web-1",
                ),
                event(
                    0,
                    "SuccessfulCreate",
                    "deployment/other/web",
                    "Created pod: web-1",
                ),
                event(
                    0,
                    "SuccessfulCreate",
                    "deployment/default/api",
                    "Created pod: api-1",
                ),
                event(
                    0,
                    "FailedScheduling",
                    "pod/default/web-1",
                    "no nodes available",
                ),
                event(1000, "Launched", "nodeclaim/np-00001", "Launched m5.large"),
                event(
                    1000,
                    "Nominated",
                    "pod/default/web-1",
                    "Pod should schedule on: nodeclaim/np-00001",
                ),
                event(30_000, "Registered", "nodeclaim/np-00001", "Registered"),
                event(
                    31_000,
                    "Scheduled",
                    "pod/default/web-1",
                    "Successfully assigned default/web-1 to np-00001",
                ),
                event(
                    3_700_000,
                    "Unconsolidatable",
                    "node/np-00001",
                    "Can't replace with a cheaper node",
                ),
            ],
        )]
    }

    #[test]
    fn pod_history_is_time_ordered_with_owner_creation() {
        let text = explain(&sample(), &Target::Pod("default/web-1".into()), None).unwrap();
        let events = &text[text.find("Events:").unwrap()..];
        let order: Vec<usize> = [
            "SuccessfulCreate",
            "FailedScheduling",
            "Nominated",
            "Scheduled",
        ]
        .iter()
        .map(|r| {
            events
                .find(&format!("  {r} "))
                .unwrap_or_else(|| panic!("{r} in {text}"))
        })
        .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert!(text.contains("deployment-controller"), "{text}");
        assert!(text.contains("default-scheduler"), "{text}");
        assert!(text.contains("np-00001 (31s)"), "{text}");
        assert!(!text.contains("Variant:"), "one variant: no variant line");
    }

    #[test]
    fn nodeclaim_history_includes_node_events_and_facts() {
        let text = explain(&sample(), &Target::NodeClaim("np-00001".into()), None).unwrap();
        for expected in [
            "Launched",
            "Registered",
            "Unconsolidatable",
            "1h01m40s",
            "m5.large",
            "1s (provisioning)",
            "Pods scheduled: 1",
        ] {
            assert!(text.contains(expected), "{expected} in {text}");
        }
    }

    #[test]
    fn bare_pod_name_in_two_namespaces_is_ambiguous() {
        let error = explain(&sample(), &Target::Pod("web-1".into()), None).unwrap_err();
        assert_eq!(
            error,
            ExplainError::AmbiguousPod {
                name: "web-1".into(),
                candidates: vec!["default/web-1".into(), "other/web-1".into()]
            }
        );
        let api = explain(&sample(), &Target::Pod("api-1".into()), None).unwrap();
        assert!(api.contains("Namespace:      default"), "{api}");
    }

    #[test]
    fn unknown_names_suggest_near_matches() {
        let error = explain(&sample(), &Target::NodeClaim("np-0001".into()), None).unwrap_err();
        assert!(
            error.to_string().contains("did you mean: np-00001?"),
            "{error}"
        );
        let error = explain(&sample(), &Target::Pod("zzz".into()), None).unwrap_err();
        let text = error.to_string();
        assert!(
            text.starts_with("no pod named \"zzz\" (nearest: "),
            "{text}"
        );
        assert!(text.contains("default/api-1"), "{text}");
        assert_eq!(near_matches("x", []), Near::Nearest(Vec::new()));
    }

    #[test]
    fn the_list_names_every_nodeclaim_and_pod_of_the_variants() {
        let text = list(&sample(), None).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("VARIANT") && lines[0].contains("NAME"),
            "{text}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains("nodeclaim") && l.ends_with("np-00001")),
            "{text}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains("pod") && l.ends_with("default/api-1")),
            "{text}"
        );
        assert!(list(&sample(), Some("nope")).is_err());
    }

    #[test]
    fn several_variants_are_shown_in_turn_unless_one_is_chosen() {
        let mut variants = sample();
        variants.push(variant("b", sample().remove(0).events));
        let both = explain(&variants, &Target::NodeClaim("np-00001".into()), None).unwrap();
        let (a, b) = (
            both.find("Variant:        a"),
            both.find("Variant:        b"),
        );
        assert!(a.is_some() && b.is_some() && a < b, "{both}");
        let only_b = explain(&variants, &Target::NodeClaim("np-00001".into()), Some("b")).unwrap();
        assert!(only_b.contains("Variant:        b") && !only_b.contains("Variant:        a"));
        let error = explain(&variants, &Target::NodeClaim("x".into()), Some("c")).unwrap_err();
        assert_eq!(error.to_string(), "no variant named \"c\" (variants: a, b)");
    }

    #[test]
    fn repeated_events_are_counted_on_one_row() {
        let mut variants = sample();
        for t in [40_000, 50_000, 60_000] {
            variants[0]
                .events
                .push(event(t, "FailedScheduling", "pod/default/api-1", "no room"));
        }
        let text = explain(&variants, &Target::Pod("default/api-1".into()), None).unwrap();
        assert!(text.contains("40s (x3 until 1m00s)"), "{text}");
        assert_eq!(text.matches("no room").count(), 1, "{text}");
    }

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "ab"), 2);
        assert_eq!(edit_distance("same", "same"), 0);
    }
}
