//! `karpsim run`: the shipped quickstart end to end, determinism, and bad
//! scenarios (one error line, exit 1, no report directory left behind).

use std::fs;
use std::path::{Path, PathBuf};

use crate::util::{
    ON_DEMAND_POOL, entries_but_yaml, karpsim, karpsim_in, repo, single_error_line, stderr, stdout,
};

use crate::util::{QUICKSTART_VARIANTS as VARIANTS, run_quickstart};
const FILES: [&str; 5] = [
    "summary.json",
    "nodeclaims.csv",
    "events.csv",
    "timeseries.csv",
    "disruption.csv",
];

fn rows(path: &Path) -> Vec<csv::StringRecord> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    reader.records().map(Result::unwrap).collect()
}

fn column(path: &Path, name: &str) -> usize {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let headers = reader.headers().unwrap().clone();
    headers.iter().position(|h| h == name).unwrap()
}

/// The README's first command writes every file of every variant, and the
/// numbers agree with each other: total cost = Σ cost_usd, launched =
/// rows, one time-series row per minute of the 12 h run.
#[test]
fn quickstart_writes_consistent_reports() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    run_quickstart(&out);
    for variant in VARIANTS {
        let base = out.join(variant);
        for file in FILES {
            assert!(base.join(file).is_file(), "{variant}/{file}");
        }
        let summary: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(base.join("summary.json")).unwrap()).unwrap();
        let claims_path = base.join("nodeclaims.csv");
        let claims = rows(&claims_path);
        let cost = column(&claims_path, "cost_usd");
        let total: f64 = claims.iter().map(|r| r[cost].parse::<f64>().unwrap()).sum();
        let reported = summary["total_cost_usd"].as_f64().unwrap();
        assert!((total - reported).abs() < 1e-6, "{total} vs {reported}");
        assert!(reported > 0.0);
        assert_eq!(
            summary["nodeclaims_launched"].as_u64().unwrap() as usize,
            claims.len()
        );
        assert!(summary["peak_nodes"].as_u64().unwrap() as usize <= claims.len());
        for key in [
            "node_hours",
            "pods_scheduled",
            "pods_unschedulable",
            "pending_seconds_p50",
            "pending_seconds_p95",
            "cost_by_capacity_type",
        ] {
            assert!(!summary[key].is_null(), "{variant}: {key}");
        }
        let events_path = base.join("events.csv");
        let reason = column(&events_path, "reason");
        let events = rows(&events_path);
        let launched = events.iter().filter(|r| &r[reason] == "Launched").count();
        assert_eq!(launched, claims.len());
        assert!(events.iter().any(|r| &r[reason] == "Scheduled"));
        assert_eq!(rows(&base.join("timeseries.csv")).len(), 12 * 60 + 1);
        // Churn: every terminated NodeClaim has its deletion time and
        // reason, and the counts agree with the rows.
        let churn = &summary["churn"];
        for key in [
            "evictions_by_reason",
            "nodeclaims_launched_by_reason",
            "nodeclaims_terminated_by_reason",
            "pod_restarts",
            "pdb_blocked_evictions",
            "bare_pods_lost",
            "consolidation_savings_usd",
        ] {
            assert!(!churn[key].is_null(), "{variant}: churn.{key}");
        }
        let deleted_at = column(&claims_path, "deleted_at_s");
        let reason_deleted = column(&claims_path, "reason_deleted");
        let deleted: Vec<&csv::StringRecord> = claims
            .iter()
            .filter(|r| !r[deleted_at].is_empty())
            .collect();
        assert!(deleted.iter().all(|r| !r[reason_deleted].is_empty()));
        let terminated: u64 = churn["nodeclaims_terminated_by_reason"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(terminated as usize, deleted.len());
        let launched: u64 = churn["nodeclaims_launched_by_reason"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(launched as usize, claims.len());
        let evicted = events.iter().filter(|r| &r[reason] == "Evicted").count() as u64;
        assert!(churn["evictions"].as_u64().unwrap() <= evicted);
    }
}

/// Every file under `dir`, as paths relative to it, sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                found.push(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    found.sort();
    found
}

/// Same scenario twice (into different folders) → the same files with
/// byte-identical content: CSV, JSON, every chart and report.html.
#[test]
fn runs_are_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    run_quickstart(&a);
    run_quickstart(&b);
    let files = files_under(&a);
    assert_eq!(files, files_under(&b));
    for variant in VARIANTS {
        for file in FILES {
            assert!(
                files.contains(&Path::new(variant).join(file)),
                "{variant}/{file}"
            );
        }
    }
    for name in ["report.html", "cost.svg", "cost.png"] {
        assert!(files.contains(&PathBuf::from(name)), "{name}");
    }
    for file in &files {
        let left = fs::read(a.join(file)).unwrap();
        let right = fs::read(b.join(file)).unwrap();
        assert!(left == right, "{} differs", file.display());
    }
}

