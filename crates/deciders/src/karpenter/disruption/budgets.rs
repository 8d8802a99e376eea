//! NodePool disruption budgets (core: pkg/apis/v1/nodepool.go
//! `GetAllowedDisruptionsByReason`, `Budget.IsActive`; disruption/helpers.go
//! `BuildDisruptionBudgetMapping`): how many of a pool's nodes a disruption
//! method may take right now.

use crate::kube::taints::{NOT_READY_TAINT_KEY, UNREACHABLE_TAINT_KEY};
use std::collections::BTreeMap;
use std::time::Duration;

use super::cron::{CronError, Schedule};
use super::types::NodePoolsByName;
use crate::cluster::Cluster;
use crate::karpenter::PoolSums;
use crate::nodepool::{Budget, BudgetNodes, DisruptionReason, NodePool};
use crate::time::SimTime;

/// The UTC instant simulated time 0 stands for: Monday 2026-01-05 00:00:00Z,
/// in seconds since the Unix epoch. Budget schedules are evaluated against
/// it, so a scenario starts at midnight at the beginning of a week.
pub const SIM_EPOCH_UNIX_SECONDS: i64 = 1_767_571_200;

/// "No limit": an inactive budget allows `MaxInt32` disruptions upstream.
pub const UNLIMITED: u32 = i32::MAX as u32;

/// Unix milliseconds (UTC) of a simulated instant.
pub fn unix_millis(now: SimTime) -> i64 {
    let since_start = i64::try_from(now.as_millis()).unwrap_or(i64::MAX);
    (SIM_EPOCH_UNIX_SECONDS * 1000).saturating_add(since_start)
}

/// Whether a scheduled budget is active at `now`: the schedule fired at most
/// `duration` ago, i.e. `schedule.Next(now − duration) ≤ now`.
///
/// A schedule that never fires within robfig's five-year horizon yields
/// Go's zero time, which is *not after* `now`: upstream then treats the
/// budget as always active, and so does this.
pub fn is_active(schedule: &str, duration: Duration, now: SimTime) -> Result<bool, CronError> {
    let schedule = Schedule::parse(schedule)?;
    let now_ms = unix_millis(now);
    let duration_ms = i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
    Ok(
        match schedule.next_after(now_ms.saturating_sub(duration_ms)) {
            Some(hit) => hit <= now_ms,
            None => true,
        },
    )
}

/// What one budget allows for a pool of `num_nodes` nodes: unlimited when
/// inactive; a percentage rounds **up**. A schedule without a duration
/// checks a zero-length window (never active); a duration without a
/// schedule is an invalid cron (`""`), as upstream.
pub fn budget_allows(budget: &Budget, num_nodes: u32, now: SimTime) -> Result<u32, CronError> {
    let active = match (&budget.schedule, budget.duration) {
        (None, None) => true,
        (schedule, duration) => is_active(
            schedule.as_deref().unwrap_or(""),
            duration.unwrap_or(Duration::ZERO),
            now,
        )?,
    };
    if !active {
        return Ok(UNLIMITED);
    }
    Ok(match budget.nodes {
        BudgetNodes::Count(n) => n,
        BudgetNodes::Percent(p) => (u64::from(num_nodes) * u64::from(p)).div_ceil(100) as u32,
    })
}

/// How many of the pool's nodes may be disrupted for `reason`: the minimum
/// over the budgets that apply to it (no `reasons` = all reasons). Any
/// invalid budget — even one for another reason — makes it 0 (fail closed,
/// upstream `MustGetAllowedDisruptions`).
pub fn allowed_disruptions(
    pool: &NodePool,
    reason: DisruptionReason,
    num_nodes: u32,
    now: SimTime,
) -> u32 {
    let mut allowed = UNLIMITED;
    for budget in &pool.disruption.budgets {
        let Ok(value) = budget_allows(budget, num_nodes, now) else {
            return 0;
        };
        if budget.reasons.is_empty() || budget.reasons.contains(&reason) {
            allowed = allowed.min(value);
        }
    }
    allowed
}

