//! Karpenter's event recorder dedupe as one rule (core
//! `pkg/events/recorder.go`): an event whose key (its reason and dedupe
//! values) was published within the event's dedupe timeout is dropped,
//! whatever its message. The recorder's cache (go-cache) treats an entry as
//! expired only once the clock is past its expiration, so the timeout's
//! last instant still drops. A dropped event does not renew the entry.

use crate::time::{SimDuration, SimTime};

/// Whether an event at `now` is dropped because its key was published at
/// `published`, under a dedupe of `timeout`.
pub fn dedupe_drops(published: SimTime, timeout: SimDuration, now: SimTime) -> bool {
    now <= published + timeout
}

#[cfg(test)]
mod tests {
    use super::*;

    /// core pkg/events suite_test.go "should only create a single event
    /// when many events are created quickly" / "should allow the dedupe
    /// timeout to be overridden".
    #[test]
    fn a_repeat_within_the_timeout_is_dropped_up_to_its_last_instant() {
        let five = SimDuration::from_mins(5);
        let at = SimTime::from_secs(10);
        assert!(dedupe_drops(at, five, at));
        assert!(dedupe_drops(at, five, SimTime::from_secs(310)));
        assert!(!dedupe_drops(
            at,
            five,
            SimTime::from_secs(310) + SimDuration::from_millis(1)
        ));
    }
}
