//! `karpsim explain` on a real quickstart run: a pod's and a NodeClaim's
//! history, and the error cases.

use std::path::Path;

use crate::report::quickstart_report;
use crate::util::{karpsim, single_error_line, stderr, stdout};

fn events(dir: &Path, variant: &str) -> Vec<csv::StringRecord> {
    let mut reader = csv::Reader::from_path(dir.join(variant).join("events.csv")).unwrap();
    reader.records().map(Result::unwrap).collect()
}

fn explain(args: &[&str]) -> String {
    let dir = quickstart_report();
    let mut all = vec!["explain", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let output = karpsim(&all);
    assert!(output.status.success(), "{}", stderr(&output));
    stdout(&output)
}

/// The event lines of the `Events:` table, as (reason, line).
fn event_lines(text: &str) -> Vec<(String, String)> {
    text.lines()
        .skip_while(|l| !l.starts_with("Events:"))
        .skip(3)
        .take_while(|l| l.starts_with("  "))
        .map(|l| {
            let reason = l.split_whitespace().nth(1).unwrap_or_default().to_string();
            (reason, l.to_string())
        })
        .collect()
}

/// A scheduled workload pod's history shows its creation, then its
/// scheduling; workload pods have the same names in both variants.
#[test]
fn pod_history_lists_creation_then_scheduling() {
    let dir = quickstart_report();
    let scheduled = events(dir, "on-demand")
        .into_iter()
        .find(|e| &e[2] == "Scheduled" && e[3].starts_with("pod/default/"))
        .expect("some workload pod was scheduled");
    let pod = scheduled[3].strip_prefix("pod/").unwrap().to_string();
    let text = explain(&["--pod", &pod, "--variant", "on-demand"]);
    assert!(text.starts_with("Variant:        on-demand\n"), "{text}");
    let lines = event_lines(&text);
    let position = |reason: &str| lines.iter().position(|(r, _)| r == reason);
    let (created, assigned) = (position("SuccessfulCreate"), position("Scheduled"));
    assert!(created.is_some() && assigned.is_some(), "{text}");
    assert!(created < assigned, "{text}");
    assert!(
        lines[assigned.unwrap()].1.contains("default-scheduler"),
        "{text}"
    );
    let (_, name) = pod.split_once('/').unwrap();
    // A bare name works too and, without --variant, covers both variants.
    let both = explain(&["--pod", name]);
    assert!(
        both.contains("Variant:        on-demand") && both.contains("Variant:        spot-first")
    );
}

/// A NodeClaim's history starts with its launch and shows its facts.
#[test]
fn nodeclaim_history_includes_launch() {
    let dir = quickstart_report();
    let mut reader = csv::Reader::from_path(dir.join("spot-first/nodeclaims.csv")).unwrap();
    let claim = reader.records().next().unwrap().unwrap();
    let text = explain(&["--nodeclaim", &claim[0]]);
    let lines = event_lines(&text);
    assert_eq!(
        lines.first().map(|(r, _)| r.as_str()),
        Some("Launched"),
        "{text}"
    );
    assert!(
        text.contains(&format!("Instance type:  {}", &claim[2])),
        "{text}"
    );
    assert!(text.contains("Capacity type:  spot"), "{text}");
}

#[test]
fn unknown_names_and_variants_are_one_error_line() {
    let dir = quickstart_report();
    let dir = dir.to_str().unwrap();
    let line = single_error_line(&karpsim(&["explain", dir, "--pod", "no-such-pod"]));
    assert!(
        line.starts_with("error: no pod named \"no-such-pod\" (nearest: default/"),
        "{line}"
    );
    assert!(
        line.ends_with(&format!(
            "; list them all with `karpsim explain {dir} --list`"
        )),
        "{line}"
    );
    let line = single_error_line(&karpsim(&[
        "explain",
        dir,
        "--nodeclaim",
        "spot-first-0001",
    ]));
    assert!(line.contains("did you mean: spot-first-00001"), "{line}");
    let line = single_error_line(&karpsim(&[
        "explain",
        dir,
        "--pod",
        "x",
        "--variant",
        "nope",
    ]));
    assert!(line.contains("variants: on-demand, spot-first"), "{line}");
    let missing = karpsim(&["explain", dir]);
    assert_eq!(
        missing.status.code(),
        Some(2),
        "neither --pod nor --nodeclaim"
    );
}

/// `--list` names every NodeClaim and pod `--nodeclaim` and `--pod` accept.
#[test]
fn list_names_what_can_be_explained() {
    let dir = quickstart_report();
    let text = explain(&["--list", "--variant", "spot-first"]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("VARIANT"), "{text}");
    assert!(
        lines[1..].iter().all(|l| l.starts_with("spot-first ")),
        "{text}"
    );
    let mut reader = csv::Reader::from_path(dir.join("spot-first/nodeclaims.csv")).unwrap();
    let claim = reader.records().next().unwrap().unwrap()[0].to_string();
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" nodeclaim ") && l.ends_with(&claim)),
        "{text}"
    );
    let pod = lines
        .iter()
        .find(|l| l.contains(" pod "))
        .and_then(|l| l.split_whitespace().last())
        .unwrap();
    assert!(explain(&["--pod", pod, "--variant", "spot-first"]).contains("Events:"));
}
