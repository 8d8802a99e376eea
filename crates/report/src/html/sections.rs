//! The per-variant tables of `report.html`: the largest decisions
//! (launches, consolidations or scale-downs, spot interruptions) and the
//! "why" tables (why pods stayed pending, why nodes were not consolidated
//! or removed), each aggregated from the variant's files.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::{Cell, clip, long, num, table, text};
use crate::read::{Autoscaler, VariantReport, sim_time};
use crate::schema::{DisruptionRow, EventRow};

/// Longest message shown in a cell.
const MESSAGE_CHARS: usize = 300;

/// Event reasons of spot interruptions and their warnings.
const SPOT_REASONS: [&str; 3] = [
    "SpotInterrupted",
    "SpotReclaimed",
    "RebalanceRecommendation",
];

/// Event reasons that say why a pod is pending.
const PENDING_REASONS: [&str; 2] = ["FailedScheduling", "NotTriggerScaleUp"];

/// Whether the page shows `events.csv` rows of this reason one by one
/// (the pending reasons are only counted, see [`PendingEvents`]).
pub(super) fn shown_row_by_row(reason: &str) -> bool {
    matches!(reason, "DisruptionTerminating" | "ScaleDown") || SPOT_REASONS.contains(&reason)
}

/// The scheduling events of pods that could not be placed, counted per
/// (reason, message) as `events.csv` is read, so that the rows themselves
/// need not be kept.
#[derive(Debug, Default)]
pub(super) struct PendingEvents {
    /// By reason, then message.
    by_message: BTreeMap<String, BTreeMap<String, Seen>>,
    /// A number per pod object, so each message lists its pods compactly.
    pod_numbers: HashMap<String, u32>,
    /// About how many bytes it holds.
    held: usize,
}

/// One (reason, message) of [`PendingEvents`].
#[derive(Debug)]
struct Seen {
    events: usize,
    /// Numbers of the pods it was given for, with repeats.
    pods: Vec<u32>,
    first_ms: u64,
    example: String,
}

impl Seen {
    /// Different pods it was given for.
    fn pods(&self) -> usize {
        let mut pods = self.pods.clone();
        pods.sort_unstable();
        pods.dedup();
        pods.len()
    }
}

impl PendingEvents {
    /// Counts `event` if its reason says why a pod is pending (and says
    /// so); strings are copied only the first time they are seen.
    pub(super) fn count(&mut self, event: &EventRow<&str>) -> bool {
        if !PENDING_REASONS.contains(&event.reason) {
            return false;
        }
        let next = self.pod_numbers.len() as u32;
        let pod = match self.pod_numbers.get(event.object) {
            Some(&pod) => pod,
            None => {
                self.pod_numbers.insert(event.object.to_string(), next);
                self.held += event.object.len() + ENTRY_BYTES;
                next
            }
        };
        if !self.by_message.contains_key(event.reason) {
            self.by_message
                .insert(event.reason.to_string(), BTreeMap::new());
            self.held += event.reason.len() + ENTRY_BYTES;
        }
        let Some(messages) = self.by_message.get_mut(event.reason) else {
            return true;
        };
        if !messages.contains_key(event.message) {
            self.held += event.message.len() + event.object.len() + ENTRY_BYTES;
            messages.insert(
                event.message.to_string(),
                Seen {
                    events: 0,
                    pods: Vec::new(),
                    first_ms: event.time_ms,
                    example: event.object.to_string(),
                },
            );
        }
        let Some(seen) = messages.get_mut(event.message) else {
            return true;
        };
        seen.events += 1;
        seen.pods.push(pod);
        self.held += std::mem::size_of::<u32>();
        true
    }

    /// About how many bytes it holds.
    pub(super) fn held_bytes(&self) -> usize {
        self.held
    }
}

/// What a map entry or a kept row costs besides its strings, about.
pub(super) const ENTRY_BYTES: usize = 64;

