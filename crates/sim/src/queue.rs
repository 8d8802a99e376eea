//! The event queue that drives a run: events come out in time order, and
//! events due at the same millisecond come out in the order they were
//! scheduled, so a run replays identically.
//!
//! The queue also owns the clock: [`EventQueue::now`] is the time of the last
//! event popped and never goes backwards. Scheduling an event before `now` is
//! an error ([`ScheduleError::InThePast`]) rather than a silent clamp, because
//! it can only come from an engine bug, and clamping would hide that bug while
//! reordering events.
//!
//! Events are never removed from the middle of the heap. To cancel, an event
//! carries a [`Stamp`] of the object it targets (a pod or node slot and that
//! slot's generation); bumping the slot's generation in a [`GenerationTable`]
//! makes every outstanding event for it stale, and [`EventQueue::pop_live`]
//! skips stale events. A pod-finished event made moot by a spot interruption
//! is the typical case.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::time::{SimDuration, SimTime};

/// Identifies one scheduled event: its insertion sequence number, unique
/// within a queue. Later-scheduled events have larger ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventId(u64);

impl EventId {
    /// The insertion sequence number (0 for the first event scheduled).
    pub const fn sequence(self) -> u64 {
        self.0
    }
}

/// Why an event could not be scheduled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// The requested time is before the queue's current time.
    #[error("cannot schedule an event at {at} before the current time {now}")]
    InThePast {
        /// Requested time.
        at: SimTime,
        /// The queue's clock.
        now: SimTime,
    },
}

/// One heap entry. Ordered by (time, sequence) only, reversed so that
/// `BinaryHeap` (a max-heap) yields the earliest first; the payload takes no
/// part in ordering and needs no `Ord`.
struct Entry<E> {
    at: SimTime,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq
    }
}

impl<E> Eq for Entry<E> {}

impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// A deterministic priority queue of events of type `E`, with its clock.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    now: SimTime,
    stale_skipped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue whose clock reads [`SimTime::ZERO`].
    pub fn new() -> Self {
        Self::starting_at(SimTime::ZERO)
    }

    /// An empty queue whose clock starts at `start`.
    pub fn starting_at(start: SimTime) -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            next_seq: 0,
            now: start,
            stale_skipped: 0,
        }
    }

    /// The current time: the time of the last event popped (or the start).
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Schedules `event` at `at`. Events at the same time come out in the
    /// order they were scheduled; `at == now` is allowed and runs after every
    /// event already due now.
    pub fn schedule(&mut self, at: SimTime, event: E) -> Result<EventId, ScheduleError> {
        if at < self.now {
            return Err(ScheduleError::InThePast { at, now: self.now });
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { at, seq, event });
        Ok(EventId(seq))
    }

    /// Schedules `event` at `now + delay` (saturating at [`SimTime::MAX`]);
    /// cannot fail.
    pub fn schedule_after(&mut self, delay: SimDuration, event: E) -> EventId {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry {
            at: self.now + delay,
            seq,
            event,
        });
        EventId(seq)
    }

    /// Removes the earliest event, advances the clock to its time and returns
    /// both. Stale events are returned too; see [`Self::pop_live`].
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let entry = self.heap.pop()?;
        self.now = entry.at;
        Some((entry.at, entry.event))
    }

    /// Like [`Self::pop`], but only if the earliest event is due at or before
    /// `horizon`; otherwise leaves the queue and the clock untouched.
    pub fn pop_until(&mut self, horizon: SimTime) -> Option<(SimTime, E)> {
        match self.peek_time() {
            Some(at) if at <= horizon => self.pop(),
            _ => None,
        }
    }

    /// Pops the earliest event for which `is_live` holds, discarding stale
    /// events before it without moving the clock to their times (they never
    /// happened). The number discarded is counted in [`Self::stale_skipped`].
    pub fn pop_live(&mut self, mut is_live: impl FnMut(&E) -> bool) -> Option<(SimTime, E)> {
        self.discard_stale_head(&mut is_live);
        self.pop()
    }

    /// The time of the earliest live event, after discarding stale events at
    /// the head of the queue. Does not move the clock.
    pub fn peek_live_time(&mut self, mut is_live: impl FnMut(&E) -> bool) -> Option<SimTime> {
        self.discard_stale_head(&mut is_live);
        self.peek_time()
    }

    fn discard_stale_head(&mut self, is_live: &mut impl FnMut(&E) -> bool) {
        while let Some(head) = self.heap.peek() {
            if is_live(&head.event) {
                break;
            }
            self.heap.pop();
            self.stale_skipped += 1;
        }
    }

    /// The time of the earliest event (live or stale), if any.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|entry| entry.at)
    }

    /// Number of events in the queue, stale ones included.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when no events are queued.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// How many stale events `pop_live`/`peek_live_time` have discarded.
    pub fn stale_skipped(&self) -> u64 {
        self.stale_skipped
    }
}

