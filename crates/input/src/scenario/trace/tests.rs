//! Importer tests: the real Alibaba pod list (row counts, first and last
//! times, requests, GPU mapping), the generic CSV, the window, time scale
//! and sampling, malformed rows (error or skip), and streaming in constant
//! memory.

use std::io::Read;
use std::path::PathBuf;

use super::*;
use crate::kube::resources::{MIB, ResourceKind};
use crate::kube::taints::TaintEffect;
use crate::sim::engine::TargetKind;

fn alibaba_file() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("scenarios/traces/alibaba_openb_pod_list_default.csv")
}

fn alibaba_spec() -> TraceSpec {
    TraceSpec {
        file: alibaba_file(),
        format: TraceFormat::Alibaba,
        start: 0.0,
        end: None,
        time_scale: 1.0,
        sample: 1.0,
        at: SimTime::ZERO,
        stream: "trace/0".into(),
        skip_bad_rows: false,
        exclude_namespaces: Vec::new(),
    }
}

fn create(event: &TraceEvent) -> (&Target, &PodSpec, Option<f64>) {
    match &event.action {
        TraceAction::Create {
            target,
            pod,
            duration,
            ..
        } => (target, pod, *duration),
        other => panic!("expected a create, got {other:?}"),
    }
}

fn steps(spec: &TraceSpec, seed: u64) -> Vec<Step> {
    let mut source = open(spec, seed).unwrap();
    let mut out = Vec::new();
    while let Some(step) = source.next_step().unwrap() {
        out.push(step);
    }
    out
}

/// The whole pod list: 8 152 rows (SOURCES.md), from creation time 0 to
/// 12 901 761 s, 7 064 of them with a GPU; rows as in the file.
#[test]
fn alibaba_pod_list_reads_every_row() {
    let text = std::fs::read_to_string(alibaba_file()).unwrap();
    let (events, skipped) = read_all(&text, TraceFormat::Alibaba, false).unwrap();
    assert_eq!((events.len(), skipped), (8152, 0));
    assert_eq!(events[0].time, 0.0);
    assert_eq!(events[8151].time, 12_901_761.0);
    let gpu_pods = events
        .iter()
        .filter(|e| create(e).1.requests.get(ResourceKind::NvidiaGpu) > 0)
        .count();
    assert_eq!(gpu_pods, 7064);
    // openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0
    let (target, pod, duration) = create(&events[0]);
    assert_eq!(
        (target.kind, target.name.as_str()),
        (TargetKind::Pod, "openb-pod-0000")
    );
    assert_eq!(pod.requests.cpu_millis(), 12_000);
    assert_eq!(pod.requests.memory_bytes(), 16_384 * MIB);
    assert_eq!(pod.requests.get(ResourceKind::NvidiaGpu), 1);
    assert_eq!(pod.requests.pods(), 1);
    assert_eq!(duration, Some(12_537_496.0));
    assert_eq!(
        pod.annotations
            .get(alibaba::QOS_ANNOTATION)
            .map(String::as_str),
        Some("LS")
    );
    // A GPU-sharing pod (openb-pod-0001: num_gpu 1, gpu_milli 460) gets one
    // whole GPU and the ExtendedResourceToleration toleration.
    let (_, shared, _) = create(&events[1]);
    assert_eq!(shared.requests.get(ResourceKind::NvidiaGpu), 1);
    assert_eq!(shared.tolerations.len(), 1);
    assert_eq!(shared.tolerations[0].key, "nvidia.com/gpu");
    assert_eq!(shared.tolerations[0].effect, Some(TaintEffect::NoSchedule));
    // openb-pod-0017: 88 cores, 320 GiB, 8 GPUs.
    let (_, big, _) = create(&events[17]);
    assert_eq!(big.requests.get(ResourceKind::NvidiaGpu), 8);
    assert_eq!(big.requests.cpu_millis(), 88_000);
    // CPU-only pods have no GPU toleration.
    let cpu_only = events
        .iter()
        .map(create)
        .find(|(_, p, _)| p.requests.get(ResourceKind::NvidiaGpu) == 0);
    assert!(cpu_only.is_some_and(|(_, p, _)| p.tolerations.is_empty()));
}

/// `gpu_milli` without `num_gpu` still needs a device: rounded up to one.
#[test]
fn fractional_gpus_round_up_to_one() {
    assert_eq!(alibaba::whole_gpus(0, 300), 1);
    assert_eq!(alibaba::whole_gpus(1, 460), 1);
    assert_eq!(alibaba::whole_gpus(4, 1000), 4);
    assert_eq!(alibaba::whole_gpus(0, 0), 0);
}