fn heading(out: &mut String, title: &str) {
    out.push_str(&format!("<h3>{}</h3>\n", super::escape(title)));
}

fn note(out: &mut String, line: &str) {
    out.push_str(&format!("<p>{}</p>\n", super::escape(line)));
}

/// Launches, consolidations (or scale-downs) and spot interruptions.
pub(super) fn decisions(out: &mut String, variant: &VariantReport) {
    launches(out, variant);
    match variant.autoscaler {
        Autoscaler::Karpenter => consolidations(out, variant),
        Autoscaler::ClusterAutoscaler => scale_downs(out, variant),
    }
    interruptions(out, variant);
}

/// The NodeClaims (nodes) with the highest price, most expensive first.
fn launches(out: &mut String, variant: &VariantReport) {
    let what = match variant.autoscaler {
        Autoscaler::Karpenter => "NodeClaim",
        Autoscaler::ClusterAutoscaler => "Node",
    };
    heading(
        out,
        &format!(
            "Largest launches ({} in all, by $/h)",
            variant.nodeclaims.len()
        ),
    );
    let mut claims: Vec<_> = variant.nodeclaims.iter().collect();
    claims.sort_by(|a, b| {
        b.price_usd_per_hour
            .cmp(&a.price_usd_per_hour)
            .then(a.launched_at_ms.cmp(&b.launched_at_ms))
            .then(a.name.cmp(&b.name))
    });
    let rows: Vec<Vec<Cell>> = claims
        .iter()
        .map(|c| {
            let deleted = match c.deleted_at_ms {
                Some(at) if c.reason_deleted.is_empty() => sim_time(at),
                Some(at) => format!("{} ({})", sim_time(at), c.reason_deleted),
                None => "-".to_string(),
            };
            vec![
                text(&c.name),
                text(&c.instance_type),
                text(&c.capacity_type),
                text(&c.zone),
                num(format!("${:.4}", c.price_usd_per_hour.dollars())),
                num(sim_time(c.launched_at_ms)),
                text(&c.reason_launched),
                long(deleted),
                num(format!("${:.4}", c.cost_usd.dollars())),
            ]
        })
        .collect();
    let header = [
        text(what),
        text("Instance type"),
        text("Capacity"),
        text("Zone"),
        num("$/h"),
        num("Launched"),
        text("Why launched"),
        text("Deleted"),
        num("Cost"),
    ];
    table(out, &header, &rows);
}

/// `$0.526` from `... saves $0.526/h` or `... saves up to $0.8104/h`.
pub(super) fn savings_per_hour(message: &str) -> Option<f64> {
    let (_, after) = message.rsplit_once("saves ")?;
    let after = after.strip_prefix("up to ").unwrap_or(after);
    let amount = after.strip_prefix('$')?.split("/h").next()?;
    amount.parse().ok()
}

/// Karpenter's disruption decisions: one row per command (the nodes a
/// `DisruptionTerminating` message names at one time), largest saving first.
fn consolidations(out: &mut String, variant: &VariantReport) {
    // (time, message) -> nodes: one command marks each of its nodes.
    let mut commands: BTreeMap<(u64, &str), Vec<&str>> = BTreeMap::new();
    for event in variant
        .events
        .iter()
        .filter(|e| e.reason == "DisruptionTerminating")
    {
        let node = event.object.split_once('/').map_or("", |(_, n)| n);
        commands
            .entry((event.time_ms, event.message.as_str()))
            .or_default()
            .push(node);
    }
    let mut decided: Vec<(u64, &str, Vec<&str>, Option<f64>)> = commands
        .into_iter()
        .map(|((time, message), nodes)| (time, message, nodes, savings_per_hour(message)))
        .collect();
    let total: f64 = decided.iter().filter_map(|d| d.3).sum();
    heading(out, "Consolidations");
    if !decided.is_empty() {
        note(
            out,
            &format!(
                "{} disruption command(s), saving ${total:.4}/h in all at the time they were taken.",
                decided.len()
            ),
        );
    }
    decided.sort_by(|a, b| {
        b.3.unwrap_or(0.0)
            .total_cmp(&a.3.unwrap_or(0.0))
            .then(a.0.cmp(&b.0))
    });
    let rows: Vec<Vec<Cell>> = decided
        .iter()
        .map(|(time, message, nodes, saves)| {
            let decision = message.strip_prefix("Disrupting Node: ").unwrap_or(message);
            vec![
                num(sim_time(*time)),
                long(nodes.join(", ")),
                long(clip(decision, MESSAGE_CHARS)),
                num(saves.map_or_else(|| "-".to_string(), |s| format!("${s:.4}"))),
            ]
        })
        .collect();
    let header = [num("At"), text("Nodes"), text("Decision"), num("Saves $/h")];
    table(out, &header, &rows);
}

