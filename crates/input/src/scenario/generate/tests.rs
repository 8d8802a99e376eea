//! Statistics of the generators over several seeds, and the replica and
//! cron schedules step by step.

use super::*;
use crate::karpenter::disruption::budgets::SIM_EPOCH_UNIX_SECONDS;

const SEEDS: [u64; 5] = [1, 2, 3, 42, 1234];

fn open(spec: GeneratorSpec, end: SimTime, seed: u64) -> Box<dyn StepSource> {
    GeneratorFactory {
        spec,
        start: SimTime::ZERO,
        end,
    }
    .open(seed)
    .unwrap()
}

fn drain(source: &mut dyn StepSource) -> Vec<Step> {
    let mut steps = Vec::new();
    while let Some(step) = source.next_step().unwrap() {
        steps.push(step);
    }
    steps
}

fn pods(arrivals: Arrivals, duration: Option<DurationDist>) -> GeneratorSpec {
    GeneratorSpec::Pods(PodsGenerator {
        name: "batch".into(),
        shape: PodShape {
            namespace: "default".into(),
            requests: vec![(ResourceKind::Cpu, AmountDist::Fixed(250))],
            ..PodShape::default()
        },
        arrivals,
        duration,
        job: None,
    })
}

fn hours(h: u64) -> SimTime {
    SimTime::ZERO + SimDuration::from_hours(h)
}

fn created(step: &Step) -> &Workload {
    match &step.action {
        StepAction::Apply { workloads, .. } => &workloads[0],
        other => panic!("expected an apply, got {other:?}"),
    }
}

/// A Poisson process at 120/h over 100 h makes 12 000 arrivals on average
/// (standard deviation √12000 ≈ 110, under 1 %); every seed lands within
/// 4 % and times never go backwards.
#[test]
fn poisson_arrivals_have_the_stated_mean_rate() {
    for seed in SEEDS {
        let spec = pods(Arrivals::Poisson(Rate { per_hour: 120.0 }), None);
        let steps = drain(open(spec, hours(100), seed).as_mut());
        let n = steps.len() as f64;
        assert!((n - 12_000.0).abs() < 480.0, "seed {seed}: {n} arrivals");
        assert!(steps.windows(2).all(|w| w[0].at <= w[1].at));
        assert!(steps.iter().all(|s| s.at < hours(100)));
    }
}

/// A day curve between 20/h and 100/h has a mean of 60/h over whole days:
/// 10 days make about 14 400 arrivals (within 4 %), and the hour around
/// the peak sees several times more than the hour around the trough
/// (expected ratio ≈ 100/20 = 5, accepted above 3).
#[test]
fn diurnal_arrivals_follow_the_curve() {
    let curve = DiurnalCurve {
        period: SimDuration::from_hours(24),
        peak: 100.0,
        trough: 20.0,
        peak_at: SimDuration::from_hours(14),
    };
    assert_eq!(curve.at(SimDuration::from_hours(14)), 100.0);
    assert!((curve.at(SimDuration::from_hours(2)) - 20.0).abs() < 1e-9);
    for seed in SEEDS {
        let steps = drain(open(pods(Arrivals::Diurnal(curve), None), hours(240), seed).as_mut());
        let n = steps.len() as f64;
        assert!((n - 14_400.0).abs() < 576.0, "seed {seed}: {n} arrivals");
        let in_hour = |h: u64| {
            steps
                .iter()
                .filter(|s| {
                    let hour_of_day = (s.at.as_millis() / 3_600_000) % 24;
                    hour_of_day == h
                })
                .count() as f64
        };
        let ratio = in_hour(14) / in_hour(2);
        assert!(ratio > 3.0, "seed {seed}: peak/trough ratio {ratio}");
    }
}

/// Bursts: exactly `size` arrivals per burst, the first burst at the start,
/// each within its spread.
#[test]
fn bursts_come_in_groups_within_their_spread() {
    let arrivals = Arrivals::Bursts {
        every: SimDuration::from_hours(1),
        size: 10,
        spread: SimDuration::from_mins(5),
    };
    let steps = drain(open(pods(arrivals, None), hours(5), 7).as_mut());
    assert_eq!(steps.len(), 50);
    for (i, step) in steps.iter().enumerate() {
        let burst = SimTime::ZERO + SimDuration::from_hours((i / 10) as u64);
        assert!(step.at >= burst && step.at < burst + SimDuration::from_mins(5));
    }
}

fn quantile(sorted: &[u64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize] as f64
}

fn durations(dist: DurationDist, seed: u64, n: usize) -> Vec<u64> {
    let mut rng = RngStreams::new(seed).named("test");
    let mut out: Vec<u64> = (0..n).map(|_| dist.sample(&mut rng).as_millis()).collect();
    out.sort_unstable();
    out
}