/// Per-pool node counts that budgets are computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolNodeCounts {
    /// Managed, initialized nodes whose instance is not terminating.
    pub nodes: u32,
    /// Those of them that are NotReady or marked for deletion.
    pub disrupting: u32,
}

/// Counts each pool's nodes as `BuildDisruptionBudgetMapping` does.
pub fn pool_node_counts(cluster: &Cluster) -> BTreeMap<String, PoolNodeCounts> {
    let mut counts: PoolSums<'_, PoolNodeCounts> = PoolSums::new();
    for (_, node) in cluster.nodes() {
        let Some(claim) = &node.claim else { continue };
        if !node.initialized || claim.lifecycle.instance_terminating {
            continue;
        }
        counts.add(&claim.nodepool, |entry| {
            entry.nodes += 1;
            // An initialized node's Ready condition gone False or Unknown
            // shows as the node lifecycle controller's taint.
            let not_ready = node
                .taints
                .iter()
                .any(|t| t.key == NOT_READY_TAINT_KEY || t.key == UNREACHABLE_TAINT_KEY);
            if !node.registered || not_ready || node.marked_for_deletion {
                entry.disrupting += 1;
            }
        });
    }
    counts.into_map()
}

/// Budget left per pool for `reason`: `max(allowed − disrupting, 0)`, for
/// every pool (pools without nodes included). Methods decrement it as they
/// take candidates.
pub fn budget_mapping(
    cluster: &Cluster,
    pools: &NodePoolsByName<'_>,
    reason: DisruptionReason,
    now: SimTime,
) -> BTreeMap<String, u32> {
    budget_mapping_of(&pool_node_counts(cluster), pools, reason, now)
}

