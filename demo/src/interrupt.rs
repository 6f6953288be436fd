//! Ctrl-C (SIGINT) and SIGTERM: the story stops at its next wait, and what
//! it started is stopped as it unwinds, instead of the process ending on
//! the spot and leaving its servers behind.

use std::sync::atomic::{AtomicBool, Ordering};

static ASKED: AtomicBool = AtomicBool::new(false);

/// Takes SIGINT and SIGTERM from now on: the first sets [`asked`] (and says
/// so on stderr), later ones only say that cleaning up goes on.
///
/// # Panics
/// When the signal handlers cannot be installed.
pub fn watch() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .expect("a runtime for the signal handlers");
    let (mut int, mut term) = runtime.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        (
            signal(SignalKind::interrupt()).expect("a SIGINT handler"),
            signal(SignalKind::terminate()).expect("a SIGTERM handler"),
        )
    });
    std::thread::spawn(move || {
        runtime.block_on(async {
            loop {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
                if ASKED.swap(true, Ordering::SeqCst) {
                    eprintln!("(still stopping what the demo started)");
                } else {
                    eprintln!("\n== interrupted: stopping what the demo started");
                }
            }
        });
    });
}

/// Whether a stop was asked for.
pub fn asked() -> bool {
    ASKED.load(Ordering::SeqCst)
}
