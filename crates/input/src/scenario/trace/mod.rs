//! Streamed trace importers: recordings of pod and object events, read one
//! record at a time when the engine's clock reaches it, so a trace of any
//! size runs in bounded memory.
//!
//! Five formats ([`TraceFormat`]): karpsim's documented generic event CSV
//! ([`generic`]), the Alibaba GPU-cluster pod list ([`alibaba`]), Kubernetes
//! audit logs ([`audit`]), SimKube trace files ([`simkube`]) and Karpenter's
//! kubereplay captures ([`kubereplay`]); the last three record real
//! Kubernetes objects, read by [`objects`]. Each reader ([`EventReader`])
//! turns records into [`TraceEvent`]s in trace time (seconds since the
//! recording's first record); this module places them on the run's clock:
//!
//! - only rows with `start ≤ time < end` (trace seconds) are used; rows
//!   before `start` are passed over, and reading stops at the first row at
//!   or after `end`, so traces must be in time order (a row earlier than
//!   the one before it is unusable);
//! - a row at trace time `t` happens at `at + (t − start) × timeScale` on
//!   the run's clock, and run times shrink or stretch by the same factor;
//! - `sample: f` keeps each object with probability `f`, decided by a hash
//!   of the scenario seed, the trace's stream name and the object's
//!   namespace and name, so every event of one object is kept or dropped
//!   together and a different window keeps the same objects;
//! - an unusable row (a bad number, a negative run time, an unknown kind)
//!   is an error naming the file, row and column, or, with skipping on
//!   (`--skip-bad-rows`), passed over and counted in the run summary.

pub mod alibaba;
pub mod audit;
pub mod generic;
pub mod inspect;
pub mod kubereplay;
pub mod msgpack;
pub mod objects;
pub mod simkube;

#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

use crate::kube::pod::PodSpec;
use crate::kube::workload::{JobSpec, PodDisruptionBudget, Workload, WorkloadKind};
use crate::sim::engine::{SourceError, SourceFactory, Step, StepAction, StepSource, Target};
use crate::sim::rng::{Stream, stream_seed};
use crate::sim::{SimDuration, SimTime};
use crate::yaml::{NotUtf8, Position};

/// The supported trace formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// karpsim's generic event CSV (see [`generic`]).
    Generic,
    /// The Alibaba `openb_pod_list` CSV (see [`alibaba`]).
    Alibaba,
    /// Kubernetes audit log, `audit.k8s.io/v1` events as JSON lines (see
    /// [`audit`]).
    AuditLog,
    /// SimKube trace file, format version 2 (see [`simkube`]).
    SimKube,
    /// kubereplay `replay.json` (see [`kubereplay`]).
    KubeReplay,
}

impl TraceFormat {
    /// The name used in scenario files.
    pub fn as_str(self) -> &'static str {
        match self {
            TraceFormat::Generic => "generic",
            TraceFormat::Alibaba => "alibaba",
            TraceFormat::AuditLog => "audit-log",
            TraceFormat::SimKube => "simkube",
            TraceFormat::KubeReplay => "kubereplay",
        }
    }

    /// The format named `name` in scenario files and on the command line.
    pub fn parse(name: &str) -> Option<TraceFormat> {
        TraceFormat::ALL.into_iter().find(|f| f.as_str() == name)
    }

    /// Every format, in the order the docs list them.
    pub const ALL: [TraceFormat; 5] = [
        TraceFormat::Generic,
        TraceFormat::Alibaba,
        TraceFormat::AuditLog,
        TraceFormat::SimKube,
        TraceFormat::KubeReplay,
    ];
}

/// Namespaces a recording's objects are dropped from unless the scenario
/// lists its own (`excludeNamespaces`): kubereplay's default
/// (`DefaultExcludedNamespaces` in tools/kubereplay/pkg/parser/types.go).
pub const DEFAULT_EXCLUDED_NAMESPACES: [&str; 3] =
    ["kube-system", "kube-public", "kube-node-lease"];

/// A trace workload item, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSpec {
    /// The CSV file (absolute path).
    pub file: PathBuf,
    /// Its format.
    pub format: TraceFormat,
    /// First trace time used, in seconds of the trace.
    pub start: f64,
    /// Trace time at which reading stops (exclusive); `None` = the end.
    pub end: Option<f64>,
    /// Run seconds per trace second (> 0): 0.1 plays the trace ten times
    /// faster.
    pub time_scale: f64,
    /// Fraction of objects kept, in (0, 1].
    pub sample: f64,
    /// Where trace time `start` falls on the run's clock.
    pub at: SimTime,
    /// Name of the sampling stream (unique per trace item).
    pub stream: String,
    /// Skip unusable rows (counting them) instead of failing.
    pub skip_bad_rows: bool,
    /// Namespaces whose objects are not replayed (audit-log, simkube and
    /// kubereplay formats).
    pub exclude_namespaces: Vec<String>,
}

