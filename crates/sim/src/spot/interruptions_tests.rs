//! Tests for the interruption model: the band → hazard table, the hazard's
//! long-run rate, storm victim counts, trace notices, the timeline, and a
//! plan over a fleet whose nodes come and go.

use rand::SeedableRng;

use super::*;
use crate::rng::{RngStreams, SimRng, Stream};
use crate::spot::files::RowRef;
use crate::spot::plan::FleetNode;

fn band(index: u8) -> InterruptionBand {
    InterruptionBand::new(index).unwrap()
}

fn hours(h: u64) -> SimTime {
    SimTime::ZERO + SimDuration::from_hours(h)
}

fn mins(m: u64) -> SimTime {
    SimTime::ZERO + SimDuration::from_mins(m)
}

/// The mapping table, against values computed independently
/// (`-math.log(1 - p) / 730` in Python) for p = 2.5 %, 7.5 %, ... 22.5 %.
#[test]
fn band_to_hazard_table() {
    let expected = [
        (0.025, 3.46819287456026e-05),
        (0.075, 1.0679663215029015e-04),
        (0.125, 1.829197159240036e-04),
        (0.175, 2.635231406129536e-04),
        (0.225, 3.4916746524491784e-04),
    ];
    for (index, (p, lambda)) in expected.into_iter().enumerate() {
        let band = band(index as u8);
        assert!(
            (band_monthly_probability(band) - p).abs() < 1e-15,
            "{band:?}"
        );
        let got = band_hazard_per_hour(band);
        assert!(
            (got - lambda).abs() / lambda < 1e-12,
            "{band:?}: {got} vs {lambda}"
        );
        // The defining property: a month at rate λ is interrupted with p.
        let month = 1.0 - (-got * HOURS_PER_MONTH).exp();
        assert!((month - p).abs() < 1e-12);
    }
}

/// 200,000 node-months per band, 10,000 from each of 20 seeds: the
/// observed rate (interruptions per exposed node-hour, exposure censored at
/// one month) is within ±5 % of λ, and the share interrupted within the
/// month within ±5 % of p. The smallest expected count (band 0) is ~5,000
/// interruptions, so 5 % is about 3.5 standard deviations.
#[test]
fn hazard_long_run_rate_matches_the_band() {
    let month = hours(730);
    for index in 0..5 {
        let band = band(index);
        let lambda = band_hazard_per_hour(band);
        let (mut interrupted, mut exposure_hours) = (0u64, 0.0f64);
        for seed in 0..20 {
            let mut rng = RngStreams::new(seed).get(Stream::Interruptions);
            for _ in 0..10_000 {
                let notice = draw_node_interruption(band, SimTime::ZERO, &mut rng).unwrap();
                if notice < month {
                    interrupted += 1;
                    exposure_hours += notice.as_millis() as f64 / 3_600_000.0;
                } else {
                    exposure_hours += 730.0;
                }
            }
        }
        let rate = interrupted as f64 / exposure_hours;
        assert!(
            (rate / lambda - 1.0).abs() < 0.05,
            "band {index}: {rate} vs {lambda}"
        );
        let share = interrupted as f64 / 200_000.0;
        let p = band_monthly_probability(band);
        assert!(
            (share / p - 1.0).abs() < 0.05,
            "band {index}: {share} vs {p}"
        );
    }
}

#[test]
fn hazard_draws_are_reproducible_and_offset_by_launch() {
    let draw = |seed: u64, launch: SimTime| {
        let mut rng = RngStreams::new(seed).get(Stream::Interruptions);
        draw_node_interruption(band(2), launch, &mut rng).unwrap()
    };
    assert_eq!(draw(1, SimTime::ZERO), draw(1, SimTime::ZERO));
    assert_ne!(draw(1, SimTime::ZERO), draw(2, SimTime::ZERO));
    assert_eq!(
        draw(1, hours(5)),
        draw(1, SimTime::ZERO) + SimDuration::from_hours(5)
    );
}

