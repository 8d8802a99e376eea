//! The subcommands of the `karpsim` binary, one module each, and what they
//! share: one-line error text and the progress bar.

pub mod chart;
pub mod compare;
pub mod explain;
pub mod instance_types;
pub mod pricing;
pub mod report;
pub mod run;

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How a command prints its result on stdout.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Aligned text for people.
    Table,
    /// One JSON document.
    Json,
    /// One YAML document.
    Yaml,
}

/// Prints `document` on stdout as JSON or YAML.
pub fn print_document(format: OutputFormat, document: &serde_json::Value) -> anyhow::Result<()> {
    let mut stdout = io::BufWriter::new(io::stdout().lock());
    match format {
        OutputFormat::Yaml => {
            let text = serde_saphyr::to_string(document)
                .map_err(|e| anyhow::anyhow!("cannot write YAML: {e}"))?;
            stdout.write_all(text.as_bytes())?;
        }
        _ => {
            serde_json::to_writer_pretty(&mut stdout, document)?;
            writeln!(stdout)?;
        }
    }
    stdout.flush()?;
    Ok(())
}

/// A progress bar over simulated seconds on stderr. It stays hidden when
/// stderr is not a terminal or with `--quiet`, and appears only once the
/// run has taken a second, so short runs print nothing.
pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
    started: Instant,
    shown: AtomicBool,
}

impl Progress {
    /// A bar up to `total_seconds` of simulated time.
    pub fn new(total_seconds: u64, quiet: bool) -> Progress {
        let bar = (!quiet && io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(total_seconds),
                indicatif::ProgressDrawTarget::hidden(),
            );
            let style = indicatif::ProgressStyle::with_template(
                "{msg:>16} [{bar:40}] {percent:>3}% simulated, {elapsed} elapsed",
            )
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar
        });
        Progress {
            bar,
            started: Instant::now(),
            shown: AtomicBool::new(false),
        }
    }

    /// Whether a terminal bar is in use (then per-variant lines are not
    /// needed).
    pub fn is_visible(&self) -> bool {
        self.bar.is_some()
    }

    /// Names what is being simulated.
    pub fn set_message(&self, message: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(message.to_string());
        }
    }

    /// Moves the bar to `seconds` simulated.
    pub fn set_position(&self, seconds: u64) {
        let Some(bar) = &self.bar else { return };
        if !self.shown.load(Ordering::Relaxed) && self.started.elapsed() >= Duration::from_secs(1) {
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            self.shown.store(true, Ordering::Relaxed);
        }
        bar.set_position(seconds);
    }

    /// Clears the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The error and its causes on one line.
pub fn one_line(error: &anyhow::Error) -> String {
    let mut text = error.to_string();
    for cause in error.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text.replace('\n', " ")
}

pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error
        .chain()
        .filter_map(|c| c.downcast_ref::<io::Error>())
        .any(|e| e.kind() == io::ErrorKind::BrokenPipe)
}