/// Why a trace could not be read. Every message names the file; row
/// problems also name the row (data rows counted from 1, the header not
/// included), its line in the file and the column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// The file could not be opened or read.
    #[error("{file}: cannot read trace: {reason}")]
    Io {
        /// The file.
        file: String,
        /// The OS error.
        reason: String,
    },
    /// The header lacks a required column (or is missing).
    #[error("{file}: header: {message}")]
    Header {
        /// The file.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// The file is not UTF-8 text.
    #[error("{file}:{}: {error}", error.position)]
    NotUtf8 {
        /// The file.
        file: String,
        /// Where the first invalid byte is.
        error: NotUtf8,
    },
    /// An unusable line of a line-oriented recording (an audit log).
    #[error("{file}:{line}: {message}")]
    Line {
        /// The file.
        file: String,
        /// Line in the file, from 1.
        line: u64,
        /// What is wrong, naming the field.
        message: String,
    },
    /// An unusable event of a recording read whole (SimKube, kubereplay).
    #[error("{file}: {place}: {message}")]
    Event {
        /// The file.
        file: String,
        /// Which event: `events[3]`, `events[3].applied_objs[1]`.
        place: String,
        /// What is wrong, naming the field.
        message: String,
    },
    /// The file is not a recording of its format (not msgpack, another
    /// SimKube version, not JSON).
    #[error("{file}: {message}")]
    Format {
        /// The file.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// An unusable row.
    #[error("{file}:{line}: row {row}, column {column}: {message}")]
    Row {
        /// The file.
        file: String,
        /// Data row number, from 1.
        row: u64,
        /// Line in the file, from 1.
        line: u64,
        /// The column at fault.
        column: String,
        /// What is wrong.
        message: String,
    },
}

/// A problem with one row, before the file and row are attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowProblem {
    /// The column at fault (`*` for the whole row).
    pub column: String,
    /// What is wrong.
    pub message: String,
}

impl RowProblem {
    /// A problem in `column`.
    pub fn new(column: &str, message: impl Into<String>) -> RowProblem {
        RowProblem {
            column: column.to_string(),
            message: message.into(),
        }
    }
}

/// One event of a trace, in trace time.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceEvent {
    /// Seconds since the trace's origin.
    pub time: f64,
    /// What happens.
    pub action: TraceAction,
}

/// What a trace event does.
#[derive(Debug, Clone, PartialEq)]
pub enum TraceAction {
    /// Create an object.
    Create {
        /// The object (its kind, namespace and name).
        target: Target,
        /// Replicas (Deployment, StatefulSet, ReplicaSet) or parallelism
        /// and completions (Job); ignored otherwise.
        replicas: u32,
        /// The pod (template), without run time.
        pod: Box<PodSpec>,
        /// Run time of its pods in trace seconds; `None` = no end.
        duration: Option<f64>,
    },
    /// Set a replica count.
    Scale {
        /// The object.
        target: Target,
        /// The new count.
        replicas: u32,
    },
    /// Delete an object.
    Delete {
        /// The object.
        target: Target,
    },
    /// Apply recorded Kubernetes objects (create, or replace an existing
    /// one's spec). Run times in them are in trace seconds.
    Apply {
        /// Pod-creating objects.
        workloads: Vec<Workload>,
        /// PodDisruptionBudgets.
        pdbs: Vec<PodDisruptionBudget>,
        /// Whether the recording shows an update of an object it showed
        /// before (for `trace inspect`).
        update: bool,
    },
}

impl TraceAction {
    /// The namespace and name that decide sampling.
    fn sample_key(&self) -> (&str, &str) {
        match self {
            TraceAction::Create { target, .. }
            | TraceAction::Scale { target, .. }
            | TraceAction::Delete { target } => (&target.namespace, &target.name),
            TraceAction::Apply {
                workloads, pdbs, ..
            } => workloads
                .first()
                .map(|w| (w.namespace.as_str(), w.name.as_str()))
                .or_else(|| {
                    pdbs.first()
                        .map(|p| (p.namespace.as_str(), p.name.as_str()))
                })
                .unwrap_or(("", "")),
        }
    }
}

