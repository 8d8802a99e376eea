//! Stop requests and writers that die: a real `karpsim` child process is
//! sent SIGINT, SIGTERM or SIGKILL while it writes a report, and a second
//! writer of the same folder is refused.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{ON_DEMAND_POOL, entries_but_yaml, karpsim_in, single_error_line, stderr};

/// A scenario of `duration` with a steady stream of short pods, so a long
/// one is still simulating seconds after it started.
fn scenario(duration: &str) -> String {
    format!(
        "name: long\nseed: 1\nduration: {duration}\nregion: us-east-1\nzones: [us-east-1a]\n\
         workloads:\n  - generate:\n      pods:\n        name: batch\n\
         \x20       arrivals: {{poisson: {{rate: 2/s}}}}\n        duration: {{fixed: 10m}}\n\
         \x20       requests: {{cpu: 250m, memory: 512Mi}}\n\
         variants:\n  - name: a\n    karpenter: {{nodePools: pool.yaml}}\n"
    )
}

/// A folder with `long.yaml` (5 days, under the limit of pods a run creates), `short.yaml` (10 minutes) and the
/// NodePool files `pool.yaml` and `pool2.yaml`.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("long.yaml"), scenario("5d")).unwrap();
    fs::write(dir.path().join("short.yaml"), scenario("10m")).unwrap();
    fs::write(dir.path().join("pool.yaml"), ON_DEMAND_POOL).unwrap();
    fs::write(dir.path().join("pool2.yaml"), ON_DEMAND_POOL).unwrap();
    dir
}

fn spawn(dir: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_karpsim"))
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("karpsim starts")
}

fn send(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

/// Waits until `ready` holds (at most two minutes; the child is killed
/// and the test fails after that).
fn wait_until(child: &mut Child, what: &str, ready: impl Fn() -> bool) {
    let started = Instant::now();
    while !ready() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("karpsim ended ({status}) before {what}");
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("timed out waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The lines of `text` other than warnings.
fn not_warnings(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.starts_with("warning: "))
        .collect()
}

/// The exit code and standard error of a child that was asked to stop.
fn finish(mut child: Child) -> (Option<i32>, String) {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut text = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut text)
                .unwrap();
            return (status.code(), text);
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("karpsim did not stop");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The temporary report folder of `child` writing `out` in `dir`.
fn temporary(dir: &Path, out: &str, child: &Child) -> PathBuf {
    dir.join(format!(".{out}.tmp-{}", child.id()))
}

/// Waits until `child` has streamed some events into `events`.
fn wait_for_events(child: &mut Child, events: &Path) {
    wait_until(child, "events are written", || {
        fs::metadata(events).is_ok_and(|m| m.len() > 100)
    });
}

/// A child asked to stop exits with `code`, says only that nothing was
/// written, and leaves nothing in `dir` beside the inputs.
fn assert_stopped_leaving_nothing(child: Child, code: i32, dir: &Path) {
    let (status, text) = finish(child);
    assert_eq!(status, Some(code), "{text}");
    assert_eq!(
        not_warnings(&text),
        ["interrupted; nothing written"],
        "{text}"
    );
    assert_eq!(entries_but_yaml(dir), Vec::<String>::new());
}

/// SIGINT while events stream into the temporary report: exit 130, one
/// line, nothing left; meanwhile a second writer of the same folder was
/// refused, naming the process that holds it.
#[test]
fn sigint_during_a_run_removes_the_temporary_report() {
    let dir = workspace();
    let mut child = spawn(dir.path(), &["run", "long.yaml", "--out", "out"]);
    let events = temporary(dir.path(), "out", &child).join("a/events.csv");
    wait_for_events(&mut child, &events);
    let second = karpsim_in(dir.path(), &["run", "short.yaml", "--out", "out"]);
    let line = single_error_line(&second);
    assert!(
        line.contains(&format!(
            "out is being written by another karpsim process (pid {})",
            child.id()
        )),
        "{line}"
    );
    send(&child, "-INT");
    assert_stopped_leaving_nothing(child, 130, dir.path());
}

/// SIGTERM during `compare`: exit 143, one line, nothing left.
#[test]
fn sigterm_during_compare_removes_the_temporary_report() {
    let dir = workspace();
    let mut child = spawn(
        dir.path(),
        &[
            "compare",
            "long.yaml",
            "--nodepools",
            "pool.yaml",
            "--nodepools",
            "pool2.yaml",
            "--out",
            "cmp",
        ],
    );
    let events = temporary(dir.path(), "cmp", &child).join("pool2/events.csv");
    wait_for_events(&mut child, &events);
    send(&child, "-TERM");
    assert_stopped_leaving_nothing(child, 143, dir.path());
}

/// A writer killed outright (SIGKILL) leaves its temporary folder; the next
/// run into the same folder removes it, and its own report is complete.
#[test]
fn the_next_run_removes_what_a_killed_run_left() {
    let dir = workspace();
    let mut child = spawn(dir.path(), &["run", "long.yaml", "--out", "out"]);
    let temp = temporary(dir.path(), "out", &child);
    let events = temp.join("a/events.csv");
    wait_for_events(&mut child, &events);
    send(&child, "-KILL");
    let (code, _) = finish(child);
    assert_eq!(code, None, "killed by the signal");
    assert!(temp.is_dir(), "SIGKILL leaves the folder");
    let next = karpsim_in(dir.path(), &["run", "short.yaml", "--out", "out", "-q"]);
    assert!(next.status.success(), "{}", stderr(&next));
    assert_eq!(entries_but_yaml(dir.path()), ["out"]);
    assert!(dir.path().join("out/a/summary.json").is_file());
    assert!(dir.path().join("out/report.html").is_file());
}
