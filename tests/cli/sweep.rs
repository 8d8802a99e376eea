//! `karpsim sweep`, `sweep merge` and `sweep job` end to end, on the short
//! fixture sweep (the 90-minute minimal scenario, 2 configurations × 3
//! seeds): the same bytes whatever `--jobs`; shards merged give the bytes
//! of the unsharded sweep; a failing run is reported with its id while
//! the others finish; and the printed Kubernetes Jobs read back with
//! k8s-openapi's types, their shard and merge commands run here as they
//! would in the pods.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;

use crate::util::{karpsim, karpsim_in, repo, single_error_line, stderr, stdout};

const SHORT: &str = "tests/fixtures/sweeps/short.yaml";

/// Every file under `dir`, as (path relative to `dir`, contents), sorted.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push((
                    path.strip_prefix(dir).unwrap().to_path_buf(),
                    fs::read(&path).unwrap(),
                ));
            }
        }
    }
    files.sort();
    files
}

/// Asserts two folders hold the same files with the same bytes.
fn assert_same_tree(left: &Path, right: &Path) {
    let (a, b) = (tree(left), tree(right));
    assert_eq!(
        a.iter().map(|(p, _)| p).collect::<Vec<_>>(),
        b.iter().map(|(p, _)| p).collect::<Vec<_>>(),
        "{} and {} hold different files",
        left.display(),
        right.display()
    );
    for ((path, x), (_, y)) in a.iter().zip(&b) {
        assert!(x == y, "{} differs", path.display());
    }
}

fn sweep(args: &[&str]) -> Output {
    let output = karpsim(args);
    assert!(output.status.success(), "{}", stderr(&output));
    output
}

fn runs_csv(dir: &Path) -> Vec<Vec<String>> {
    let mut reader = csv::Reader::from_path(dir.join("runs.csv")).unwrap();
    reader
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect()
}

#[test]
fn a_sweep_writes_the_same_bytes_whatever_the_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let (one, three) = (dir.path().join("one"), dir.path().join("three"));
    let output = sweep(&[
        "sweep",
        SHORT,
        "--out",
        one.to_str().unwrap(),
        "--jobs",
        "1",
    ]);
    sweep(&[
        "sweep",
        SHORT,
        "--out",
        three.to_str().unwrap(),
        "--jobs",
        "3",
    ]);
    assert_same_tree(&one, &three);
    let text = stdout(&output);
    assert!(
        text.contains("2 configurations × 3 seeds: 6 runs, 0 failed"),
        "{text}"
    );
    let ids: Vec<String> = runs_csv(&one).into_iter().map(|r| r[1].clone()).collect();
    assert_eq!(
        ids,
        ["c01-s1", "c01-s2", "c01-s3", "c02-s1", "c02-s2", "c02-s3"]
    );
    let document: serde_json::Value =
        serde_json::from_slice(&fs::read(one.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(document["runs"], 6);
    assert_eq!(
        document["configurations"][1]["label"],
        "default consolidateAfter=10m"
    );
    assert_eq!(document["configurations"][0]["metrics"]["cost_usd"]["n"], 3);
    for name in [
        "report.html",
        "cost-vs-churn.svg",
        "cost-vs-churn.png",
        "box-cost.svg",
    ] {
        assert!(one.join(name).is_file(), "{name}");
    }
}

/// Shard 0/2 given as I/N, shard 1/2 through JOB_COMPLETION_INDEX, both
/// keeping their runs' reports: merged, the same bytes as unsharded.
#[test]
fn shards_merge_into_the_bytes_of_the_unsharded_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    sweep(&["sweep", SHORT, "--out", &path("whole"), "--keep-reports"]);
    let first = sweep(&[
        "sweep",
        SHORT,
        "--shard",
        "0/2",
        "--out",
        &path("s0"),
        "--keep-reports",
    ]);
    assert!(
        stdout(&first).contains("shard 0 of 2: 3 runs"),
        "{}",
        stdout(&first)
    );
    let second = Command::cargo_bin("karpsim")
        .unwrap()
        .current_dir(repo())
        .env("JOB_COMPLETION_INDEX", "1")
        .args([
            "sweep",
            SHORT,
            "--shard",
            "auto",
            "--shards",
            "2",
            "--keep-reports",
        ])
        .args(["--out", &path("s1")])
        .output()
        .unwrap();
    assert!(second.status.success(), "{}", stderr(&second));
    let shard_ids = |dir: &str| -> Vec<String> {
        runs_csv(Path::new(&path(dir)))
            .into_iter()
            .map(|r| r[1].clone())
            .collect()
    };
    assert_eq!(shard_ids("s0"), ["c01-s1", "c01-s3", "c02-s2"]);
    assert_eq!(shard_ids("s1"), ["c01-s2", "c02-s1", "c02-s3"]);
    let merged = sweep(&[
        "sweep",
        "merge",
        &path("s1"),
        &path("s0"),
        "--out",
        &path("merged"),
        "-o",
        "json",
    ]);
    assert_same_tree(&dir.path().join("whole"), &dir.path().join("merged"));
    assert!(
        dir.path()
            .join("merged/runs/c02-s3/default/summary.json")
            .is_file()
    );
    // `-o json` prints the merged sweep.json itself.
    assert_eq!(
        merged.stdout,
        fs::read(dir.path().join("merged/sweep.json")).unwrap()
    );
    let error = single_error_line(&karpsim(&[
        "sweep",
        "merge",
        &path("s0"),
        "--out",
        &path("half"),
    ]));
    assert!(error.contains("shard(s) 1 of 2 missing"), "{error}");
}