const WORKLOAD: &str = "
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, resources: {requests: {cpu: 100m}}}]
";

fn scenario(body: &str) -> String {
    format!(
        "name: bad\nduration: 1h\n{body}workloads:\n  - manifests: web.yaml\nvariants:\n  - name: v\n    karpenter: {{nodePools: pool.yaml}}\n"
    )
}

/// Writes a scenario folder, runs it and checks the failure: exit 1, one
/// `error:` line containing `expect`, no report directory.
fn fails(scenario_text: &str, pool: &str, expect: &str) {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("s.yaml"), scenario_text).unwrap();
    fs::write(dir.path().join("web.yaml"), WORKLOAD).unwrap();
    fs::write(dir.path().join("pool.yaml"), pool).unwrap();
    let out = karpsim_in(dir.path(), &["run", "s.yaml", "--out", "out/report"]);
    let line = single_error_line(&out);
    assert!(line.contains(expect), "{line}");
    assert!(!dir.path().join("out").exists(), "no report directory left");
    assert!(!dir.path().join("reports").exists());
}

#[test]
fn missing_scenario_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = karpsim_in(dir.path(), &["run", "nope.yaml"]);
    let line = single_error_line(&out);
    assert!(line.contains("nope.yaml"), "{line}");
    assert!(!dir.path().join("reports").exists());
}

#[test]
fn unknown_key() {
    fails(
        &scenario("regoin: us-east-1\n"),
        ON_DEMAND_POOL,
        "unknown key \"regoin\"",
    );
}

#[test]
fn bad_duration() {
    fails(
        "name: bad\nduration: 2x\nworkloads:\n  - manifests: web.yaml\nvariants:\n  - name: v\n    karpenter: {nodePools: pool.yaml}\n",
        ON_DEMAND_POOL,
        "invalid duration",
    );
}

#[test]
fn nodepool_allowing_no_instance_type() {
    let pool = ON_DEMAND_POOL.replace(
        "values: [on-demand]}",
        "values: [on-demand]}\n        - {key: node.kubernetes.io/instance-type, operator: In, values: [no-such.type]}",
    );
    fails(
        &scenario(""),
        &pool,
        "NodePool default allows no instance type",
    );
}

#[test]
fn unknown_variant() {
    let dir = repo();
    let out = karpsim_in(
        &dir,
        &[
            "run",
            "scenarios/quickstart.yaml",
            "--variant",
            "nope",
            "--out",
            "/nonexistent/x",
        ],
    );
    let line = single_error_line(&out);
    assert!(line.contains("no variant named \"nope\""), "{line}");
}

const SPOT_POOL: &str = "
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
";

const SPOT_SCENARIO: &str = "name: spot
duration: 2h
zones: [us-east-1a]
workloads:
  - manifests: web.yaml
interruptions:
  rebalanceRecommendations: true
  trace: trace.csv
spotPriceHistory: prices.csv
variants:
  - name: v
    karpenter: {nodePools: pool.yaml}
";

/// Writes a one-zone spot scenario (a trace notice for the first node at
/// 30m, a spot price change at 1h) into `dir` with the given trace.
fn write_spot_scenario(dir: &Path, trace: &str) {
    fs::write(dir.join("s.yaml"), SPOT_SCENARIO).unwrap();
    fs::write(dir.join("web.yaml"), WORKLOAD).unwrap();
    fs::write(dir.join("pool.yaml"), SPOT_POOL).unwrap();
    fs::write(dir.join("trace.csv"), trace).unwrap();
    fs::write(
        dir.join("prices.csv"),
        "time,instance_type,zone,price\n1h,m5.large,us-east-1a,0.05\n",
    )
    .unwrap();
}