/// [`budget_mapping`] from the pools' node counts ([`pool_node_counts`]).
pub fn budget_mapping_of(
    counts: &BTreeMap<String, PoolNodeCounts>,
    pools: &NodePoolsByName<'_>,
    reason: DisruptionReason,
    now: SimTime,
) -> BTreeMap<String, u32> {
    pools
        .iter()
        .map(|(name, pool)| {
            let c = counts.get(*name).copied().unwrap_or_default();
            let allowed = allowed_disruptions(pool, reason, c.nodes, now);
            (name.to_string(), allowed.saturating_sub(c.disrupting))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{cluster_with_pool_nodes, pool};
    use crate::time::SimDuration;

    fn budget(nodes: BudgetNodes) -> Budget {
        Budget {
            nodes,
            schedule: None,
            duration: None,
            reasons: Vec::new(),
        }
    }

    fn scheduled(nodes: BudgetNodes, schedule: &str, duration: Duration) -> Budget {
        Budget {
            schedule: Some(schedule.to_string()),
            duration: Some(duration),
            ..budget(nodes)
        }
    }

    fn with_budgets(budgets: Vec<Budget>) -> NodePool {
        let mut p = pool("default");
        p.disruption.budgets = budgets;
        p
    }

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn sim_epoch_is_a_monday_midnight() {
        assert_eq!(SIM_EPOCH_UNIX_SECONDS % 86_400, 0);
        // 1970-01-01 was a Thursday: +4 days gives Monday = 0 (mod 7).
        assert_eq!((SIM_EPOCH_UNIX_SECONDS / 86_400 + 3) % 7, 0);
    }

    /// core: pkg/apis/v1/nodepool_budgets_test.go "should return the string
    /// value when a budget is active", with the rounding of reference §4.4
    /// (intstr scaled value, rounded up): 10 nodes: 10% → 1, 30% → 3, 5% → 1.
    #[test]
    fn percentages_round_up() {
        let now = SimTime::ZERO;
        for (percent, expected) in [(10, 1), (30, 3), (5, 1), (0, 0), (100, 10)] {
            let p = with_budgets(vec![budget(BudgetNodes::Percent(percent))]);
            assert_eq!(
                allowed_disruptions(&p, DisruptionReason::Empty, 10, now),
                expected,
                "{percent}%"
            );
        }
        let p = with_budgets(vec![budget(BudgetNodes::Count(3))]);
        assert_eq!(
            allowed_disruptions(&p, DisruptionReason::Drifted, 10, now),
            3
        );
    }

    /// core: nodepool_budgets_test.go "should return MaxInt32 when a budget
    /// is inactive" and "should get the minimum budget for each reason".
    #[test]
    fn minimum_over_active_budgets() {
        // Active from 00:00 for one hour each day.
        let window = scheduled(BudgetNodes::Count(0), "0 0 * * *", HOUR);
        let p = with_budgets(vec![
            budget(BudgetNodes::Percent(50)),
            budget(BudgetNodes::Count(3)),
            window,
        ]);
        let inside = SimTime::ZERO + SimDuration::from_mins(30);
        let outside = SimTime::ZERO + SimDuration::from_hours(2);
        assert_eq!(
            allowed_disruptions(&p, DisruptionReason::Empty, 10, inside),
            0
        );
        assert_eq!(
            allowed_disruptions(&p, DisruptionReason::Empty, 10, outside),
            3
        );
        let only_window = with_budgets(vec![scheduled(BudgetNodes::Count(0), "0 0 * * *", HOUR)]);
        assert_eq!(
            allowed_disruptions(&only_window, DisruptionReason::Empty, 10, outside),
            UNLIMITED
        );
    }

    /// core: nodepool_budgets_test.go "should return that a schedule is
    /// active when the schedule hit is in the middle of the duration" and
    /// "... inactive when the schedule hit is after the duration": a window
    /// that starts before midnight and runs past it.
    #[test]
    fn schedule_windows_around_midnight() {
        // Fires daily at 23:30 for one hour: active 23:30–00:30.
        let schedule = "30 23 * * *";
        let at =
            |h: u64, m: u64| SimTime::ZERO + SimDuration::from_hours(h) + SimDuration::from_mins(m);
        // Sim day 0 starts at midnight; the 23:30 firing of the previous
        // (pre-simulation) day still covers 00:00–00:30.
        assert!(is_active(schedule, HOUR, at(0, 0)).unwrap());
        assert!(is_active(schedule, HOUR, at(0, 29)).unwrap());
        // Exactly one hour after the hit: Next(now−1h) is strictly after the
        // hit itself, so the window is closed at its end instant.
        assert!(!is_active(schedule, HOUR, at(0, 30)).unwrap());
        assert!(!is_active(schedule, HOUR, at(23, 29)).unwrap());
        assert!(is_active(schedule, HOUR, at(23, 30)).unwrap());
        assert!(is_active(schedule, HOUR, at(24, 15)).unwrap());
        // A weekday-only window: sim day 5 is a Saturday.
        assert!(is_active("0 9 * * mon-fri", Duration::from_secs(8 * 3600), at(9, 0)).unwrap());
        assert!(
            !is_active(
                "0 9 * * mon-fri",
                Duration::from_secs(8 * 3600),
                at(5 * 24 + 10, 0)
            )
            .unwrap()
        );
        // A never-firing schedule is active (upstream zero-time quirk).
        assert!(is_active("0 0 30 2 *", HOUR, at(3, 0)).unwrap());
    }

    /// core: nodepool_budgets_test.go IsActive cases on their own dates
    /// ("duration is longer than the recurrence", "hit is after the
    /// duration", "error indicating why the cron fails to parse").
    #[test]
    fn upstream_is_active_cases() {
        use crate::karpenter::disruption::cron::days_from_civil;
        // Sim time of 2024-01-07T00:00Z is before the sim epoch, so check
        // the schedule directly in Unix ms.
        let sunday = days_from_civil(2024, 1, 7) * 86_400_000;
        let active = |spec: &str, hours: i64| {
            Schedule::parse(spec)
                .unwrap()
                .next_after(sunday - hours * 3_600_000)
                .unwrap()
                <= sunday
        };
        assert!(active("@daily", 48));
        assert!(!active("30 6 * * SUN", 6));
        let err = is_active("0 0 * * tue-mon", HOUR, SimTime::ZERO).unwrap_err();
        assert!(
            err.to_string()
                .contains("beginning of range (2) beyond end of range (1)")
        );
    }

    /// core: nodepool_budgets_test.go "should return the budget for all
    /// disruption reasons when undefined" and "should get the minimum budget
    /// for each reason".
    #[test]
    fn reasons_filter_budgets() {
        let mut drift_only = budget(BudgetNodes::Count(0));
        drift_only.reasons = vec![DisruptionReason::Drifted];
        let mut empty_or_underutilized = budget(BudgetNodes::Count(2));
        empty_or_underutilized.reasons =
            vec![DisruptionReason::Empty, DisruptionReason::Underutilized];
        let p = with_budgets(vec![
            drift_only,
            empty_or_underutilized,
            budget(BudgetNodes::Percent(50)),
        ]);
        let now = SimTime::ZERO;
        assert_eq!(
            allowed_disruptions(&p, DisruptionReason::Drifted, 10, now),
            0
        );
        assert_eq!(allowed_disruptions(&p, DisruptionReason::Empty, 10, now), 2);
        assert_eq!(
            allowed_disruptions(&p, DisruptionReason::Underutilized, 2, now),
            1
        );
    }

    /// core: nodepool_budgets_test.go "should return zero values if a
    /// schedule is invalid" — fail closed, whatever the reason filter.
    #[test]
    fn invalid_budget_allows_nothing() {
        let mut broken = scheduled(BudgetNodes::Count(5), "* * *", HOUR);
        broken.reasons = vec![DisruptionReason::Drifted];
        let p = with_budgets(vec![budget(BudgetNodes::Count(5)), broken]);
        assert_eq!(
            allowed_disruptions(&p, DisruptionReason::Empty, 10, SimTime::ZERO),
            0
        );
        // A schedule without a duration is never active.
        let no_duration = Budget {
            schedule: Some("* * * * *".into()),
            ..budget(BudgetNodes::Count(0))
        };
        assert_eq!(
            budget_allows(&no_duration, 10, SimTime::ZERO + SimDuration::from_secs(30)),
            Ok(UNLIMITED)
        );
    }

    /// core: disruption/helpers.go `BuildDisruptionBudgetMapping`;
    /// suite_test.go "should not consider nodes that are not initialized as
    /// part of disruption count": NotReady or deleting nodes consume the
    /// budget, uninitialized ones are not counted.
    #[test]
    fn mapping_subtracts_disrupting_nodes() {
        let mut cluster = cluster_with_pool_nodes("default", 10);
        let ids: Vec<_> = cluster.nodes().map(|(id, _)| id).collect();
        cluster.node_mut(ids[0]).unwrap().marked_for_deletion = true;
        cluster.node_mut(ids[1]).unwrap().registered = false;
        cluster.node_mut(ids[2]).unwrap().initialized = false;
        cluster
            .node_mut(ids[3])
            .unwrap()
            .claim
            .as_mut()
            .unwrap()
            .lifecycle
            .instance_terminating = true;
        let counts = pool_node_counts(&cluster);
        assert_eq!(
            counts["default"],
            PoolNodeCounts {
                nodes: 8,
                disrupting: 2
            }
        );
        let (default, other) = (
            with_budgets(vec![budget(BudgetNodes::Percent(30))]),
            with_budgets(vec![budget(BudgetNodes::Count(1))]),
        );
        let pools: NodePoolsByName<'_> = [("default", &default), ("other", &other)].into();
        let mapping = budget_mapping(&cluster, &pools, DisruptionReason::Empty, SimTime::ZERO);
        // ceil(30% × 8) = 3, minus 2 disrupting.
        assert_eq!(mapping["default"], 1);
        assert_eq!(mapping["other"], 1);
        let one = with_budgets(vec![budget(BudgetNodes::Count(1))]);
        let tight: NodePoolsByName<'_> = [("default", &one)].into();
        assert_eq!(
            budget_mapping(&cluster, &tight, DisruptionReason::Empty, SimTime::ZERO)["default"],
            0
        );
    }
}