/// A recording read one event at a time, in time order.
pub trait EventReader {
    /// The next usable event, or `None` at the end of the recording.
    fn next_event(&mut self) -> Result<Option<TraceEvent>, TraceError>;
    /// Unusable records skipped so far (`--skip-bad-rows`).
    fn skipped(&self) -> u64;
    /// Records read but not replayed, by reason: not errors (an audit
    /// log's reads, leases, failed requests, …).
    fn ignored(&self) -> std::collections::BTreeMap<String, u64> {
        std::collections::BTreeMap::new()
    }
    /// What the reader noticed about the recording's objects, each once
    /// (fields karpsim does not model).
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A row format: maps the header to columns, then rows to events.
pub trait RowFormat {
    /// Reads the header row; an error names what is missing.
    fn header(&mut self, header: &csv::StringRecord) -> Result<(), String>;
    /// Reads one data row.
    fn row(&self, record: &csv::StringRecord) -> Result<TraceEvent, RowProblem>;
}

/// Streams a CSV trace as [`TraceEvent`]s in trace time, without the
/// window, sampling or placement (see [`TraceSource`] for those).
pub struct TraceRows<R: Read> {
    file: String,
    reader: csv::Reader<Utf8Checked<R>>,
    /// The header's column names, for rows of the wrong length.
    header: Vec<String>,
    format: Box<dyn RowFormat + Send>,
    record: csv::StringRecord,
    row: u64,
    last_time: f64,
    skip_bad_rows: bool,
    skipped: u64,
}

impl<R: Read> TraceRows<R> {
    /// Reads the header of `input` (named `file` in errors).
    pub fn new(
        file: &str,
        input: R,
        mut format: Box<dyn RowFormat + Send>,
        skip_bad_rows: bool,
    ) -> Result<TraceRows<R>, TraceError> {
        // Flexible, so that a row of the wrong length reaches the check in
        // `next_event`, which names the columns, instead of csv's message.
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(true)
            .from_reader(Utf8Checked::new(input));
        let header = reader.headers().map_err(|e| read_error(file, e))?.clone();
        format
            .header(&header)
            .map_err(|message| TraceError::Header {
                file: file.to_string(),
                message,
            })?;
        Ok(TraceRows {
            file: file.to_string(),
            reader,
            header: header.iter().map(|h| h.trim().to_string()).collect(),
            format,
            record: csv::StringRecord::new(),
            row: 0,
            last_time: f64::NEG_INFINITY,
            skip_bad_rows,
            skipped: 0,
        })
    }

    /// Unusable rows skipped so far.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The next usable event, or `None` at the end of the file.
    pub fn next_event(&mut self) -> Result<Option<TraceEvent>, TraceError> {
        loop {
            let read = self.reader.read_record(&mut self.record);
            let line = match &read {
                Ok(_) => self.record.position().map_or(0, csv::Position::line),
                Err(error) => error.position().map_or(0, csv::Position::line),
            };
            let problem = match read {
                Ok(false) => return Ok(None),
                Ok(true) if self.record.len() != self.header.len() => {
                    self.row += 1;
                    Err(RowProblem::new(
                        "*",
                        format!(
                            "{} {}, but the header has {} columns ({})",
                            self.record.len(),
                            if self.record.len() == 1 {
                                "field"
                            } else {
                                "fields"
                            },
                            self.header.len(),
                            self.header.join(", ")
                        ),
                    ))
                }
                Ok(true) => {
                    self.row += 1;
                    match self.format.row(&self.record) {
                        Ok(event) if event.time < self.last_time => Err(RowProblem::new(
                            "time",
                            format!(
                                "{} is earlier than the row before ({}); traces must be in time order",
                                event.time, self.last_time
                            ),
                        )),
                        other => other,
                    }
                }
                Err(error) => match error.kind() {
                    csv::ErrorKind::Io(_) => return Err(read_error(&self.file, error)),
                    // Not reached: the input is checked to be UTF-8 and rows
                    // of any length are read; kept as a row problem in
                    // karpsim's words rather than csv's.
                    _ => {
                        self.row += 1;
                        Err(RowProblem::new("*", "unreadable row"))
                    }
                },
            };
            match problem {
                Ok(event) => {
                    self.last_time = event.time;
                    return Ok(Some(event));
                }
                Err(_) if self.skip_bad_rows => self.skipped += 1,
                Err(problem) => {
                    return Err(TraceError::Row {
                        file: self.file.clone(),
                        row: self.row,
                        line,
                        column: problem.column,
                        message: problem.message,
                    });
                }
            }
        }
    }
}

impl<R: Read> EventReader for TraceRows<R> {
    fn next_event(&mut self) -> Result<Option<TraceEvent>, TraceError> {
        TraceRows::next_event(self)
    }

