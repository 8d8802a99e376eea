//! Expanders: which scale-up option CA takes (`expander/*`).
//!
//! A chain (`--expander=priority,least-waste`) applies each filter in turn
//! and stops as soon as exactly one option is left; whatever is left after
//! the last filter goes to the `random` strategy
//! (`expander/factory/chain.go`). The random pick is an input here
//! (`random_choice`, reduced modulo the survivors), so the function is pure.
//!
//! | expander | keeps |
//! |---|---|
//! | most-pods | the options placing the most pods |
//! | least-waste | the least `(cap·N − Σreq)/(cap·N)` for CPU plus memory, over template **capacity** |
//! | least-nodes | the fewest new nodes (> 0) |
//! | priority | the options in the highest tier whose regex matches the group name; none matching ⇒ all |

use super::config::{ExpanderKind, PriorityTiers};
use crate::cluster::PodId;
use crate::kube::resources::Resources;

/// One group's answer to "what if I scale you up".
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleUpOption {
    /// Group name.
    pub group: String,
    /// New nodes the estimator needs.
    pub node_count: u32,
    /// Pending pods they would take.
    pub pods: Vec<PodId>,
    /// Summed requests of those pods.
    pub pod_requests: Resources,
    /// The template node's capacity.
    pub template_capacity: Resources,
}

fn most_pods(options: Vec<&ScaleUpOption>) -> Vec<&ScaleUpOption> {
    let best = options.iter().map(|o| o.pods.len()).max().unwrap_or(0);
    options
        .into_iter()
        .filter(|o| o.pods.len() == best)
        .collect()
}

fn least_nodes(options: Vec<&ScaleUpOption>) -> Vec<&ScaleUpOption> {
    let Some(best) = options
        .iter()
        .map(|o| o.node_count)
        .filter(|&n| n > 0)
        .min()
    else {
        return Vec::new();
    };
    options
        .into_iter()
        .filter(|o| o.node_count == best)
        .collect()
}

/// The least-waste score of an option (lower is better).
pub fn waste_score(option: &ScaleUpOption) -> f64 {
    let n = f64::from(option.node_count);
    let share = |cap: i64, req: i64| {
        let avail = cap as f64 * n;
        (avail - req as f64) / avail
    };
    share(
        option.template_capacity.cpu_millis(),
        option.pod_requests.cpu_millis(),
    ) + share(
        option.template_capacity.memory_bytes(),
        option.pod_requests.memory_bytes(),
    )
}

fn least_waste(options: Vec<&ScaleUpOption>) -> Vec<&ScaleUpOption> {
    let mut best: Vec<&ScaleUpOption> = Vec::new();
    let mut best_score = f64::INFINITY;
    for o in options {
        let score = waste_score(o);
        if score == best_score {
            best.push(o);
        } else if best.is_empty() || score < best_score {
            best_score = score;
            best = vec![o];
        }
    }
    best
}

fn priority<'o>(options: Vec<&'o ScaleUpOption>, tiers: &PriorityTiers) -> Vec<&'o ScaleUpOption> {
    // Upstream starts its running maximum at -1.
    let mut max = -1;
    let mut best = Vec::new();
    for o in &options {
        let Some(p) = tiers.priority_of(&o.group) else {
            continue;
        };
        if p < max {
            continue;
        }
        if p > max {
            max = p;
            best.clear();
        }
        best.push(*o);
    }
    if best.is_empty() { options } else { best }
}

/// The index (into `options`) of the option the chain picks.
pub fn choose(
    chain: &[ExpanderKind],
    tiers: &PriorityTiers,
    options: &[ScaleUpOption],
    random_choice: u64,
) -> Option<usize> {
    let mut left: Vec<&ScaleUpOption> = options.iter().collect();
    for kind in chain {
        left = match kind {
            ExpanderKind::MostPods => most_pods(left),
            ExpanderKind::LeastNodes => least_nodes(left),
            ExpanderKind::LeastWaste => least_waste(left),
            ExpanderKind::Priority => priority(left, tiers),
            // Strategies end the chain; `price` never passes validation.
            ExpanderKind::Random | ExpanderKind::Price => break,
        };
        if left.len() == 1 {
            break;
        }
    }
    if left.is_empty() {
        return None;
    }
    let pick = left[(random_choice % left.len() as u64) as usize];
    options.iter().position(|o| std::ptr::eq(o, pick))
}