/// A trace notice and a price history reach the report: the named node is
/// interrupted at 30 min (NodeClaim deleted `interrupted`, its pod evicted
/// for that reason), the only zone's spot offering is then in the ICE
/// cache, so the replacement falls back to on-demand; the price change is
/// applied; the run repeats byte for byte.
#[test]
fn spot_trace_and_price_history_reach_the_report() {
    let dir = tempfile::tempdir().unwrap();
    write_spot_scenario(
        dir.path(),
        "time,instance_type,zone,node\n30m,m5.large,us-east-1a,default-00001\n",
    );
    let run = |out: &str| {
        let output = karpsim_in(dir.path(), &["run", "s.yaml", "--out", out]);
        assert!(output.status.success(), "{}", stderr(&output));
        stdout(&output)
    };
    let text = run("a");
    assert!(text.contains("interruptions"), "{text}");
    assert!(text.contains("spot share of node-hours"), "{text}");
    let base = dir.path().join("a").join("v");
    let summary: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(base.join("summary.json")).unwrap()).unwrap();
    let spot = &summary["spot"];
    assert_eq!(spot["interruptions"], 1);
    assert_eq!(spot["interruptions_by_source"]["trace"], 1);
    assert_eq!(spot["rebalance_recommendations"], 1);
    assert_eq!(spot["pods_disrupted"], 1);
    assert_eq!(spot["price_changes"], 1);
    assert_eq!(summary["churn"]["evictions_by_reason"]["interrupted"], 1);
    let claims_path = base.join("nodeclaims.csv");
    let claims = rows(&claims_path);
    let name = column(&claims_path, "name");
    let reason = column(&claims_path, "reason_deleted");
    let capacity = column(&claims_path, "capacity_type");
    assert_eq!(&claims[0][name], "default-00001");
    assert_eq!(&claims[0][reason], "interrupted");
    assert_eq!(&claims[0][capacity], "spot");
    assert_eq!(&claims[1][capacity], "on-demand");
    let events_path = base.join("events.csv");
    let event_reason = column(&events_path, "reason");
    let time = column(&events_path, "time_s");
    let notices: Vec<csv::StringRecord> = rows(&events_path)
        .into_iter()
        .filter(|r| &r[event_reason] == "SpotInterrupted")
        .collect();
    assert_eq!(notices.len(), 1);
    assert_eq!(&notices[0][time], "1800.000");
    run("b");
    for file in FILES {
        let left = fs::read(dir.path().join("a").join("v").join(file)).unwrap();
        let right = fs::read(dir.path().join("b").join("v").join(file)).unwrap();
        assert!(left == right, "{file} differs");
    }
}

/// A trace row naming an instance type the catalog does not have is one
/// error line naming the file, row and field; no report is written.
#[test]
fn spot_trace_with_unknown_type_fails() {
    let dir = tempfile::tempdir().unwrap();
    write_spot_scenario(
        dir.path(),
        "time,instance_type,zone\n30m,m5.nope,us-east-1a\n",
    );
    let out = karpsim_in(dir.path(), &["run", "s.yaml", "--out", "out/report"]);
    let line = single_error_line(&out);
    assert!(line.contains("trace.csv"), "{line}");
    assert!(line.contains("instance_type"), "{line}");
    assert!(!dir.path().join("out").exists());
}

/// `karpenter-vs-ca.yaml`: both variants' files are written (a CA variant
/// writes `nodes.csv` with the columns of `nodeclaims.csv`, and
/// `scaledown.csv`), `summary.json` has the same keys in both, the CA
/// variant's cost is the sum of its nodes, and the terminal shows the
/// deltas against the Karpenter variant.
#[test]
fn karpenter_vs_ca_writes_both_variants() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let output = karpsim(&[
        "run",
        "scenarios/karpenter-vs-ca.yaml",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("vs karpenter: cost"), "{text}");
    assert!(text.contains("cluster-autoscaler"), "{text}");
    let karpenter = out.join("karpenter");
    let ca = out.join("cluster-autoscaler");
    for file in FILES {
        assert!(karpenter.join(file).is_file(), "karpenter/{file}");
    }
    for file in [
        "summary.json",
        "nodes.csv",
        "events.csv",
        "timeseries.csv",
        "scaledown.csv",
    ] {
        assert!(ca.join(file).is_file(), "cluster-autoscaler/{file}");
    }
    let header = |path: &Path| -> Vec<String> {
        let mut reader = csv::Reader::from_path(path).unwrap();
        reader
            .headers()
            .unwrap()
            .iter()
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        header(&ca.join("nodes.csv")),
        header(&karpenter.join("nodeclaims.csv"))
    );
    let summary = |dir: &Path| -> serde_json::Value {
        serde_json::from_str(&fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
    };
    let (k, c) = (summary(&karpenter), summary(&ca));
    let keys =
        |v: &serde_json::Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys(&k), keys(&c));
    let nodes_path = ca.join("nodes.csv");
    let nodes = rows(&nodes_path);
    assert!(!nodes.is_empty());
    let group = column(&nodes_path, "nodepool");
    assert!(nodes.iter().all(|r| r[group].starts_with("general-")));
    let cost = column(&nodes_path, "cost_usd");
    let total: f64 = nodes.iter().map(|r| r[cost].parse::<f64>().unwrap()).sum();
    let reported = c["total_cost_usd"].as_f64().unwrap();
    assert!((total - reported).abs() < 1e-6, "{total} vs {reported}");
    let events_path = ca.join("events.csv");
    let reason = column(&events_path, "reason");
    let events = rows(&events_path);
    assert!(events.iter().any(|r| &r[reason] == "TriggeredScaleUp"));
    assert!(events.iter().any(|r| &r[reason] == "ScaleDown"));
    assert_eq!(
        header(&ca.join("scaledown.csv")),
        ["time_s", "node", "reason"]
    );
    assert!(!rows(&ca.join("scaledown.csv")).is_empty());
}