#[test]
fn a_failing_run_is_reported_with_its_id_and_the_others_finish() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = repo().join("tests/fixtures/scenarios");
    let file = dir.path().join("bad-value.yaml");
    fs::write(
        &file,
        format!(
            "sweep: bad-value\nscenario: {}\nseeds: [1, 2]\nnodePools: {}\nvary:\n  - field: spec.disruption.consolidateAfter\n    values: [30s, soon]\n",
            fixtures.join("minimal.yaml").display(),
            fixtures.join("nodepools/default.yaml").display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = karpsim(&[
        "sweep",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let text = stderr(&output);
    let last = text.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: 2 of 4 runs failed (the first: c02-s1)"),
        "{text}"
    );
    assert!(text.contains("run c02-s1 failed: "), "{text}");
    assert!(text.contains("spec.disruption.consolidateAfter"), "{text}");
    let rows = runs_csv(&out);
    let status: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r[1].as_str(), r[5].as_str()))
        .collect();
    assert_eq!(
        status,
        [
            ("c01-s1", "ok"),
            ("c01-s2", "ok"),
            ("c02-s1", "failed"),
            ("c02-s2", "failed")
        ]
    );
    assert!(!rows[0][7].is_empty(), "a finished run has its cost");
    let document: serde_json::Value =
        serde_json::from_slice(&fs::read(out.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(document["runs_failed"], 2);
    assert_eq!(document["failed_runs"][1]["id"], "c02-s2");
    // Allowed, the same sweep exits 0 and still lists them.
    let allowed = karpsim(&[
        "sweep",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
        "--allow-failed-runs",
    ]);
    assert!(allowed.status.success(), "{}", stderr(&allowed));
}

#[test]
fn bad_sweep_input_is_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("typo.yaml");
    fs::write(&file, "sweep: t\nscenario: x.yaml\nseed: [1]\n").unwrap();
    let error = single_error_line(&karpsim(&["sweep", file.to_str().unwrap()]));
    assert!(
        error.contains("typo.yaml:3:1: unknown key \"seed\""),
        "{error}"
    );
    let error = single_error_line(&karpsim(&["sweep", SHORT, "--shard", "3/3"]));
    assert!(error.contains("invalid shard 3/3"), "{error}");
    let no_count = Command::cargo_bin("karpsim")
        .unwrap()
        .current_dir(repo())
        .env("JOB_COMPLETION_INDEX", "0")
        .env_remove("KARPSIM_SHARDS")
        .env_remove("SLURM_ARRAY_TASK_COUNT")
        .args(["sweep", SHORT, "--shard", "auto"])
        .output()
        .unwrap();
    let error = single_error_line(&no_count);
    assert!(error.contains("add --shards N"), "{error}");
}

/// Expands `$(NAME)` in a container argument from its environment, as the
/// kubelet does.
fn expand(arg: &str, env: &[(&str, String)]) -> String {
    let mut text = arg.to_string();
    for (name, value) in env {
        text = text.replace(&format!("$({name})"), value);
    }
    text
}

/// The printed Jobs read back as k8s-openapi objects; their shard pods'
/// commands, run in a folder laid out like the image, and then the merge
/// pod's, give the unsharded sweep's bytes.
#[test]
fn the_printed_jobs_parse_and_their_commands_run_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("karpsim");
    fs::create_dir(&work).unwrap();
    // The image's working folder holds the repository's files.
    std::os::unix::fs::symlink(repo().join("tests"), work.join("tests")).unwrap();
    let printed = karpsim_in(
        &work,
        &[
            "sweep",
            "job",
            SHORT,
            "--image",
            "registry.example/karpsim:test",
            "--shards",
            "3",
            "--parallelism",
            "2",
        ],
    );
    assert!(printed.status.success(), "{}", stderr(&printed));
    let text = stdout(&printed);
    let documents: Vec<&str> = text.split("\n---\n").collect();
    assert_eq!(documents.len(), 3, "{text}");
    let claim: PersistentVolumeClaim = serde_saphyr::from_str(documents[0]).unwrap();
    let shards: Job = serde_saphyr::from_str(documents[1]).unwrap();
    let merge: Job = serde_saphyr::from_str(documents[2]).unwrap();
    assert_eq!(claim.metadata.name.as_deref(), Some("short-results"));
    let spec = shards.spec.as_ref().unwrap();
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!((spec.completions, spec.parallelism), (Some(3), Some(2)));
    let pod = |job: &Job| job.spec.clone().unwrap().template.spec.unwrap();
    let shard_pod = pod(&shards);
    assert_eq!(shard_pod.restart_policy.as_deref(), Some("Never"));
    let volume = &shard_pod.volumes.as_ref().unwrap()[0];
    assert_eq!(
        volume.persistent_volume_claim.as_ref().unwrap().claim_name,
        "short-results"
    );
    let container = &shard_pod.containers[0];
    assert_eq!(
        container.image.as_deref(),
        Some("registry.example/karpsim:test")
    );
    assert_eq!(
        container.command.as_deref(),
        Some(&["karpsim".to_string()][..])
    );
    let mount = &container.volume_mounts.as_ref().unwrap()[0];
    let results = Path::new(mount.mount_path.as_str())
        .strip_prefix(container.working_dir.as_deref().unwrap())
        .unwrap()
        .to_path_buf();
    fs::create_dir(work.join(&results)).unwrap();
    let run_pod = |args: &[String], env: &[(&str, String)]| {
        let mut command = Command::cargo_bin("karpsim").unwrap();
        command.current_dir(&work);
        for (name, value) in env {
            command.env(name, value);
        }
        let args: Vec<String> = args.iter().map(|a| expand(a, env)).collect();
        let output = command.args(&args).output().unwrap();
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        output
    };
    for index in 0..3 {
        let env = [("JOB_COMPLETION_INDEX", index.to_string())];
        run_pod(container.args.as_ref().unwrap(), &env);
    }
    let merge_pod = pod(&merge);
    let merged = run_pod(merge_pod.containers[0].args.as_ref().unwrap(), &[]);
    let whole = dir.path().join("whole");
    sweep(&["sweep", SHORT, "--out", whole.to_str().unwrap()]);
    let merged_dir = work.join(&results).join("short/merged");
    assert_same_tree(&whole, &merged_dir);
    assert_eq!(
        merged.stdout,
        fs::read(merged_dir.join("sweep.json")).unwrap()
    );
    // With a claim of one's own, none is printed.
    let own = karpsim_in(
        &work,
        &[
            "sweep", "job", SHORT, "--image", "i", "--shards", "2", "--pvc", "mine",
        ],
    );
    assert_eq!(stdout(&own).split("\n---\n").count(), 2);
    assert!(stdout(&own).contains("claimName: mine"));
}