/// The busiest half day of the trace (start 12 810 000 s, 12 h) holds 421
/// pods (counted from the CSV); at time scale 0.25 they fall in the first
/// 3 h of the run, shifted to `at`, with run times scaled too.
#[test]
fn window_and_time_scale_place_rows_on_the_run_clock() {
    let spec = TraceSpec {
        start: 12_810_000.0,
        end: Some(12_853_200.0),
        time_scale: 0.25,
        at: SimTime::from_secs(60),
        ..alibaba_spec()
    };
    let all = steps(&spec, 1);
    assert_eq!(all.len(), 421);
    let window = SimDuration::from_hours(3);
    assert!(
        all.iter()
            .all(|s| s.at >= SimTime::from_secs(60) && s.at < SimTime::from_secs(60) + window)
    );
    let StepAction::Apply { workloads, .. } = &all[0].action else {
        panic!("expected an apply");
    };
    // First row in the window: compare with the same row read raw.
    let text = std::fs::read_to_string(alibaba_file()).unwrap();
    let (events, _) = read_all(&text, TraceFormat::Alibaba, false).unwrap();
    let raw = events.iter().find(|e| e.time >= 12_810_000.0).unwrap();
    let (target, _, duration) = create(raw);
    assert_eq!(workloads[0].name, target.name);
    let expected_at = 60_000 + ((raw.time - 12_810_000.0) * 250.0).round() as u64;
    assert_eq!(all[0].at.as_millis(), expected_at);
    let expected_run = (duration.unwrap() * 250.0).round() as u64;
    assert_eq!(
        workloads[0].template.run_duration,
        Some(std::time::Duration::from_millis(expected_run))
    );
}

/// Sampling half the objects keeps about half (8 152 × 0.5 ± 3 %), the same
/// ones for the same seed, others for another seed.
#[test]
fn sampling_is_deterministic_per_seed() {
    let spec = TraceSpec {
        sample: 0.5,
        ..alibaba_spec()
    };
    let names = |seed| {
        steps(&spec, seed)
            .into_iter()
            .map(|s| match s.action {
                StepAction::Apply { workloads, .. } => workloads[0].name.clone(),
                _ => String::new(),
            })
            .collect::<Vec<_>>()
    };
    let first = names(1);
    assert!(
        (first.len() as f64 - 4076.0).abs() < 245.0,
        "{}",
        first.len()
    );
    assert_eq!(first, names(1));
    assert_ne!(first, names(2));
}

const GENERIC: &str = "\
time,event,kind,name,namespace,owner,replicas,requests,limits,labels,nodeSelector,tolerations,duration
0,create,Deployment,web,shop,,3,cpu=500m;memory=1Gi,,app=web,karpenter.sh/capacity-type=spot,,
1.5,create,Pod,job-a,,batch-1,,cpu=2,memory=4Gi;nvidia.com/gpu=1,,,nvidia.com/gpu:NoSchedule;dedicated=ml:NoExecute,90
2m,scale,Deployment,web,shop,,5,,,,,,
1h,delete,Pod,job-a,,,,,,,,,
1h,create,Job,train,,,2,cpu=1,,,,,1h30m
";

/// Generic rows: create, scale and delete with every column form.
#[test]
fn generic_rows_become_events() {
    let (events, skipped) = read_all(GENERIC, TraceFormat::Generic, false).unwrap();
    assert_eq!((events.len(), skipped), (5, 0));
    let times: Vec<f64> = events.iter().map(|e| e.time).collect();
    assert_eq!(times, vec![0.0, 1.5, 120.0, 3600.0, 3600.0]);
    let (web, web_pod, _) = create(&events[0]);
    assert_eq!(
        (web.kind, web.namespace.as_str()),
        (TargetKind::Deployment, "shop")
    );
    assert_eq!(web_pod.requests.cpu_millis(), 500);
    assert_eq!(web_pod.requests.memory_bytes(), 1024 * MIB);
    assert_eq!(web_pod.labels.get("app").map(String::as_str), Some("web"));
    assert_eq!(
        web_pod
            .node_selector
            .get("karpenter.sh/capacity-type")
            .map(String::as_str),
        Some("spot")
    );
    let (job, pod, duration) = create(&events[1]);
    assert_eq!(job.namespace, "default");
    assert_eq!(duration, Some(90.0));
    // Limits without requests become requests.
    assert_eq!(pod.requests.memory_bytes(), 4096 * MIB);
    assert_eq!(pod.requests.get(ResourceKind::NvidiaGpu), 1);
    assert_eq!(pod.requests.cpu_millis(), 2000);
    assert_eq!(
        pod.labels.get(generic::OWNER_LABEL).map(String::as_str),
        Some("batch-1")
    );
    assert_eq!(pod.tolerations.len(), 2);
    assert_eq!(pod.tolerations[1].value, "ml");
    assert!(matches!(
        &events[2].action,
        TraceAction::Scale { replicas: 5, .. }
    ));
    assert!(matches!(&events[3].action, TraceAction::Delete { target } if target.name == "job-a"));
    assert_eq!(create(&events[4]).2, Some(5400.0));
}