/// The generation of one object slot; bumped each time the slot's pending
/// events must be cancelled (or the slot is reused for a new object).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Generation(u64);

/// What an event carries to name its target: the object's slot index (its
/// arena index) and the slot's generation when the event was scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Stamp {
    /// Arena index of the target object.
    pub index: usize,
    /// Generation of that slot when the event was scheduled.
    pub generation: Generation,
}

/// Current generation per object slot, for lazy cancellation of events.
#[derive(Debug, Clone, Default)]
pub struct GenerationTable {
    generations: Vec<Generation>,
}

impl GenerationTable {
    /// An empty table; slots spring into existence at generation 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// A stamp naming slot `index` at its current generation, to put in an
    /// event aimed at that object.
    pub fn stamp(&self, index: usize) -> Stamp {
        Stamp {
            index,
            generation: self.current(index),
        }
    }

    /// The slot's current generation (0 for a slot never invalidated).
    pub fn current(&self, index: usize) -> Generation {
        self.generations.get(index).copied().unwrap_or_default()
    }

    /// Makes every outstanding stamp for slot `index` stale and returns the
    /// new generation.
    pub fn invalidate(&mut self, index: usize) -> Generation {
        if index >= self.generations.len() {
            self.generations.resize(index + 1, Generation::default());
        }
        let slot = &mut self.generations[index];
        slot.0 += 1;
        *slot
    }