#[test]
fn fractions_are_exact_and_round_up() {
    assert_eq!(Fraction::parse("0.3").unwrap().millionths(), 300_000);
    assert_eq!(Fraction::parse("1").unwrap(), Fraction::ONE);
    assert_eq!(Fraction::parse("1.000").unwrap(), Fraction::ONE);
    assert_eq!(Fraction::parse(".25").unwrap().millionths(), 250_000);
    assert_eq!(Fraction::parse("0.000001").unwrap().millionths(), 1);
    // The exponent form, as YAML and JSON write floats.
    assert_eq!(Fraction::parse("1e-3").unwrap().millionths(), 1_000);
    assert_eq!(Fraction::parse("2.5E-1").unwrap().millionths(), 250_000);
    assert_eq!(Fraction::parse("1e0").unwrap(), Fraction::ONE);
    assert!(
        Fraction::parse("1e-7")
            .unwrap_err()
            .contains("six decimals")
    );
    for bad in [
        "0", "0.0", "1.5", "2", "-0.5", "", ".", "abc", "0.3.1", "1e", "e-1", "1e-1.5",
    ] {
        assert!(Fraction::parse(bad).is_err(), "{bad:?}");
    }
    assert!(
        Fraction::parse("0.1234567")
            .unwrap_err()
            .contains("six decimals")
    );
    let f = |text: &str| Fraction::parse(text).unwrap();
    // 10 × 0.3 = 3 exactly; 4 × 0.1 = 0.4 → 1; 3 × 0.5 = 1.5 → 2.
    assert_eq!(f("0.3").of(10), 3);
    assert_eq!(f("0.1").of(4), 1);
    assert_eq!(f("0.5").of(3), 2);
    assert_eq!(f("1").of(7), 7);
    assert_eq!(f("0.25").of(0), 0);
    assert_eq!(f("0.3").to_string(), "0.3");
    assert_eq!(Fraction::ONE.to_string(), "1");
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i:02}")).collect()
}

#[test]
fn storm_victim_counts_match_the_fraction() {
    let nodes = names("node", 10);
    let candidates: Vec<&str> = nodes.iter().map(String::as_str).collect();
    let fraction = Fraction::parse("0.3").unwrap();
    let mut seen = BTreeSet::new();
    for seed in 0..200 {
        let mut rng = SimRng::seed_from_u64(seed);
        let victims = select_storm_victims(&candidates, fraction, &mut rng);
        assert_eq!(victims.len(), 3, "seed {seed}");
        assert!(victims.windows(2).all(|w| w[0] < w[1]), "sorted, distinct");
        assert!(victims.iter().all(|v| candidates.contains(v)));
        // The same seed chooses the same nodes, whatever the input order.
        let mut reversed = candidates.clone();
        reversed.reverse();
        let again = select_storm_victims(&reversed, fraction, &mut SimRng::seed_from_u64(seed));
        assert_eq!(victims, again);
        seen.extend(victims);
    }
    // Over 200 seeds every node is chosen at some point.
    assert_eq!(seen.len(), 10);
    let all = select_storm_victims(&candidates, Fraction::ONE, &mut SimRng::seed_from_u64(0));
    assert_eq!(all, candidates);
    let none: Vec<&str> = select_storm_victims(&[], Fraction::ONE, &mut SimRng::seed_from_u64(0));
    assert!(none.is_empty());
}

/// Each of 10 nodes is a victim of a 0.3 storm in ~30 % of 10,000 seeds
/// (binomial SD ≈ 0.46 points; ±2.5 points is over 5 SD).
#[test]
fn storm_victims_are_uniform() {
    let nodes = names("n", 10);
    let candidates: Vec<&str> = nodes.iter().map(String::as_str).collect();
    let fraction = Fraction::parse("0.3").unwrap();
    let mut counts = [0u32; 10];
    let mut rng = SimRng::seed_from_u64(99);
    for _ in 0..10_000 {
        for victim in select_storm_victims(&candidates, fraction, &mut rng) {
            counts[candidates.iter().position(|c| *c == victim).unwrap()] += 1;
        }
    }
    for count in counts {
        let share = f64::from(count) / 10_000.0;
        assert!((share - 0.3).abs() < 0.025, "{counts:?}");
    }
}

#[test]
fn timeline_with_and_without_recommendations() {
    let t = interruption_timeline(hours(5), hours(1), None);
    assert_eq!(t.rebalance, None);
    assert_eq!(t.notice, hours(5));
    assert_eq!(t.reclaim, hours(5) + SimDuration::from_secs(120));
    let t = interruption_timeline(hours(5), hours(1), Some(DEFAULT_REBALANCE_LEAD));
    assert_eq!(t.rebalance, Some(hours(5) - SimDuration::from_mins(10)));
    // Never before the launch.
    let t = interruption_timeline(mins(63), hours(1), Some(DEFAULT_REBALANCE_LEAD));
    assert_eq!(t.rebalance, Some(hours(1)));
}

fn node<'a>(name: &'a str, instance_type: &'a str, zone: &'a str) -> SpotNode<'a> {
    SpotNode {
        name,
        instance_type,
        zone,
        band: Some(band(1)),
        launched: SimTime::ZERO,
    }
}

fn only(names: &[&str]) -> NameFilter {
    NameFilter::Only(names.iter().map(|s| s.to_string()).collect())
}