fn generic_with(rows: &str) -> String {
    format!("time,event,kind,name,duration\n{rows}")
}

/// Unusable rows are errors naming file, row, line and column; with
/// skipping they are counted and the good rows kept.
#[test]
fn malformed_rows_fail_or_are_skipped() {
    let text = generic_with(
        "0,create,Pod,a,10\n5,create,Pod,b,-3\n6,create,Widget,c,\n7,create,Pod,d,\n3,create,Pod,e,\n8,explode,Pod,f,\n",
    );
    let err = read_all(&text, TraceFormat::Generic, false).unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(&err, TraceError::Row { row: 2, line: 3, column, .. } if column == "duration"),
        "{message}"
    );
    assert!(
        message.starts_with("trace.csv:3: row 2, column duration:"),
        "{message}"
    );
    let (events, skipped) = read_all(&text, TraceFormat::Generic, true).unwrap();
    // b (negative run time), c (unknown kind), e (out of order), f (event).
    assert_eq!(skipped, 4);
    let names: Vec<&str> = events.iter().map(|e| e.action.sample_key().1).collect();
    assert_eq!(names, vec!["a", "d"]);
    let unknown = read_all(
        &generic_with("6,create,Widget,c,\n"),
        TraceFormat::Generic,
        false,
    )
    .unwrap_err();
    assert!(
        unknown
            .to_string()
            .contains("column kind: unknown kind \"Widget\""),
        "{unknown}"
    );
}

/// Alibaba rows: a deletion before the creation is a negative run time; a
/// non-number names its column; a missing column is a header error.
#[test]
fn malformed_alibaba_rows_name_their_column() {
    let header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n";
    let bad = format!("{header}p-1,1000,512,0,0,,BE,Running,100,50,100\n");
    let err = read_all(&bad, TraceFormat::Alibaba, false).unwrap_err();
    assert!(
        matches!(&err, TraceError::Row { column, .. } if column == "deletion_time"),
        "{err}"
    );
    let text = format!(
        "{header}p-1,lots,512,0,0,,BE,Running,100,150,100\np-2,1000,512,0,0,,BE,Running,101,150,101\n"
    );
    let err = read_all(&text, TraceFormat::Alibaba, false).unwrap_err();
    assert!(
        matches!(&err, TraceError::Row { column, row: 1, .. } if column == "cpu_milli"),
        "{err}"
    );
    let (events, skipped) = read_all(&text, TraceFormat::Alibaba, true).unwrap();
    assert_eq!((events.len(), skipped), (1, 1));
    let missing = read_all("name,cpu_milli\n", TraceFormat::Alibaba, false).unwrap_err();
    assert!(matches!(missing, TraceError::Header { .. }), "{missing}");
}

/// A reader that makes up `rows` generic CSV rows on demand and counts the
/// bytes handed out: nothing is ever materialised.
struct SyntheticTrace {
    rows: u64,
    next_row: u64,
    pending: Vec<u8>,
    bytes_read: std::rc::Rc<std::cell::Cell<u64>>,
}

impl SyntheticTrace {
    fn new(rows: u64) -> (SyntheticTrace, std::rc::Rc<std::cell::Cell<u64>>) {
        let counter = std::rc::Rc::new(std::cell::Cell::new(0));
        let trace = SyntheticTrace {
            rows,
            next_row: 0,
            pending: b"time,event,kind,name,requests,duration\n".to_vec(),
            bytes_read: counter.clone(),
        };
        (trace, counter)
    }
}

impl Read for SyntheticTrace {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pending.is_empty() && self.next_row < self.rows {
            let i = self.next_row;
            self.pending = format!("{i},create,Pod,p-{i},cpu=100m;memory=64Mi,60\n").into_bytes();
            self.next_row += 1;
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        self.bytes_read.set(self.bytes_read.get() + n as u64);
        Ok(n)
    }
}

/// Streaming: a 200 000-row trace passes through the importer row by row
/// (every row counted, last time right), and pulling the first ten steps
/// of a ten-million-row trace reads under 64 KiB of it, so memory does not
/// grow with the trace.
#[test]
fn traces_stream_in_constant_memory() {
    let (trace, _) = SyntheticTrace::new(200_000);
    let mut rows = TraceRows::new(
        "synthetic.csv",
        trace,
        row_format(TraceFormat::Generic),
        false,
    )
    .unwrap();
    let mut count = 0u64;
    let mut last = 0.0;
    while let Some(event) = rows.next_event().unwrap() {
        count += 1;
        last = event.time;
    }
    assert_eq!((count, last), (200_000, 199_999.0));

    let (trace, bytes_read) = SyntheticTrace::new(10_000_000);
    let rows = TraceRows::new(
        "synthetic.csv",
        trace,
        row_format(TraceFormat::Generic),
        false,
    )
    .unwrap();
    let mut source = TraceSource::new(
        Box::new(rows),
        TraceSpec {
            format: TraceFormat::Generic,
            ..alibaba_spec()
        },
        1,
    );
    for i in 0..10 {
        let step = source.next_step().unwrap().unwrap();
        assert_eq!(step.at, SimTime::from_secs(i));
    }
    assert!(
        bytes_read.get() < 64 * 1024,
        "read {} bytes",
        bytes_read.get()
    );
}