    fn skipped(&self) -> u64 {
        self.skipped
    }
}

/// A csv reading error: the file's UTF-8 problem, or the OS error.
fn read_error(file: &str, error: csv::Error) -> TraceError {
    let not_utf8 = match error.kind() {
        csv::ErrorKind::Io(e) => e
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<NotUtf8>())
            .copied(),
        _ => None,
    };
    match not_utf8 {
        Some(error) => TraceError::NotUtf8 {
            file: file.to_string(),
            error,
        },
        None => TraceError::Io {
            file: file.to_string(),
            reason: match error.into_kind() {
                csv::ErrorKind::Io(e) => e.to_string(),
                _ => "unreadable header".to_string(),
            },
        },
    }
}

/// A reader that passes on only UTF-8 text and fails at the first byte
/// that is not, naming its line, column and offset: the trace is streamed,
/// so this is the one place that sees every byte in order.
pub struct Utf8Checked<R> {
    inner: R,
    /// Bytes read but not handed out; the first `valid` are checked.
    pending: Vec<u8>,
    valid: usize,
    /// Bytes checked so far in the whole file, and the position after them.
    checked: usize,
    position: Position,
    failed: Option<NotUtf8>,
}

impl<R: Read> Utf8Checked<R> {
    /// Checks `inner`.
    pub fn new(inner: R) -> Utf8Checked<R> {
        Utf8Checked {
            inner,
            pending: Vec::new(),
            valid: 0,
            checked: 0,
            position: Position { line: 1, column: 1 },
            failed: None,
        }
    }

    /// Counts `bytes` (valid UTF-8) into the position.
    fn advance(&mut self, from: usize, to: usize) {
        for &byte in &self.pending[from..to] {
            if byte == b'\n' {
                self.position.line += 1;
                self.position.column = 1;
            } else if byte & 0xC0 != 0x80 {
                // Not a continuation byte: a new character.
                self.position.column += 1;
            }
        }
        self.checked += to - from;
    }

    fn fail_at(&mut self, index: usize) {
        self.failed = Some(NotUtf8 {
            position: self.position,
            offset: self.checked,
            value: self.pending[index],
        });
    }
}

impl<R: Read> Read for Utf8Checked<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if self.valid > 0 || out.is_empty() {
                let n = out.len().min(self.valid);
                out[..n].copy_from_slice(&self.pending[..n]);
                self.pending.drain(..n);
                self.valid -= n;
                return Ok(n);
            }
            if let Some(failed) = self.failed {
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, failed));
            }
            let mut chunk = [0u8; 8192];
            let read = self.inner.read(&mut chunk)?;
            if read == 0 {
                if self.pending.is_empty() {
                    return Ok(0);
                }
                // A character cut off by the end of the file.
                self.fail_at(0);
                continue;
            }
            self.pending.extend_from_slice(&chunk[..read]);
            match std::str::from_utf8(&self.pending) {
                Ok(_) => {
                    self.advance(0, self.pending.len());
                    self.valid = self.pending.len();
                }
                Err(err) => {
                    let good = err.valid_up_to();
                    self.advance(0, good);
                    self.valid = good;
                    if err.error_len().is_some() {
                        self.fail_at(good);
                    }
                    // Otherwise a character continues in the next chunk.
                }
            }
        }
    }
}

/// Places a trace's events on the run's clock (window, scale, sampling).
pub struct TraceSource {
    rows: Box<dyn EventReader>,
    spec: TraceSpec,
    sample_seed: u64,
}

impl TraceSource {
    /// A source over `rows` for `spec` under scenario seed `seed`.
    pub fn new(rows: Box<dyn EventReader>, spec: TraceSpec, seed: u64) -> TraceSource {
        let sample_seed = stream_seed(
            seed,
            &format!("{}/{}", Stream::Workload.name(), spec.stream),
        );
        TraceSource {
            rows,
            spec,
            sample_seed,
        }
    }

