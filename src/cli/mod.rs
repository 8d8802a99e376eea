//! The subcommands of the `karpsim` binary, one module each, and what they
//! share: one-line error text and the progress bar.

pub mod instance_types;
pub mod pricing;
pub mod run;

use std::io;

/// A progress bar on stderr, only when stderr is a terminal.
pub fn progress_bar(total_seconds: u64) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if !io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(total_seconds);
    let style = indicatif::ProgressStyle::with_template(
        "{msg:>16} [{bar:40}] {percent:>3}% simulated, {elapsed} elapsed",
    )
    .map(|s| s.progress_chars("=> "))
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    Some(bar)
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