/// Cluster Autoscaler's scale-downs, each saving its node's price.
fn scale_downs(out: &mut String, variant: &VariantReport) {
    let price: BTreeMap<&str, f64> = variant
        .nodeclaims
        .iter()
        .map(|c| (c.name.as_str(), c.price_usd_per_hour.dollars()))
        .collect();
    let mut removed: Vec<(&EventRow, &str, Option<f64>)> = variant
        .events
        .iter()
        .filter(|e| e.reason == "ScaleDown")
        .map(|e| {
            let node = e.object.split_once('/').map_or("", |(_, n)| n);
            (e, node, price.get(node).copied())
        })
        .collect();
    heading(out, "Scale-downs");
    if !removed.is_empty() {
        let total: f64 = removed.iter().filter_map(|r| r.2).sum();
        note(
            out,
            &format!(
                "{} node(s) removed, saving ${total:.4}/h in all.",
                removed.len()
            ),
        );
    }
    removed.sort_by(|a, b| {
        b.2.unwrap_or(0.0)
            .total_cmp(&a.2.unwrap_or(0.0))
            .then(a.0.time_ms.cmp(&b.0.time_ms))
    });
    let rows: Vec<Vec<Cell>> = removed
        .iter()
        .map(|(event, node, saves)| {
            vec![
                num(sim_time(event.time_ms)),
                text(*node),
                long(clip(&event.message, MESSAGE_CHARS)),
                num(saves.map_or_else(|| "-".to_string(), |s| format!("${s:.4}"))),
            ]
        })
        .collect();
    let header = [num("At"), text("Node"), text("Decision"), num("Saves $/h")];
    table(out, &header, &rows);
}

/// Spot interruption warnings, reclaims and rebalance recommendations in
/// time order, with their counts.
fn interruptions(out: &mut String, variant: &VariantReport) {
    let events: Vec<&EventRow> = variant
        .events
        .iter()
        .filter(|e| SPOT_REASONS.contains(&e.reason.as_str()))
        .collect();
    heading(out, "Spot interruptions");
    if !events.is_empty() {
        let counts: Vec<String> = SPOT_REASONS
            .iter()
            .map(|r| (r, events.iter().filter(|e| e.reason == *r).count()))
            .filter(|(_, n)| *n > 0)
            .map(|(r, n)| format!("{n} {r}"))
            .collect();
        note(out, &counts.join(", "));
    }
    let rows: Vec<Vec<Cell>> = events
        .iter()
        .map(|e| {
            vec![
                num(sim_time(e.time_ms)),
                text(&e.reason),
                text(&e.object),
                long(clip(&e.message, MESSAGE_CHARS)),
            ]
        })
        .collect();
    let header = [num("At"), text("Reason"), text("Object"), text("Message")];
    table(out, &header, &rows);
}

/// Why pods stayed pending, then why nodes stayed up.
pub(super) fn why(out: &mut String, variant: &VariantReport, pending: &PendingEvents) {
    why_pending(out, variant, pending);
    let title = match variant.autoscaler {
        Autoscaler::Karpenter => "Why not consolidated",
        Autoscaler::ClusterAutoscaler => "Why not removed",
    };
    heading(out, title);
    let header = [text("Reason"), num("Nodes"), num("Rows"), text("Example")];
    table(out, &header, &kept_reasons(&variant.kept_nodes));
}