    /// Whether the object named `namespace/name` is in the sample.
    fn sampled(&self, (namespace, name): (&str, &str)) -> bool {
        if self.spec.sample >= 1.0 {
            return true;
        }
        let mut hash = self.sample_seed;
        for byte in namespace.bytes().chain([b'/']).chain(name.bytes()) {
            hash = mix(hash ^ u64::from(byte));
        }
        // 53 random bits as a fraction in [0, 1).
        ((hash >> 11) as f64 / (1u64 << 53) as f64) < self.spec.sample
    }

    /// Run time for `secs` trace seconds.
    fn scaled(&self, secs: f64) -> SimDuration {
        let ms = (secs * self.spec.time_scale * 1000.0).round();
        SimDuration::from_millis(ms.clamp(0.0, u64::MAX as f64) as u64)
    }

    fn step(&self, event: TraceEvent) -> Step {
        let at = self.spec.at + self.scaled(event.time - self.spec.start);
        let action = match event.action {
            TraceAction::Create {
                target,
                replicas,
                pod,
                duration,
            } => {
                let mut pod = *pod;
                let run =
                    duration.map(|d| std::time::Duration::from_millis(self.scaled(d).as_millis()));
                let kind = match target.kind {
                    crate::sim::engine::TargetKind::Deployment => {
                        WorkloadKind::Deployment { replicas }
                    }
                    crate::sim::engine::TargetKind::ReplicaSet => {
                        WorkloadKind::ReplicaSet { replicas }
                    }
                    crate::sim::engine::TargetKind::StatefulSet => {
                        WorkloadKind::StatefulSet { replicas }
                    }
                    crate::sim::engine::TargetKind::DaemonSet => WorkloadKind::DaemonSet,
                    crate::sim::engine::TargetKind::Job => WorkloadKind::Job(JobSpec {
                        parallelism: replicas.max(1),
                        completions: Some(replicas.max(1)),
                        active_deadline: None,
                        duration: run,
                    }),
                    // Traces create workload objects only, never nodes.
                    crate::sim::engine::TargetKind::Pod | crate::sim::engine::TargetKind::Node => {
                        pod.run_duration = run;
                        WorkloadKind::Pod
                    }
                };
                StepAction::Apply {
                    workloads: vec![Workload {
                        name: target.name,
                        namespace: target.namespace,
                        kind,
                        template: Arc::new(pod),
                    }],
                    pdbs: Vec::new(),
                }
            }
            TraceAction::Scale { target, replicas } => StepAction::Scale { target, replicas },
            TraceAction::Delete { target } => StepAction::Delete { target },
            TraceAction::Apply {
                mut workloads,
                pdbs,
                ..
            } => {
                for workload in &mut workloads {
                    self.scale_run_times(workload);
                }
                StepAction::Apply { workloads, pdbs }
            }
        };
        Step { at, action }
    }

    /// A recorded object's run times, from trace seconds to run time.
    fn scale_run_times(&self, workload: &mut Workload) {
        if self.spec.time_scale == 1.0 {
            return;
        }
        let scale = |d: std::time::Duration| {
            std::time::Duration::from_millis(self.scaled(d.as_secs_f64()).as_millis())
        };
        if let WorkloadKind::Job(job) = &mut workload.kind {
            job.duration = job.duration.map(scale);
        }
        if let Some(run) = workload.template.run_duration {
            Arc::make_mut(&mut workload.template).run_duration = Some(scale(run));
        }
    }
}

/// One SplitMix64 finalisation round.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl StepSource for TraceSource {
    fn next_step(&mut self) -> Result<Option<Step>, SourceError> {
        loop {
            let event = self
                .rows
                .next_event()
                .map_err(|e| SourceError(e.to_string()))?;
            let Some(event) = event else {
                return Ok(None);
            };
            if event.time < self.spec.start {
                continue;
            }
            if self.spec.end.is_some_and(|end| event.time >= end) {
                return Ok(None);
            }
            if !self.sampled(event.action.sample_key()) {
                continue;
            }
            return Ok(Some(self.step(event)));
        }
    }

    fn rows_skipped(&self) -> u64 {
        self.rows.skipped()
    }
}

/// The row reader of a CSV format (`generic` for any format that is not
/// Alibaba's: the others are not CSV and read no rows).
pub fn row_format(format: TraceFormat) -> Box<dyn RowFormat + Send> {
    match format {
        TraceFormat::Alibaba => Box::new(alibaba::AlibabaFormat::default()),
        _ => Box::new(generic::GenericFormat::default()),
    }
}

