//! The subcommands of the `karpsim` binary, one module each, and what they
//! share: one-line error text, warnings shown once, the progress bar and
//! the handling of stop requests (`signals`).

pub mod chart;
pub mod compare;
pub mod explain;
pub mod instance_types;
pub mod plan;
pub mod pricing;
pub mod report;
pub mod run;
pub mod signals;
pub mod sweep;
pub mod sweep_job;
pub mod trace;

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

/// The bar's layout: at most 77 columns (a 16-column name, a 30-column
/// bar, the percentage, the time so far and the time left), so it fits an
/// 80-column terminal.
const PROGRESS_TEMPLATE: &str =
    "{msg:16!} [{bar:30}] {percent:>3}% {elapsed_precise} ETA {eta_precise}";

/// The warnings of one command, each distinct message shown once: exact
/// repeats are counted (`(×3)`), and a message every variant gave
/// (`variant NAME: ...`) is shown once with the variants' names. Nothing is
/// shown with `--quiet`.
pub struct Warnings {
    quiet: bool,
    /// (message without its variant prefix, variants, times given, shown).
    entries: Vec<(String, Vec<String>, usize, bool)>,
}

impl Warnings {
    /// No warnings yet; with `quiet`, none will be shown.
    pub fn new(quiet: bool) -> Warnings {
        Warnings {
            quiet,
            entries: Vec::new(),
        }
    }

    /// Adds one warning; `variants` are the names a `variant NAME: `
    /// prefix may carry.
    pub fn add(&mut self, message: &str, variants: &[&str]) {
        let (variant, text) = variants
            .iter()
            .find_map(|name| {
                message
                    .strip_prefix("variant ")
                    .and_then(|rest| rest.strip_prefix(name))
                    .and_then(|rest| rest.strip_prefix(": "))
                    .map(|rest| (Some(name.to_string()), rest))
            })
            .unwrap_or((None, message));
        let entry = match self.entries.iter_mut().find(|e| e.0 == text) {
            Some(entry) => entry,
            None => {
                self.entries.push((text.to_string(), Vec::new(), 0, false));
                self.entries.last_mut().expect("just pushed")
            }
        };
        entry.2 += 1;
        if let Some(name) = variant
            && !entry.1.contains(&name)
        {
            entry.1.push(name);
        }
    }

    /// The lines not shown yet, in the order their messages first came.
    pub fn pending_lines(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        for (text, variants, count, shown) in &mut self.entries {
            if *shown {
                continue;
            }
            *shown = true;
            let mut line = match variants.as_slice() {
                [] => format!("warning: {text}"),
                [one] => format!("warning: variant {one}: {text}"),
                many => format!("warning: variants {}: {text}", many.join(", ")),
            };
            // Repeats beyond one per variant.
            if *count > variants.len().max(1) {
                line.push_str(&format!(" (×{count})"));
            }
            lines.push(line);
        }
        lines
    }

    /// Prints the warnings not shown yet on stderr (none with `--quiet`).
    pub fn flush(&mut self) {
        let lines = self.pending_lines();
        if self.quiet {
            return;
        }
        for line in lines {
            eprintln!("{line}");
        }
    }
}

/// A progress bar over simulated seconds on stderr, with the time left.
/// It stays hidden when stderr is not a terminal or with `--quiet`, and
/// appears only once the run has taken a second, so short runs print
/// nothing.
pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
    started: Instant,
    shown: AtomicBool,
}

fn progress_style() -> indicatif::ProgressStyle {
    indicatif::ProgressStyle::with_template(PROGRESS_TEMPLATE)
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
}

impl Progress {
    /// A bar up to `total_seconds` of simulated time.
    pub fn new(total_seconds: u64, quiet: bool) -> Progress {
        let bar = (!quiet && io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(total_seconds),
                indicatif::ProgressDrawTarget::hidden(),
            );
            bar.set_style(progress_style());
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A terminal of `width` columns that keeps what is drawn.
    #[derive(Debug, Clone)]
    struct Screen {
        width: u16,
        lines: Arc<Mutex<Vec<String>>>,
    }

    impl indicatif::TermLike for Screen {
        fn width(&self) -> u16 {
            self.width
        }
        fn move_cursor_up(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> io::Result<()> {
            Ok(())
        }
        fn write_line(&self, line: &str) -> io::Result<()> {
            self.lines.lock().unwrap().push(line.to_string());
            Ok(())
        }
        fn write_str(&self, text: &str) -> io::Result<()> {
            self.lines.lock().unwrap().push(text.to_string());
            Ok(())
        }
        fn clear_line(&self) -> io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_bar_shows_the_time_left_within_80_columns() {
        let screen = Screen {
            width: 200,
            lines: Arc::default(),
        };
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(86_400),
            indicatif::ProgressDrawTarget::term_like(Box::new(screen.clone())),
        );
        bar.set_style(progress_style());
        bar.set_message("a-long-variant-name-of-many-words");
        bar.set_position(43_200);
        bar.tick();
        let lines = screen.lines.lock().unwrap().clone();
        let line = lines
            .iter()
            .rev()
            .find(|l| l.contains('%'))
            .unwrap_or_else(|| panic!("{lines:?}"));
        assert!(line.contains(" 50% ") && line.contains(" ETA "), "{line}");
        assert!(line.chars().count() <= 80, "{} columns: {line}", line.len());
    }

    #[test]
    fn warnings_are_shown_once_with_their_variants_and_count() {
        let mut warnings = Warnings::new(false);
        let variants = ["on-demand", "spot"];
        warnings.add("variant on-demand: NodePool a: no EC2NodeClass", &variants);
        warnings.add("variant spot: NodePool a: no EC2NodeClass", &variants);
        warnings.add("web.yaml:3:1: field not modelled", &variants);
        warnings.add("web.yaml:3:1: field not modelled", &variants);
        warnings.add("web.yaml:3:1: field not modelled", &variants);
        warnings.add("variant spot: NodePool b: other", &variants);
        assert_eq!(
            warnings.pending_lines(),
            [
                "warning: variants on-demand, spot: NodePool a: no EC2NodeClass",
                "warning: web.yaml:3:1: field not modelled (×3)",
                "warning: variant spot: NodePool b: other",
            ]
        );
        warnings.add("web.yaml:3:1: field not modelled", &variants);
        assert!(
            warnings.pending_lines().is_empty(),
            "shown once per command"
        );
    }
}
