//! Which attempts to record an event become an Event: the rules of the
//! event recorders of kube-scheduler and Karpenter, so that `events.csv`
//! holds what the API server would, not every attempt.
//!
//! - kube-scheduler's events.k8s.io recorder (client-go `tools/events`,
//!   `event_broadcaster.go`) keys an event by its type, action, reason,
//!   reporting controller and the object it regards, but not by its note
//!   (message). The first event of a key is written; later ones only
//!   count up its series (`series.count`, `series.lastObservedTime`).
//!   Every [`SERIES_FINISH`] from the recorder's start, `finishSeries`
//!   forgets the keys last observed more than [`SERIES_FINISH`] before, so
//!   the next event of such a key is a new Event again. A pod that stays
//!   pending through hundreds of failed attempts, each with its own
//!   `0/N nodes are available: …` message, has one `FailedScheduling`
//!   Event: the first message, with a count.
//! - Karpenter's recorder (core `pkg/events/recorder.go`) drops an event
//!   whose reason and dedupe values (here the pod) it published within
//!   the event's dedupe timeout ([`KARPENTER_FAILED_SCHEDULING_DEDUPE`],
//!   [`KARPENTER_NOMINATED_DEDUPE`]), and then asks the event's rate
//!   limiter, if it has one: `Nominated` shares one token bucket
//!   ([`NominationRateLimiter`]) across all pods.

use crate::karpenter::events::dedupe_drops;
use crate::time::{SimDuration, SimTime};

/// How long a series outlives its last observation, and how often the
/// recorder checks (client-go `tools/events` `finishTime`).
pub(super) const SERIES_FINISH: SimDuration = SimDuration::from_mins(6);

/// Karpenter's `FailedScheduling` dedupe timeout (core
/// `provisioning/scheduling/events.go` `PodFailedToScheduleEvent`).
pub(super) const KARPENTER_FAILED_SCHEDULING_DEDUPE: SimDuration = SimDuration::from_mins(5);

/// Karpenter's default dedupe timeout, which `Nominated` uses (core
/// `pkg/events/recorder.go` `defaultDedupeTimeout`).
pub(super) const KARPENTER_NOMINATED_DEDUPE: SimDuration = SimDuration::from_mins(2);

/// Whether an event of kube-scheduler's observed at `now` is a new Event
/// rather than one more count of the series last observed at
/// `last_observed` (`None`: never).
///
/// The recorder's checks run at 0, 6 min, 12 min, … of the run; a check
/// forgets a key whose last observation is strictly older than 6 min, so
/// a key last observed at `L` is gone from the first check after `L` + 6
/// min on. A check and an event at the same instant: the check runs first.
pub(super) fn opens_new_event(last_observed: Option<SimTime>, now: SimTime) -> bool {
    let Some(last) = last_observed else {
        return true;
    };
    let period = SERIES_FINISH.as_millis();
    let forgotten_at = (last.as_millis() / period + 2).saturating_mul(period);
    now.as_millis() >= forgotten_at
}

/// Whether Karpenter's recorder publishes an event at `now` whose key it
/// last published at `last_published` (`None`: never), with dedupe
/// `timeout` ([`dedupe_drops`]).
pub(super) fn karpenter_publishes(
    last_published: Option<SimTime>,
    timeout: SimDuration,
    now: SimTime,
) -> bool {
    last_published.is_none_or(|last| !dedupe_drops(last, timeout, now))
}

/// The token bucket Karpenter's `Nominated` events share
/// (core `provisioning/scheduling/events.go` `PodNominationRateLimiter`:
/// client-go `flowcontrol.NewTokenBucketRateLimiter(5, 10)`, 5 per
/// second, bursts of 10, full at the start).
#[derive(Debug, Clone)]
pub(super) struct NominationRateLimiter {
    /// Tokens in thousandths, as of `at`.
    milli_tokens: u64,
    at: SimTime,
}

impl NominationRateLimiter {
    const BURST: u64 = 10;
    /// Tokens added per second.
    const PER_SECOND: u64 = 5;

    pub(super) fn new() -> NominationRateLimiter {
        NominationRateLimiter {
            milli_tokens: Self::BURST * 1000,
            at: SimTime::ZERO,
        }
    }

    /// Takes a token at `now` if there is one (`TryAccept`).
    pub(super) fn try_accept(&mut self, now: SimTime) -> bool {
        let elapsed_ms = now.saturating_duration_since(self.at).as_millis();
        // 5 tokens per second: 5 thousandths of a token per millisecond.
        self.milli_tokens = self
            .milli_tokens
            .saturating_add(elapsed_ms.saturating_mul(Self::PER_SECOND))
            .min(Self::BURST * 1000);
        self.at = self.at.max(now);
        if self.milli_tokens >= 1000 {
            self.milli_tokens -= 1000;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: u64) -> SimTime {
        SimTime::from_millis(seconds * 1000)
    }

    #[test]
    fn the_first_event_of_a_key_is_written() {
        assert!(opens_new_event(None, at(0)));
        assert!(opens_new_event(None, at(5000)));
    }

    /// client-go tools/events eventseries_test.go `TestEventSeriesf`: a
    /// repeat of an isomorphic event is a series patch, not a new Event.
    #[test]
    fn repeats_within_the_series_only_count_up() {
        // Last seen at 1 min: the 6 min check keeps it (not older than
        // 6 min), the 12 min check forgets it.
        assert!(!opens_new_event(Some(at(60)), at(61)));
        assert!(!opens_new_event(Some(at(60)), at(6 * 60)));
        assert!(!opens_new_event(Some(at(60)), at(12 * 60 - 1)));
        assert!(opens_new_event(Some(at(60)), at(12 * 60)));
    }

    #[test]
    fn a_key_seen_exactly_at_a_check_lives_until_the_check_after_next() {
        // Seen at 6 min: at the 12 min check it is exactly 6 min old, not
        // older (client-go compares with Before), so the 18 min check
        // forgets it.
        assert!(!opens_new_event(Some(at(6 * 60)), at(18 * 60 - 1)));
        assert!(opens_new_event(Some(at(6 * 60)), at(18 * 60)));
    }

    #[test]
    fn karpenter_publishes_a_first_event_and_then_follows_the_dedupe() {
        let five = KARPENTER_FAILED_SCHEDULING_DEDUPE;
        assert!(karpenter_publishes(None, five, at(0)));
        assert!(!karpenter_publishes(Some(at(10)), five, at(310)));
        assert!(karpenter_publishes(Some(at(10)), five, at(311)));
    }

    /// core pkg/events suite_test.go "should only create max-burst when
    /// many events are created quickly" / "should allow many events over
    /// time due to smoothed rate limiting": 10, then 5 per second.
    #[test]
    fn the_nomination_bucket_allows_a_burst_of_ten_then_five_a_second() {
        let mut bucket = NominationRateLimiter::new();
        let first: usize = (0..20).filter(|_| bucket.try_accept(at(0))).count();
        assert_eq!(first, 10);
        assert!(!bucket.try_accept(at(0) + SimDuration::from_millis(199)));
        assert!(bucket.try_accept(at(0) + SimDuration::from_millis(200)));
        let next_second: usize = (0..20).filter(|_| bucket.try_accept(at(1))).count();
        assert_eq!(next_second, 4, "0.8 s after the last token: 4 more");
        let later: usize = (0..20).filter(|_| bucket.try_accept(at(100))).count();
        assert_eq!(later, 10, "the bucket holds at most 10");
    }
}
