//! Where a run's events go: kept in memory for the run's output, or handed
//! one by one to an [`EventSink`] as they happen, so that a long run does
//! not hold millions of events until its report is written.

use super::record::EventRecord;

/// Receives a run's events in time order, as they happen. The engine does
/// no I/O: a sink that writes somewhere keeps its own errors for its
/// owner to check after the run.
pub trait EventSink {
    /// One more event.
    fn record(&mut self, event: EventRecord);
}

/// Collects the events in memory.
impl EventSink for Vec<EventRecord> {
    fn record(&mut self, event: EventRecord) {
        self.push(event);
    }
}

/// The engine's event log: a count, and the events themselves either kept
/// or passed on to a sink.
pub(super) struct EventLog<'a> {
    sink: Option<&'a mut dyn EventSink>,
    kept: Vec<EventRecord>,
    count: usize,
}

impl<'a> EventLog<'a> {
    /// A log that keeps every event.
    pub(super) fn in_memory() -> EventLog<'a> {
        EventLog {
            sink: None,
            kept: Vec::new(),
            count: 0,
        }
    }

    /// A log that passes every event on to `sink` and keeps none.
    pub(super) fn to_sink(sink: &'a mut dyn EventSink) -> EventLog<'a> {
        EventLog {
            sink: Some(sink),
            kept: Vec::new(),
            count: 0,
        }
    }

    /// Logs one event.
    pub(super) fn record(&mut self, event: EventRecord) {
        self.count += 1;
        match &mut self.sink {
            Some(sink) => sink.record(event),
            None => self.kept.push(event),
        }
    }

    /// Events logged so far.
    pub(super) fn count(&self) -> usize {
        self.count
    }

    /// The events kept (none when they went to a sink).
    pub(super) fn into_kept(self) -> Vec<EventRecord> {
        self.kept
    }
}

impl std::fmt::Debug for EventLog<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLog")
            .field("streaming", &self.sink.is_some())
            .field("count", &self.count)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EventType;
    use crate::time::SimTime;

    fn event(reason: &str) -> EventRecord {
        EventRecord {
            time: SimTime::ZERO,
            kind: EventType::Normal,
            reason: reason.to_string(),
            object: "pod/default/a".to_string(),
            message: String::new(),
        }
    }

    #[test]
    fn a_sink_receives_the_events_and_the_log_keeps_only_the_count() {
        let mut received: Vec<EventRecord> = Vec::new();
        let mut log = EventLog::to_sink(&mut received);
        log.record(event("Scheduled"));
        log.record(event("Completed"));
        assert_eq!(log.count(), 2);
        assert!(log.into_kept().is_empty());
        let reasons: Vec<&str> = received.iter().map(|e| e.reason.as_str()).collect();
        assert_eq!(reasons, ["Scheduled", "Completed"]);
    }

    #[test]
    fn an_in_memory_log_keeps_the_events_in_order() {
        let mut log = EventLog::in_memory();
        log.record(event("Launched"));
        log.record(event("Registered"));
        assert_eq!(log.count(), 2);
        let kept = log.into_kept();
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[1].reason, "Registered");
    }
}