fn trace_row(
    at: SimTime,
    instance_type: &str,
    zone: &str,
    node: Option<&str>,
    line: u64,
) -> TraceNotice {
    TraceNotice {
        at,
        instance_type: instance_type.to_string(),
        zone: zone.to_string(),
        node: node.map(str::to_string),
        row: RowRef::Line(line),
    }
}

#[test]
fn storm_hits_matching_nodes_and_starts_an_outage() {
    let model = InterruptionModel::new(InterruptionSettings {
        advisor_hazard: false,
        rebalance_lead: Some(SimDuration::from_mins(5)),
        storms: vec![Storm {
            at: hours(5),
            instance_types: only(&["c6a.xlarge"]),
            zones: NameFilter::All,
            fraction: Fraction::ONE,
            unavailable_for: SimDuration::from_mins(30),
            capacity_types: Storm::spot_only(),
        }],
        trace: vec![],
    });
    let running = [
        node("b", "c6a.xlarge", "us-east-1b"),
        node("a", "c6a.xlarge", "us-east-1a"),
        node("c", "m5.large", "us-east-1a"),
    ];
    let trigger = model.triggers()[0];
    assert_eq!(
        trigger,
        Trigger {
            at: hours(5),
            kind: TriggerKind::Storm(0)
        }
    );
    let firing = model.fire(trigger, &running, &mut SimRng::seed_from_u64(0));
    let hit: Vec<&str> = firing.notices.iter().map(|n| n.node.as_str()).collect();
    assert_eq!(hit, vec!["a", "b"]);
    let first = &firing.notices[0];
    assert_eq!(first.cause, InterruptionCause::Storm(0));
    assert_eq!(
        first.timeline.rebalance,
        Some(hours(5) - SimDuration::from_mins(5))
    );
    assert_eq!(first.timeline.reclaim, hours(5) + NOTICE_TO_RECLAIM);
    let outage = firing.outage.unwrap();
    assert_eq!(
        (outage.from, outage.until),
        (hours(5), hours(5) + SimDuration::from_mins(30))
    );
    let spot = CapacityType::Spot;
    assert!(outage.covers("c6a.xlarge", "us-east-1f", spot, hours(5)));
    assert!(!outage.covers("c6a.xlarge", "us-east-1f", spot, outage.until));
    assert!(!outage.covers("m5.large", "us-east-1a", spot, hours(5)));
    assert!(!outage.covers("c6a.xlarge", "us-east-1f", CapacityType::OnDemand, hours(5)));
}

#[test]
fn trace_rows_target_a_named_node_or_pick_one() {
    let model = InterruptionModel::new(InterruptionSettings {
        trace: vec![
            trace_row(mins(30), "m5.large", "us-east-1a", None, 2),
            trace_row(mins(30), "m5.large", "us-east-1a", Some("y"), 3),
            trace_row(mins(30), "m5.large", "us-east-1a", Some("z"), 4),
            trace_row(mins(30), "c6a.xlarge", "us-east-1a", None, 5),
        ],
        ..InterruptionSettings::default()
    });
    let running = [
        node("x", "m5.large", "us-east-1a"),
        node("y", "m5.large", "us-east-1a"),
        node("z", "m5.large", "us-east-1b"),
    ];
    let triggers = model.triggers();
    assert_eq!(triggers.len(), 4);
    let mut rng = SimRng::seed_from_u64(3);
    let picked = model.fire(triggers[0], &running, &mut rng);
    assert_eq!(picked.notices.len(), 1);
    assert!(["x", "y"].contains(&picked.notices[0].node.as_str()));
    assert_eq!(
        picked.notices[0].cause,
        InterruptionCause::Trace(RowRef::Line(2))
    );
    let named = model.fire(triggers[1], &running, &mut rng);
    assert_eq!(named.notices[0].node, "y");
    // z runs in another zone than the row says: nothing, with a reason.
    let wrong_zone = model.fire(triggers[2], &running, &mut rng);
    assert!(wrong_zone.notices.is_empty());
    assert_eq!(
        wrong_zone.skipped.as_deref(),
        Some("trace line 4: no running spot node z of m5.large in us-east-1a at 30m0s")
    );
    let none = model.fire(triggers[3], &running, &mut rng);
    assert!(none.notices.is_empty() && none.skipped.is_some());
}