/// Exponential with mean 10 min: over 20 000 draws the sample mean is
/// within 3 % (its standard error is 0.7 %) and the median within 4 % of
/// 10 min × ln 2.
#[test]
fn exponential_durations_have_the_stated_mean_and_median() {
    let mean = 600_000.0;
    for seed in SEEDS {
        let d = durations(
            DurationDist::Exponential(SimDuration::from_mins(10)),
            seed,
            20_000,
        );
        let sample_mean = d.iter().sum::<u64>() as f64 / d.len() as f64;
        assert!(
            (sample_mean / mean - 1.0).abs() < 0.03,
            "seed {seed}: mean {sample_mean}"
        );
        let median = quantile(&d, 0.5);
        assert!((median / (mean * std::f64::consts::LN_2) - 1.0).abs() < 0.04);
    }
}

/// Lognormal from median 5 min and p90 30 min: the empirical median and
/// p90 of 20 000 draws are within 4 % and 6 %.
#[test]
fn lognormal_durations_match_median_and_p90() {
    let dist = DurationDist::LogNormal {
        median: SimDuration::from_mins(5),
        p90: SimDuration::from_mins(30),
    };
    for seed in SEEDS {
        let d = durations(dist, seed, 20_000);
        assert!(
            (quantile(&d, 0.5) / 300_000.0 - 1.0).abs() < 0.04,
            "seed {seed}"
        );
        assert!(
            (quantile(&d, 0.9) / 1_800_000.0 - 1.0).abs() < 0.06,
            "seed {seed}"
        );
    }
    let fixed = durations(DurationDist::Fixed(SimDuration::from_secs(42)), 1, 10);
    assert!(fixed.iter().all(|d| *d == 42_000));
}

/// Requests from a list take only listed values, each often; a uniform
/// range stays within its bounds with a mean near the middle.
#[test]
fn request_amounts_come_from_their_distribution() {
    let mut rng = RngStreams::new(3).named("test");
    let choice = AmountDist::Choice(vec![250, 500, 1000]);
    let draws: Vec<i64> = (0..3000).map(|_| choice.sample(&mut rng)).collect();
    for value in [250, 500, 1000] {
        let share = draws.iter().filter(|d| **d == value).count() as f64 / 3000.0;
        assert!((share - 1.0 / 3.0).abs() < 0.05, "{value}: {share}");
    }
    assert!(draws.iter().all(|d| [250, 500, 1000].contains(d)));
    let uniform = AmountDist::Uniform {
        low: 100,
        high: 300,
    };
    let draws: Vec<i64> = (0..3000).map(|_| uniform.sample(&mut rng)).collect();
    assert!(draws.iter().all(|d| (100..=300).contains(d)));
    let mean = draws.iter().sum::<i64>() as f64 / 3000.0;
    assert!((mean - 200.0).abs() < 5.0, "mean {mean}");
}

/// Each generator draws from its own streams: changing the run-time
/// distribution leaves the arrival times alone, and pods get their drawn
/// run time and requests.
#[test]
fn arrival_times_do_not_depend_on_other_draws() {
    let arrivals = Arrivals::Poisson(Rate { per_hour: 30.0 });
    let fixed = drain(open(pods(arrivals.clone(), None), hours(10), 9).as_mut());
    let drawn = drain(
        open(
            pods(
                arrivals,
                Some(DurationDist::Exponential(SimDuration::from_mins(3))),
            ),
            hours(10),
            9,
        )
        .as_mut(),
    );
    let times = |s: &[Step]| s.iter().map(|s| s.at).collect::<Vec<_>>();
    assert_eq!(times(&fixed), times(&drawn));
    let pod = created(&drawn[0]);
    assert_eq!(pod.kind, WorkloadKind::Pod);
    assert_eq!(pod.name, "batch-1");
    assert!(pod.template.run_duration.is_some());
    assert_eq!(pod.template.requests.cpu_millis(), 250);
    assert_eq!(pod.template.requests.pods(), 1);
}

fn deployment(replicas: ReplicaSchedule) -> GeneratorSpec {
    GeneratorSpec::Deployment(DeploymentGenerator {
        name: "web".into(),
        shape: PodShape {
            namespace: "shop".into(),
            ..PodShape::default()
        },
        replicas,
    })
}

fn scales(steps: &[Step]) -> Vec<(SimTime, u32)> {
    steps[1..]
        .iter()
        .map(|s| match &s.action {
            StepAction::Scale { target, replicas } => {
                assert_eq!(target.name, "web");
                assert_eq!(target.namespace, "shop");
                (s.at, *replicas)
            }
            other => panic!("expected a scale, got {other:?}"),
        })
        .collect()
}