fn why_pending(out: &mut String, variant: &VariantReport, pending: &PendingEvents) {
    heading(out, "Why pending: pods never scheduled");
    let rows: Vec<Vec<Cell>> = variant
        .summary
        .unschedulable_reasons
        .iter()
        .map(|r| {
            vec![
                long(clip(&r.reason, MESSAGE_CHARS)),
                num(r.pods.to_string()),
                text(&r.example),
            ]
        })
        .collect();
    table(out, &[text("Reason"), num("Pods"), text("Example")], &rows);

    heading(out, "Why pending: scheduling events");
    let mut seen: Vec<_> = pending
        .by_message
        .iter()
        .flat_map(|(reason, messages)| {
            messages
                .iter()
                .map(move |(message, seen)| ((reason, message), seen))
        })
        .collect();
    seen.sort_by(|a, b| b.1.events.cmp(&a.1.events).then(a.0.cmp(&b.0)));
    let rows: Vec<Vec<Cell>> = seen
        .iter()
        .map(|&((reason, message), s)| {
            vec![
                text(reason),
                long(clip(message, MESSAGE_CHARS)),
                num(s.events.to_string()),
                num(s.pods().to_string()),
                num(sim_time(s.first_ms)),
                text(&s.example),
            ]
        })
        .collect();
    let header = [
        text("Event"),
        text("Message"),
        num("Events"),
        num("Pods"),
        num("First"),
        text("Example"),
    ];
    table(out, &header, &rows);
}

/// A reason with the names it mentions masked, so that the same reason
/// about different pods or nodes is counted once: words naming objects
/// (`default/web-1`, `pod/ns/x`) become `…`, and a list after ` => ` is
/// cut.
pub(super) fn reason_class(reason: &str) -> String {
    let reason = reason.split(" => ").next().unwrap_or(reason);
    let words: Vec<&str> = reason
        .split(' ')
        .map(|word| {
            let names_object = word.split_once('/').is_some_and(|(head, _)| {
                !head.is_empty()
                    && head
                        .bytes()
                        .all(|b| b.is_ascii_alphabetic() || b == b'(' || b == b'"')
            });
            if names_object { "…" } else { word }
        })
        .collect();
    let mut class = words.join(" ");
    // "…, … …" reads as one mask.
    while class.contains("… …") {
        class = class.replace("… …", "…");
    }
    class.trim_end().to_string()
}

/// `disruption.csv` / `scaledown.csv` grouped by reason class: how many
/// nodes and rows, and one full example, most nodes first.
fn kept_reasons(rows: &[DisruptionRow]) -> Vec<Vec<Cell>> {
    struct Group<'a> {
        nodes: BTreeSet<&'a str>,
        rows: usize,
        example: &'a DisruptionRow,
    }
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for row in rows {
        let group = groups.entry(reason_class(&row.reason)).or_insert(Group {
            nodes: BTreeSet::new(),
            rows: 0,
            example: row,
        });
        group.nodes.insert(&row.node);
        group.rows += 1;
    }
    let mut groups: Vec<_> = groups.into_iter().collect();
    groups.sort_by(|a, b| {
        b.1.nodes
            .len()
            .cmp(&a.1.nodes.len())
            .then(b.1.rows.cmp(&a.1.rows))
            .then(a.0.cmp(&b.0))
    });
    groups
        .into_iter()
        .map(|(class, g)| {
            vec![
                long(clip(&class, MESSAGE_CHARS)),
                num(g.nodes.len().to_string()),
                num(g.rows.to_string()),
                long(clip(
                    &format!(
                        "{} at {}: {}",
                        g.example.node,
                        sim_time(g.example.time_ms),
                        g.example.reason
                    ),
                    MESSAGE_CHARS,
                )),
            ]
        })
        .collect()
}