    /// True if `stamp` still names the slot's current generation.
    pub fn is_current(&self, stamp: Stamp) -> bool {
        self.current(stamp.index) == stamp.generation
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> SimTime {
        SimTime::from_millis(ms)
    }

    fn drain<E>(queue: &mut EventQueue<E>) -> Vec<(u64, E)> {
        std::iter::from_fn(|| queue.pop().map(|(at, e)| (at.as_millis(), e))).collect()
    }

    #[test]
    fn pops_in_time_order_and_fifo_among_equal_times() {
        let mut queue = EventQueue::new();
        for (at, name) in [
            (30, "c1"),
            (10, "a1"),
            (30, "c2"),
            (20, "b"),
            (10, "a2"),
            (30, "c3"),
        ] {
            queue.schedule(t(at), name).unwrap();
        }
        assert_eq!(queue.len(), 6);
        assert_eq!(queue.peek_time(), Some(t(10)));
        assert_eq!(
            drain(&mut queue),
            vec![
                (10, "a1"),
                (10, "a2"),
                (20, "b"),
                (30, "c1"),
                (30, "c2"),
                (30, "c3")
            ]
        );
        assert!(queue.is_empty());
        assert_eq!(queue.now(), t(30));
    }

    #[test]
    fn fifo_holds_for_many_equal_times() {
        // 1 000 events at one instant must come out in insertion order; a heap
        // without the sequence tie-break would scramble them.
        let mut queue = EventQueue::new();
        for i in 0..1_000u32 {
            queue.schedule(t(5), i).unwrap();
        }
        let order: Vec<u32> = drain(&mut queue).into_iter().map(|(_, e)| e).collect();
        assert_eq!(order, (0..1_000).collect::<Vec<_>>());
    }

    #[test]
    fn event_ids_are_insertion_sequence() {
        let mut queue = EventQueue::new();
        let a = queue.schedule(t(9), 'a').unwrap();
        let b = queue.schedule_after(SimDuration::from_millis(1), 'b');
        assert_eq!((a.sequence(), b.sequence()), (0, 1));
        assert!(a < b);
    }

    #[test]
    fn clock_never_goes_backwards_and_past_is_rejected() {
        let mut queue = EventQueue::new();
        queue.schedule(t(100), "x").unwrap();
        assert_eq!(queue.pop(), Some((t(100), "x")));
        assert_eq!(queue.now(), t(100));
        assert_eq!(
            queue.schedule(t(99), "late"),
            Err(ScheduleError::InThePast {
                at: t(99),
                now: t(100)
            })
        );
        assert!(queue.is_empty(), "a rejected event must not be queued");
        // Scheduling at `now` is fine and runs after events already due now.
        queue.schedule(t(100), "first").unwrap();
        queue.schedule(t(100), "second").unwrap();
        assert_eq!(drain(&mut queue), vec![(100, "first"), (100, "second")]);
        // Relative scheduling is from now: 100 + 50.
        queue.schedule_after(SimDuration::from_millis(50), "later");
        assert_eq!(queue.pop(), Some((t(150), "later")));
    }

    #[test]
    fn pop_until_respects_the_horizon() {
        let mut queue = EventQueue::new();
        queue.schedule(t(10), 1).unwrap();
        queue.schedule(t(20), 2).unwrap();
        assert_eq!(queue.pop_until(t(15)), Some((t(10), 1)));
        assert_eq!(queue.pop_until(t(15)), None);
        assert_eq!(queue.now(), t(10), "a refused pop must not move the clock");
        assert_eq!(queue.pop_until(t(20)), Some((t(20), 2)));
    }

    #[derive(Debug, PartialEq)]
    enum Ev {
        PodFinished(Stamp),
        Tick,
    }

    #[test]
    fn stale_events_are_skipped_after_invalidation() {
        let mut generations = GenerationTable::new();
        let mut queue = EventQueue::new();
        let pod0 = generations.stamp(0);
        let pod1 = generations.stamp(1);
        queue.schedule(t(50), Ev::PodFinished(pod0)).unwrap();
        queue.schedule(t(60), Ev::PodFinished(pod1)).unwrap();
        queue.schedule(t(70), Ev::Tick).unwrap();
        // Pod 0 is evicted before it finishes: its pending event goes stale.
        generations.invalidate(0);
        // The re-created pod reuses slot 0 and gets a fresh event.
        let pod0_again = generations.stamp(0);
        assert_ne!(pod0, pod0_again);
        queue.schedule(t(80), Ev::PodFinished(pod0_again)).unwrap();

        let is_live = |ev: &Ev| match ev {
            Ev::PodFinished(stamp) => generations.is_current(*stamp),
            Ev::Tick => true,
        };
        assert_eq!(queue.peek_live_time(is_live), Some(t(60)));
        assert_eq!(
            queue.now(),
            SimTime::ZERO,
            "discarding does not move the clock"
        );
        let mut seen = Vec::new();
        while let Some((at, ev)) = queue.pop_live(is_live) {
            seen.push((at.as_millis(), ev));
        }
        assert_eq!(
            seen,
            vec![
                (60, Ev::PodFinished(pod1)),
                (70, Ev::Tick),
                (80, Ev::PodFinished(pod0_again)),
            ]
        );
        assert_eq!(queue.stale_skipped(), 1);
    }

    #[test]
    fn generation_table_counts_per_slot() {
        let mut generations = GenerationTable::new();
        let before = generations.stamp(7);
        assert!(generations.is_current(before));
        assert_eq!(generations.invalidate(7), Generation(1));
        assert_eq!(generations.invalidate(7), Generation(2));
        assert!(!generations.is_current(before));
        // Other slots, below and above, are untouched.
        assert_eq!(generations.current(3), Generation(0));
        assert_eq!(generations.current(100), Generation(0));
    }
}
