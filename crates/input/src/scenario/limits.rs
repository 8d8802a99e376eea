//! The largest scenario one run simulates. Values past these are refused
//! where the scenario is read, naming the limit, instead of exhausting the
//! machine's memory or running without end; each is documented under
//! "Limits" in `scenarios/README.md`. They are far above the bundled
//! scenarios (the largest, large-week, creates about 190,000 pods in 7
//! days, with at most 2,400 replicas per workload).

use crate::sim::SimDuration;

/// The longest run: a year. The per-minute time series and the passes of
/// the disruption loop grow with the run's length.
pub const MAX_DURATION: SimDuration = SimDuration::from_days(366);

/// The most replicas one workload asks for (a `scale` step, a generator's
/// replicas, a Job's parallelism or completions, a burst, a trace row or a
/// manifest): Kubernetes' own scalability target is 150,000 pods per
/// cluster.
pub const MAX_REPLICAS: u64 = 100_000;

/// The most pods a run creates, all sources together (see
/// [`MAX_PODS_CREATED`](crate::sim::engine::MAX_PODS_CREATED)); a
/// generator whose expected count alone passes it is refused when read.
pub const MAX_PODS: u64 = crate::sim::engine::MAX_PODS_CREATED as u64;

/// The fastest arrival rate of a generator, per second.
pub const MAX_RATE_PER_SECOND: f64 = 100.0;

/// The shortest period of a repeating schedule (`@every`, a replica
/// curve's `every`): cron fires on whole seconds.
pub const MIN_PERIOD: SimDuration = SimDuration::from_secs(1);

/// The range of a trace's `timeScale`.
pub const TIME_SCALE: (f64, f64) = (1e-6, 1e6);

/// The most runs one sweep enumerates (configurations × seeds): each run
/// keeps its summary row in memory until the sweep's files are written.
pub const MAX_SWEEP_RUNS: u64 = 100_000;