/// `expander: price` fails with CA's AWS explanation at its line.
#[test]
fn ca_price_expander_is_refused_at_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let scenarios = repo().join("scenarios");
    let base = scenarios.to_str().unwrap();
    // Referenced files by absolute path, so the copy runs from elsewhere.
    let text = fs::read_to_string(scenarios.join("karpenter-vs-ca.yaml"))
        .unwrap()
        .replace("expander: priority", "expander: price")
        .replace(" workloads/", &format!(" {base}/workloads/"))
        .replace(" nodepools/", &format!(" {base}/nodepools/"));
    let path = dir.path().join("price.yaml");
    fs::write(&path, &text).unwrap();
    let out = dir.path().join("report");
    let output = karpsim(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    let line = single_error_line(&output);
    let at = text
        .lines()
        .position(|l| l.contains("expander: price"))
        .expect("the expander line")
        + 1;
    assert!(
        line.contains(&format!(
            ":{at}:17: variants[1].clusterAutoscaler.expander: expander \"price\" is not available on AWS"
        )),
        "{line}"
    );
}

/// A workload trace row that is unusable stops the run when the engine
/// pulls it, after the run has started writing its `events.csv` into a
/// temporary folder of the report: the error is one line, the temporary
/// folder is gone, and the earlier report beside it is left as it was.
#[test]
fn a_run_failing_midway_leaves_no_report_behind() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("s.yaml"),
        "name: t\nseed: 1\nduration: 2h\nregion: us-east-1\n\
         workloads:\n  - trace: pods.csv\n    format: alibaba\n\
         variants:\n  - name: ca\n    clusterAutoscaler:\n      nodeGroups:\n\
         \x20       - name: cpu\n          instanceTypes: [m6i.8xlarge]\n\
         \x20         capacityType: on-demand\n          zones: [us-east-1a]\n\
         \x20         minSize: 0\n          maxSize: 5\n",
    )
    .unwrap();
    fs::write(
        dir.path().join("pods.csv"),
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
         p-0,1000,1024,0,0,,LS,Running,0,3600,0\n\
         p-1,lots,1024,0,0,,LS,Running,3000,7000,3000\n",
    )
    .unwrap();
    let earlier = dir.path().join("out/earlier");
    fs::create_dir_all(&earlier).unwrap();
    fs::write(earlier.join("summary.json"), "{}").unwrap();
    let out = karpsim_in(dir.path(), &["run", "s.yaml", "--out", "out", "-q"]);
    let line = single_error_line(&out);
    assert!(line.starts_with("error: variant ca: pods.csv:3"), "{line}");
    let left: Vec<String> = fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["earlier"]);
    assert_eq!(
        fs::read_to_string(earlier.join("summary.json")).unwrap(),
        "{}"
    );
}

/// Writes the one-variant scenario `s.yaml` (and its files) into `dir`,
/// with a second variant `w` on the same NodePool file when `two`.
fn write_small_scenario(dir: &Path, two: bool) {
    let mut text = scenario("");
    if two {
        text.push_str("  - name: w\n    karpenter: {nodePools: pool.yaml}\n");
    }
    fs::write(dir.join("s.yaml"), text).unwrap();
    fs::write(dir.join("web.yaml"), WORKLOAD).unwrap();
    fs::write(dir.join("pool.yaml"), ON_DEMAND_POOL).unwrap();
}