/// Rows after `end` are never read: the source stops at the first one.
#[test]
fn reading_stops_at_the_end_of_the_window() {
    let (trace, bytes_read) = SyntheticTrace::new(10_000_000);
    let rows = TraceRows::new(
        "synthetic.csv",
        trace,
        row_format(TraceFormat::Generic),
        false,
    )
    .unwrap();
    let spec = TraceSpec {
        format: TraceFormat::Generic,
        start: 100.0,
        end: Some(200.0),
        ..alibaba_spec()
    };
    let mut source = TraceSource::new(Box::new(rows), spec, 1);
    let mut n = 0;
    while source.next_step().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, 100);
    assert!(bytes_read.get() < 64 * 1024);
}

/// A row with fewer or more fields than the header is an error naming the
/// file, row and columns (such rows were read as if the missing cells were
/// empty and the extra ones absent); with skipping it is counted.
#[test]
fn rows_of_the_wrong_length_name_the_columns() {
    let text = generic_with("0,create,Pod,a,10\n1,create,Pod\n2,create,Pod,c,10,extra\n");
    let err = read_all(&text, TraceFormat::Generic, false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "trace.csv:3: row 2, column *: 3 fields, but the header has 5 columns (time, event, \
         kind, name, duration)"
    );
    let (events, skipped) = read_all(&text, TraceFormat::Generic, true).unwrap();
    assert_eq!((events.len(), skipped), (1, 2));
    let alibaba = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n\
                   p-1,1000,512,0,0,100,150,7\n";
    let err = read_all(alibaba, TraceFormat::Alibaba, false).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("trace.csv:2: row 1, column *: 8 fields, but the header has 7 columns"),
        "{err}"
    );
}

/// A trace that is not UTF-8 names the line, column and byte offset of
/// the first invalid byte, found as the file streams (also when the byte
/// comes after many rows, past the reader's buffers).
#[test]
fn invalid_utf8_is_located_while_streaming() {
    let mut text = generic_with("0,create,Pod,a,10\n").into_bytes();
    text.extend_from_slice(b"1,create,Pod,b\xe9,10\n");
    let mut rows = TraceRows::new(
        "trace.csv",
        &text[..],
        row_format(TraceFormat::Generic),
        false,
    )
    .unwrap();
    assert!(rows.next_event().unwrap().is_some(), "the first row reads");
    let err = rows.next_event().unwrap_err();
    // Line 3: "1,create,Pod,b" is 14 characters; the header and first row
    // are 30 + 18 bytes.
    assert_eq!(
        err.to_string(),
        "trace.csv:3:15: not UTF-8 text: invalid byte 0xe9 at byte offset 62"
    );
    // Far into the file, and a character split by a read boundary is fine.
    let mut long = generic_with("").into_bytes();
    for i in 0..5_000 {
        long.extend_from_slice(format!("{i},create,Pod,p-{i},é\n").as_bytes());
    }
    let err = read_all(
        std::str::from_utf8(&long).unwrap(),
        TraceFormat::Generic,
        false,
    )
    .unwrap_err();
    assert!(err.to_string().contains("column duration"), "{err}");
    long.extend_from_slice(b"9999,create,Pod,z,\xff\n");
    let mut rows = TraceRows::new(
        "trace.csv",
        &long[..],
        row_format(TraceFormat::Generic),
        true,
    )
    .unwrap();
    let err = loop {
        match rows.next_event() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("expected an error"),
            Err(err) => break err,
        }
    };
    assert!(
        matches!(&err, TraceError::NotUtf8 { error, .. } if error.position.line == 5_002 && error.offset == long.len() - 2),
        "{err}"
    );
}

/// Replica counts past the limit of one workload name it.
#[test]
fn trace_replicas_are_bounded() {
    let text = "time,event,kind,name,replicas\n0,create,Deployment,web,2147483647\n";
    let err = read_all(text, TraceFormat::Generic, false).unwrap_err();
    assert!(
        err.to_string().contains(
            "column replicas: expected a whole number from 0 to 100000 (the most replicas per \
             workload, see Limits in scenarios/README.md), found \"2147483647\""
        ),
        "{err}"
    );
}
