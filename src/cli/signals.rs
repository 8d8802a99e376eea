//! Stop requests. SIGINT, SIGTERM and SIGHUP are blocked in every thread
//! (the mask is set before any thread starts, and threads inherit it) and
//! taken by one watcher thread with `sigwait`, so no code runs inside a
//! signal handler. The watcher removes the registered temporary files and
//! folders ([`karpsim_report::cleanup`]), prints one line and exits with
//! 128 + the signal number (130 for SIGINT, 143 for SIGTERM).

use std::io::{IsTerminal, Write};

use karpsim_report::cleanup;

/// Starts the watcher. Call first in `main`, before any other thread.
pub fn install() {
    #[cfg(unix)]
    watch();
}

#[cfg(unix)]
fn watch() {
    // SAFETY: `set` is a plain value initialized by sigemptyset before use;
    // pthread_sigmask and sigwait only read it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, signal);
        }
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return;
        }
        let started = std::thread::Builder::new()
            .name("stop-requests".to_string())
            .spawn(move || {
                loop {
                    let mut signal = 0;
                    if libc::sigwait(&set, &mut signal) == 0 {
                        stop(signal);
                    }
                }
            });
        if started.is_err() {
            // Without a watcher the signals must keep their default effect.
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }
}

/// Removes what the process has in progress, says so and exits.
fn stop(signal: i32) -> ! {
    let written = cleanup::remove_all();
    let mut stderr = std::io::stderr().lock();
    if stderr.is_terminal() {
        // Over the progress bar, if one is drawn.
        let _ = write!(stderr, "\r\x1b[2K");
    }
    let _ = match written.last() {
        None => writeln!(stderr, "interrupted; nothing written"),
        Some(path) => writeln!(
            stderr,
            "interrupted; {} was written before the stop",
            path.display()
        ),
    };
    let _ = stderr.flush();
    std::process::exit(128 + signal)
}