#[test]
fn hazard_only_when_enabled_and_banded() {
    let on = InterruptionModel::new(InterruptionSettings {
        advisor_hazard: true,
        ..InterruptionSettings::default()
    });
    let off = InterruptionModel::default();
    let banded = node("a", "m5.large", "us-east-1a");
    let unbanded = SpotNode {
        band: None,
        ..banded
    };
    let mut rng = SimRng::seed_from_u64(1);
    assert!(off.on_spot_launch(&banded, &mut rng).is_none());
    assert!(on.on_spot_launch(&unbanded, &mut rng).is_none());
    let notice = on.on_spot_launch(&banded, &mut rng).unwrap();
    assert_eq!(notice.cause, InterruptionCause::AdvisorHazard(band(1)));
    assert_eq!(notice.timeline.rebalance, None);
}

fn fleet_node(name: &str, zone: &str, launched: SimTime, ended: Option<SimTime>) -> FleetNode {
    FleetNode {
        name: name.to_string(),
        instance_type: "c6a.xlarge".to_string(),
        zone: zone.to_string(),
        band: Some(band(4)),
        launched,
        ended,
    }
}

/// A storm only sees the nodes alive at its instant: one launched after it
/// and one gone before it are never candidates.
#[test]
fn plan_over_a_fleet_that_changes() {
    let fleet = vec![
        fleet_node("early", "us-east-1a", SimTime::ZERO, Some(hours(2))),
        fleet_node("a1", "us-east-1a", hours(1), None),
        fleet_node("a2", "us-east-1a", hours(3), None),
        fleet_node("b1", "us-east-1b", hours(1), None),
        fleet_node("late", "us-east-1a", hours(6), None),
    ];
    let model = InterruptionModel::new(InterruptionSettings {
        storms: vec![Storm {
            at: hours(5),
            instance_types: NameFilter::All,
            zones: only(&["us-east-1a"]),
            fraction: Fraction::ONE,
            unavailable_for: SimDuration::ZERO,
            capacity_types: Storm::spot_only(),
        }],
        trace: vec![trace_row(hours(7), "c6a.xlarge", "us-east-1a", None, 2)],
        ..InterruptionSettings::default()
    });
    let mut hazard = SimRng::seed_from_u64(1);
    let mut victims = SimRng::seed_from_u64(2);
    let plan = model.plan(
        SimDuration::from_hours(8),
        fleet.as_slice(),
        &mut hazard,
        &mut victims,
    );
    let shown: Vec<(&str, SimTime)> = plan
        .notices
        .iter()
        .map(|n| (n.node.as_str(), n.timeline.notice))
        .collect();
    // The storm takes a1 and a2; the trace row at 7h finds only "late".
    assert_eq!(
        shown,
        vec![("a1", hours(5)), ("a2", hours(5)), ("late", hours(7))]
    );
    assert!(plan.outages.is_empty() && plan.skipped.is_empty());
}

/// With the hazard on, the plan is a pure function of the seeds, and no node
/// is noticed twice or after it is gone.
#[test]
fn plan_with_hazard_is_reproducible() {
    let fleet: Vec<FleetNode> = (0..200)
        .map(|i| {
            let launched = hours(i % 24);
            let ended = (i % 3 == 0).then(|| launched + SimDuration::from_hours(48));
            fleet_node(&format!("n{i:03}"), "us-east-1a", launched, ended)
        })
        .collect();
    let model = InterruptionModel::new(InterruptionSettings {
        advisor_hazard: true,
        rebalance_lead: Some(DEFAULT_REBALANCE_LEAD),
        storms: vec![Storm {
            at: hours(100),
            instance_types: NameFilter::All,
            zones: NameFilter::All,
            fraction: Fraction::parse("0.5").unwrap(),
            unavailable_for: SimDuration::from_mins(30),
            capacity_types: Storm::spot_only(),
        }],
        trace: vec![],
    });
    let run = |seed: u64| {
        let streams = RngStreams::new(seed);
        let mut hazard = streams.get(Stream::Interruptions);
        let mut victims = streams.named("interruptions/victims");
        model.plan(
            SimDuration::from_days(30),
            fleet.as_slice(),
            &mut hazard,
            &mut victims,
        )
    };
    let plan = run(5);
    assert_eq!(plan, run(5));
    assert_ne!(plan, run(6));
    let mut seen = BTreeSet::new();
    for notice in &plan.notices {
        assert!(seen.insert(notice.node.clone()), "{} twice", notice.node);
        let life = fleet.iter().find(|n| n.name == notice.node).unwrap();
        assert!(life.launched <= notice.timeline.notice);
        assert!(life.ended.is_none_or(|end| notice.timeline.notice < end));
    }
    let storm_hits = plan
        .notices
        .iter()
        .filter(|n| n.cause == InterruptionCause::Storm(0))
        .count();
    assert!(storm_hits > 0);
    assert!(plan.notices.len() > storm_hits, "hazard notices too");
    assert_eq!(plan.outages.len(), 1);
}
