//! `karpsim trace inspect FILE [--format F] [-o table|json|yaml]`: what a
//! recording (audit log, SimKube trace, kubereplay capture, trace CSV)
//! holds, read by the reader a run uses, so a user can check it before
//! replaying it.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{Result, bail};

use karpsim_input::scenario::trace::inspect::{Inspection, inspect};
use karpsim_input::scenario::trace::{DEFAULT_EXCLUDED_NAMESPACES, TraceFormat, guess_format};

use super::OutputFormat;

#[derive(clap::Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub command: TraceCommand,
}

#[derive(clap::Subcommand)]
pub enum TraceCommand {
    /// Show what a recording holds: time span, objects by kind, events by
    /// verb, peak desired pods, and what is passed over and why.
    Inspect(InspectArgs),
}

#[derive(clap::Args)]
pub struct InspectArgs {
    /// The recording.
    pub file: PathBuf,
    /// Its format: generic, alibaba, audit-log, simkube or kubereplay
    /// [default: guessed from the name and the first bytes].
    #[arg(long, value_name = "F")]
    pub format: Option<String>,
    /// Namespaces not replayed, comma-separated [default: kube-system,
    /// kube-public, kube-node-lease].
    #[arg(long, value_delimiter = ',', value_name = "NS,...")]
    pub exclude_namespaces: Option<Vec<String>>,
    /// Skip unusable records, counting them, instead of failing.
    #[arg(long)]
    pub skip_bad_rows: bool,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
    /// Errors only.
    #[arg(short, long)]
    pub quiet: bool,
}

pub fn trace_command(args: &TraceArgs) -> Result<()> {
    match &args.command {
        TraceCommand::Inspect(args) => inspect_command(args),
    }
}

fn inspect_command(args: &InspectArgs) -> Result<()> {
    let format = match &args.format {
        Some(name) => match TraceFormat::parse(name) {
            Some(format) => format,
            None => bail!(
                "--format {name:?}: expected one of {}",
                TraceFormat::ALL.map(TraceFormat::as_str).join(", ")
            ),
        },
        None => match guess_format(&args.file)? {
            Some(format) => format,
            None => bail!(
                "{}: cannot tell the format of this file; give --format ({})",
                args.file.display(),
                TraceFormat::ALL.map(TraceFormat::as_str).join(", ")
            ),
        },
    };
    let exclude = match &args.exclude_namespaces {
        Some(list) => list.clone(),
        None => DEFAULT_EXCLUDED_NAMESPACES.map(str::to_string).to_vec(),
    };
    let report = inspect(&args.file, format, args.skip_bad_rows, &exclude)?;
    let mut warnings = super::Warnings::new(args.quiet);
    for warning in &report.warnings {
        warnings.add(&format!("{}: {warning}", report.file), &[]);
    }
    warnings.flush();
    match args.output {
        OutputFormat::Table => {
            let mut out = io::stdout().lock();
            out.write_all(table(&report).as_bytes())?;
            out.flush()?;
            Ok(())
        }
        format => super::print_document(format, &serde_json::to_value(&report)?),
    }
}

/// Seconds as the run reports them (`1h2m3.5s`).
fn seconds(s: f64) -> String {
    let ms = (s * 1000.0).round().max(0.0) as u64;
    karpsim_model::time::SimDuration::from_millis(ms).to_string()
}

fn table(r: &Inspection) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "trace {} ({})", r.file, r.format);
    match (r.first_event_s, r.last_event_s) {
        (Some(first), Some(last)) => {
            let _ = writeln!(
                out,
                "span {} to {} ({}), {} events replayed",
                seconds(first),
                seconds(last),
                seconds(last - first),
                r.events
            );
        }
        _ => {
            let _ = writeln!(out, "no events replayed");
        }
    }
    let section = |out: &mut String, title: &str, rows: &[(String, u64)]| {
        if rows.is_empty() {
            return;
        }
        let _ = writeln!(out, "\n{title}");
        let width = rows
            .iter()
            .map(|(k, _)| k.chars().count())
            .max()
            .unwrap_or(0);
        for (key, count) in rows {
            let _ = writeln!(out, "  {key:<width$}  {count:>8}");
        }
    };
    let rows = |map: &std::collections::BTreeMap<String, u64>| -> Vec<(String, u64)> {
        map.iter().map(|(k, v)| (k.clone(), *v)).collect()
    };
    section(&mut out, "objects by kind", &rows(&r.objects_by_kind));
    section(&mut out, "events by verb", &rows(&r.events_by_verb));
    let _ = writeln!(
        out,
        "\npeak desired pods {}{}",
        r.peak_desired_pods,
        r.peak_at_s
            .map(|t| format!(" at {}", seconds(t)))
            .unwrap_or_default()
    );
    section(&mut out, "passed over", &rows(&r.ignored));
    if r.rows_skipped > 0 {
        let _ = writeln!(out, "\nunusable records skipped {}", r.rows_skipped);
    }
    out
}