/// The new report replaces the previous one as a whole: a variant folder
/// the scenario no longer has and the old page are gone, and so are the
/// temporary folders killed runs left beside it and inside it.
#[test]
fn the_report_replaces_the_previous_one_as_a_whole() {
    let dir = tempfile::tempdir().unwrap();
    write_small_scenario(dir.path(), false);
    let out = dir.path().join("out");
    fs::create_dir_all(out.join("gone")).unwrap();
    fs::write(out.join("gone/summary.json"), "{}").unwrap();
    fs::write(out.join("report.html"), "old page").unwrap();
    fs::create_dir_all(out.join(".v.tmp-999999999")).unwrap();
    fs::create_dir_all(dir.path().join(".out.tmp-999999999/v")).unwrap();
    let output = karpsim_in(dir.path(), &["run", "s.yaml", "--out", "out", "-q"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(entries_but_yaml(dir.path()), ["out"]);
    assert_eq!(
        entries_but_yaml(&out),
        ["cost.png", "cost.svg", "report.html", "v"]
    );
    assert_ne!(
        fs::read_to_string(out.join("report.html")).unwrap(),
        "old page"
    );
}

/// `--variant` reruns one variant and keeps the report's others.
#[test]
fn a_run_of_one_variant_keeps_the_others() {
    let dir = tempfile::tempdir().unwrap();
    write_small_scenario(dir.path(), true);
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "s.yaml", "--out", "out", "-q"];
        args.extend_from_slice(extra);
        let output = karpsim_in(dir.path(), &args);
        assert!(output.status.success(), "{}", stderr(&output));
    };
    run(&[]);
    let before = fs::read(dir.path().join("out/w/events.csv")).unwrap();
    run(&["--variant", "v"]);
    let out = dir.path().join("out");
    assert_eq!(
        entries_but_yaml(&out),
        ["cost.png", "cost.svg", "report.html", "v", "w"]
    );
    assert_eq!(fs::read(out.join("w/events.csv")).unwrap(), before);
    let page = fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        page.contains(">w<") || page.contains("w</"),
        "both variants shown"
    );
}

/// A folder holding other things is not replaced: one error line, and it
/// is left as it was.
#[test]
fn a_folder_that_is_not_a_report_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_small_scenario(dir.path(), false);
    fs::create_dir(dir.path().join("home")).unwrap();
    fs::write(dir.path().join("home/notes.txt"), "mine").unwrap();
    let line = single_error_line(&karpsim_in(dir.path(), &["run", "s.yaml", "--out", "home"]));
    assert!(line.contains("home holds \"notes.txt\""), "{line}");
    assert_eq!(entries_but_yaml(&dir.path().join("home")), ["notes.txt"]);
    assert_eq!(entries_but_yaml(dir.path()), ["home"]);
}

/// A full disk (here: a file-size limit, which fails writes the same way)
/// or an `--out` that cannot be created is one error line naming the path,
/// and nothing partial stays.
#[test]
fn a_full_disk_or_unwritable_out_is_one_line_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write_small_scenario(dir.path(), false);
    let output = std::process::Command::new("sh")
        .current_dir(dir.path())
        .args([
            "-c",
            "ulimit -f 4; trap '' XFSZ; exec \"$0\" \"$@\"",
            env!("CARGO_BIN_EXE_karpsim"),
            "run",
            "s.yaml",
            "--out",
            "reports/out",
            "-q",
        ])
        .output()
        .unwrap();
    let line = single_error_line(&output);
    assert!(
        line.starts_with("error: cannot write the report to reports/out: "),
        "{line}"
    );
    assert!(line.contains("reports/.out.tmp-"), "names the file: {line}");
    assert_eq!(
        entries_but_yaml(dir.path()),
        Vec::<String>::new(),
        "nothing left"
    );
    fs::write(dir.path().join("blocker"), "a file").unwrap();
    let line = single_error_line(&karpsim_in(
        dir.path(),
        &["run", "s.yaml", "--out", "blocker/out"],
    ));
    assert!(
        line.contains("cannot write the report to blocker/out: blocker"),
        "{line}"
    );
    assert_eq!(entries_but_yaml(dir.path()), ["blocker"]);
}

/// A warning every variant gives is shown once, naming the variants;
/// `--quiet` shows errors only.
#[test]
fn warnings_are_shown_once_and_quiet_shows_none() {
    let dir = tempfile::tempdir().unwrap();
    write_small_scenario(dir.path(), true);
    let output = karpsim_in(dir.path(), &["run", "s.yaml", "--out", "out"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stderr(&output);
    let about_class: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("EC2NodeClass \"default\""))
        .collect();
    assert_eq!(about_class.len(), 1, "{text}");
    assert!(
        about_class[0].starts_with("warning: variants v, w: NodePool default:"),
        "{text}"
    );
    let quiet = karpsim_in(dir.path(), &["run", "s.yaml", "--out", "out", "--quiet"]);
    assert!(quiet.status.success(), "{}", stderr(&quiet));
    assert_eq!(stderr(&quiet), "");
}