/// Opens the trace file of `spec` for one run.
pub fn open(spec: &TraceSpec, seed: u64) -> Result<TraceSource, TraceError> {
    let rows = open_reader(
        &spec.file,
        spec.format,
        spec.skip_bad_rows,
        &spec.exclude_namespaces,
    )?;
    Ok(TraceSource::new(rows, spec.clone(), seed))
}

/// Opens `path` as a recording of `format`: the reader a run or `trace
/// inspect` pulls events from. `exclude` lists the namespaces not replayed
/// (object formats only).
pub fn open_reader(
    path: &Path,
    format: TraceFormat,
    skip_bad_rows: bool,
    exclude: &[String],
) -> Result<Box<dyn EventReader>, TraceError> {
    let shown = shown(path);
    let file = File::open(path).map_err(|e| TraceError::Io {
        file: shown.clone(),
        reason: e.to_string(),
    })?;
    Ok(match format {
        TraceFormat::Generic | TraceFormat::Alibaba => Box::new(TraceRows::new(
            &shown,
            file,
            row_format(format),
            skip_bad_rows,
        )?),
        TraceFormat::AuditLog => Box::new(audit::AuditReader::new(
            &shown,
            std::io::BufReader::new(file),
            skip_bad_rows,
            exclude,
        )),
        TraceFormat::SimKube => Box::new(simkube::SimKubeReader::new(
            &shown,
            file,
            skip_bad_rows,
            exclude,
        )?),
        TraceFormat::KubeReplay => Box::new(kubereplay::KubeReplayReader::new(
            &shown,
            file,
            skip_bad_rows,
            exclude,
        )?),
    })
}

/// The format of a recording, guessed from its name and first bytes:
/// `.sktrace` or msgpack is SimKube; JSON lines of `audit.k8s.io` events an
/// audit log; a JSON document with `events` and `captured` a kubereplay
/// capture; CSV the Alibaba pod list when its header has `cpu_milli`,
/// otherwise the generic CSV. `None` when nothing fits.
pub fn guess_format(path: &Path) -> Result<Option<TraceFormat>, TraceError> {
    let shown = shown(path);
    let mut head = Vec::new();
    File::open(path)
        .and_then(|f| f.take(64 * 1024).read_to_end(&mut head))
        .map_err(|e| TraceError::Io {
            file: shown.clone(),
            reason: e.to_string(),
        })?;
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if extension == "sktrace"
        || head
            .first()
            .is_some_and(|b| (0x80..=0x8f).contains(b) || *b == 0xde)
    {
        return Ok(Some(TraceFormat::SimKube));
    }
    let text = String::from_utf8_lossy(&head);
    let first_line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    if text.trim_start().starts_with('{') {
        if first_line.contains("audit.k8s.io") {
            return Ok(Some(TraceFormat::AuditLog));
        }
        if text.contains("\"events\"") && text.contains("\"captured\"") {
            return Ok(Some(TraceFormat::KubeReplay));
        }
        return Ok(None);
    }
    if extension == "csv" || first_line.contains(',') {
        let header: Vec<&str> = first_line.split(',').map(str::trim).collect();
        if header.contains(&"cpu_milli") {
            return Ok(Some(TraceFormat::Alibaba));
        }
        if header.contains(&"event") && header.contains(&"time") {
            return Ok(Some(TraceFormat::Generic));
        }
    }
    Ok(None)
}

/// A path as the user would write it: relative to the working directory
/// when it is below it.
pub(crate) fn shown(path: &Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf())
        .display()
        .to_string()
}

impl SourceFactory for TraceSpec {
    fn open(&self, seed: u64) -> Result<Box<dyn StepSource>, SourceError> {
        let source = open(self, seed).map_err(|e| SourceError(e.to_string()))?;
        Ok(Box::new(source))
    }
}

/// Reads every usable event of a trace file (tests and small checks; a
/// real run streams instead).
#[cfg(test)]
pub(crate) fn read_all(
    text: &str,
    format: TraceFormat,
    skip_bad_rows: bool,
) -> Result<(Vec<TraceEvent>, u64), TraceError> {
    let mut rows = TraceRows::new(
        "trace.csv",
        text.as_bytes(),
        row_format(format),
        skip_bad_rows,
    )?;
    let mut events = Vec::new();
    while let Some(event) = rows.next_event()? {
        events.push(event);
    }
    Ok((events, rows.skipped()))
}

#[cfg(test)]
#[path = "recording_tests.rs"]
mod recording_tests;