/// Steps: created with the first count, then scaled at each later step
/// whose count differs.
#[test]
fn deployment_steps_scale_at_their_times() {
    let schedule = ReplicaSchedule::Steps(vec![
        (SimDuration::ZERO, 3),
        (SimDuration::from_hours(2), 10),
        (SimDuration::from_hours(3), 10),
        (SimDuration::from_hours(4), 1),
    ]);
    let steps = drain(open(deployment(schedule), hours(24), 1).as_mut());
    assert_eq!(
        created(&steps[0]).kind,
        WorkloadKind::Deployment { replicas: 3 }
    );
    assert_eq!(scales(&steps), vec![(hours(2), 10), (hours(4), 1)]);
}

/// A replica day curve peaks at `max` at `peakAt` and falls to `min` half a
/// period later.
#[test]
fn deployment_diurnal_replicas_reach_min_and_max() {
    let schedule = ReplicaSchedule::Diurnal {
        curve: DiurnalCurve {
            period: SimDuration::from_hours(24),
            peak: 20.0,
            trough: 2.0,
            peak_at: SimDuration::from_hours(12),
        },
        every: SimDuration::from_mins(5),
    };
    let steps = drain(open(deployment(schedule), hours(24), 1).as_mut());
    assert_eq!(
        created(&steps[0]).kind,
        WorkloadKind::Deployment { replicas: 2 }
    );
    let s = scales(&steps);
    assert_eq!(s.iter().map(|(_, r)| *r).max(), Some(20));
    let at_peak = s
        .iter()
        .rev()
        .find(|(t, _)| *t <= hours(12))
        .map(|(_, r)| *r);
    assert_eq!(at_peak, Some(20));
    // 2 + 18 × (1 + cos(2π × 11.92 h / 24 h)) / 2 rounds to 2 by the end.
    assert_eq!(
        s.last().map(|(_, r)| *r),
        Some(2),
        "back at the trough at the end"
    );
}

/// HPA over a load step 100 → 1000 → 200 with 100 per replica: created at
/// 1; the jump is limited to max(+4, ×2) per 15 s sync (1 → 5 → 10); the
/// drop waits for the 5-minute stabilization window (scale-down at
/// 2h05m, not 2h). Kubernetes HPA defaults (autoscaling/v2 defaults.go).
#[test]
fn hpa_scales_up_by_policy_and_down_after_stabilization() {
    let schedule = ReplicaSchedule::Hpa(HpaSpec {
        load: LoadCurve::Steps(vec![
            (SimDuration::ZERO, 100.0),
            (SimDuration::from_hours(1), 1000.0),
            (SimDuration::from_hours(2), 200.0),
        ]),
        target_per_replica: 100.0,
        min: 1,
        max: 20,
    });
    let steps = drain(open(deployment(schedule), hours(3), 1).as_mut());
    assert_eq!(
        created(&steps[0]).kind,
        WorkloadKind::Deployment { replicas: 1 }
    );
    let sync = SimDuration::from_secs(15);
    assert_eq!(
        scales(&steps),
        vec![
            (hours(1), 5),
            (hours(1) + sync, 10),
            (hours(2) + SimDuration::from_mins(5), 2),
        ]
    );
}

/// An hourly CronJob started at 0 fires at 0, 1h, ... (a firing at the
/// start counts), naming each Job after its scheduled minute since the
/// Unix epoch as the CronJob controller does.
#[test]
fn cron_jobs_fire_on_schedule() {
    let spec = GeneratorSpec::CronJob(CronJobGenerator {
        name: "report".into(),
        schedule: Schedule::parse("0 * * * *").unwrap(),
        shape: PodShape::default(),
        job: JobShape {
            parallelism: 2,
            completions: 4,
        },
        duration: Some(DurationDist::Fixed(SimDuration::from_mins(10))),
    });
    let steps = drain(open(spec, hours(5), 1).as_mut());
    let times: Vec<SimTime> = steps.iter().map(|s| s.at).collect();
    assert_eq!(times, (0..5).map(hours).collect::<Vec<_>>());
    let job = created(&steps[1]);
    assert_eq!(
        job.name,
        format!("report-{}", SIM_EPOCH_UNIX_SECONDS / 60 + 60)
    );
    let WorkloadKind::Job(spec) = job.kind else {
        panic!("expected a Job");
    };
    assert_eq!((spec.parallelism, spec.completions), (2, Some(4)));
    assert_eq!(spec.duration, Some(std::time::Duration::from_secs(600)));
}
