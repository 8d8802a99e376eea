//! `events.csv`, written row by row: either from a finished run's events or
//! as an [`EventSink`] while the run is still going, so the rows never have
//! to be held in memory. Both ways give the same bytes. The evictions among
//! them are kept for the charts, and what `report.html` takes of them
//! ([`EventDigest`]) for the page, up to [`DIGEST_MAX_BYTES`]: a run whose
//! tally would hold more leaves the page to read `events.csv` back after
//! the run, so a long run's peak memory does not grow with its event log.

use std::io::{self, Write};

use crate::chart::data::Eviction;
use crate::html::EventDigest;
use crate::schema::{EventRow, RowWriter};
use crate::sim::engine::{EventRecord, EventSink};

/// An `events.csv` being written. As an [`EventSink`] it cannot return
/// errors, so the first one is kept and returned by [`EventsCsv::finish`]
/// (rows after it are dropped).
pub struct EventsCsv<W: Write> {
    file: RowWriter<W>,
    evictions: Vec<Eviction>,
    /// `None` once it would hold more than [`DIGEST_MAX_BYTES`].
    digest: Option<EventDigest>,
    error: Option<io::Error>,
}

/// The most a run's [`EventDigest`] may hold.
pub const DIGEST_MAX_BYTES: usize = 8 << 20;

impl<W: Write> EventsCsv<W> {
    /// Starts the file: writes the header row.
    pub fn new(out: W) -> io::Result<EventsCsv<W>> {
        Ok(EventsCsv {
            file: RowWriter::new::<EventRow>(out)?,
            evictions: Vec::new(),
            digest: Some(EventDigest::default()),
            error: None,
        })
    }

    /// Writes one row.
    pub fn write(&mut self, event: &EventRecord) -> io::Result<()> {
        let row = EventRow::from(event);
        self.evictions.extend(Eviction::of(&row));
        self.file.write(&row)?;
        if let Some(digest) = &mut self.digest {
            digest.add(row);
            if digest.held_bytes() > DIGEST_MAX_BYTES {
                self.digest = None;
            }
        }
        Ok(())
    }

    /// The evictions written so far, in file order; taken, so a second
    /// call returns those written since.
    pub fn take_evictions(&mut self) -> Vec<Eviction> {
        std::mem::take(&mut self.evictions)
    }

    /// What `report.html` takes of the rows written so far, unless it
    /// grew past [`DIGEST_MAX_BYTES`]; taken, so a second call returns
    /// `None`.
    pub fn take_digest(&mut self) -> Option<EventDigest> {
        self.digest.take()
    }

    /// Flushes the rows and returns the writer, or the first error met.
    pub fn finish(mut self) -> io::Result<W> {
        if let Some(error) = self.error.take() {
            return Err(error);
        }
        self.file.finish()
    }
}

impl<W: Write> EventSink for EventsCsv<W> {
    fn record(&mut self, event: EventRecord) {
        if self.error.is_none()
            && let Err(error) = self.write(&event)
        {
            self.error = Some(error);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::engine::EventType;
    use crate::sim::time::{SimDuration, SimTime};

    fn event(ms: u64, message: &str) -> EventRecord {
        EventRecord {
            time: SimTime::ZERO + SimDuration::from_millis(ms),
            kind: EventType::Warning,
            reason: "FailedScheduling".to_string(),
            object: "pod/default/web-1".to_string(),
            message: message.to_string(),
        }
    }

    #[test]
    fn rows_are_quoted_like_csv_and_times_have_three_decimals() {
        let mut file = EventsCsv::new(Vec::new()).unwrap();
        file.record(event(1500, "0/3 nodes are available: 3 Insufficient cpu."));
        file.record(event(2000, "a, b"));
        let text = String::from_utf8(file.finish().unwrap()).unwrap();
        assert_eq!(
            text,
            "time_s,type,reason,object,message\n\
             1.500,Warning,FailedScheduling,pod/default/web-1,0/3 nodes are available: 3 Insufficient cpu.\n\
             2.000,Warning,FailedScheduling,pod/default/web-1,\"a, b\"\n"
        );
    }

    #[test]
    fn the_digest_goes_once_it_would_hold_too_much() {
        let long = "x".repeat(1000);
        let pending = |i: u64| EventRecord {
            object: format!("pod/default/p-{i}"),
            ..event(i, &format!("{long} {i}"))
        };
        let mut small = EventsCsv::new(io::sink()).unwrap();
        let mut large = EventsCsv::new(io::sink()).unwrap();
        for i in 0..100 {
            small.record(pending(i));
        }
        for i in 0..(DIGEST_MAX_BYTES / 1000) as u64 {
            large.record(pending(i));
        }
        let kept = small.take_digest().expect("100 rows stay under the limit");
        assert!(kept.held_bytes() > 100 * 1000, "{}", kept.held_bytes());
        assert!(large.take_digest().is_none());
        // The file itself is whole either way.
        large.finish().unwrap();
    }

    /// A writer that fails once `limit` bytes were written.
    struct Full {
        written: usize,
        limit: usize,
    }

    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.written + buf.len() > self.limit {
                return Err(io::Error::other("disk full"));
            }
            self.written += buf.len();
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_first_write_error_is_returned_at_the_end() {
        let mut file = EventsCsv::new(Full {
            written: 0,
            limit: 40,
        })
        .unwrap();
        // The csv writer buffers; enough rows overflow its buffer.
        for i in 0..2000 {
            file.record(event(i, "a message long enough to fill the buffer soon"));
        }
        let error = file.finish().err().expect("the write error comes back");
        assert!(error.to_string().contains("disk full"), "{error}");
    }
}
