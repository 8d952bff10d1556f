//! The `weft` binary.

use clap::Parser;

/// mimalloc rather than glibc's malloc: the server's hot paths (a heartbeat,
/// a launch order) are many small short-lived allocations, on which glibc's
/// malloc took a fifth of the server's CPU (BENCHMARKS.md, "Heartbeats under
/// load").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // The agent's monitor spawner: this binary again, before anything else
    // (see agent/spawner.rs).
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(weft_host::agent::spawner::HELPER_ARG))
    {
        weft_host::agent::spawner::run_helper();
    }
    let cli = weft_host::cli::Cli::parse();
    if !cli.serves() {
        quiet_on_closed_pipe();
    }
    match weft_host::cli::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            // One sentence: the outermost context, then its causes.
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// A command whose output goes to a pipe closed early (`weft app list |
/// head`) ends there, quietly, as Unix tools do: SIGPIPE's default action,
/// which Rust's runtime sets aside (a failed write would then panic). Not
/// for `serve` and `agent`, which must outlive a closed pipe.
#[allow(
    unsafe_code,
    reason = "restoring a signal's default action is an FFI call; nothing else runs yet"
)]
fn quiet_on_closed_pipe() {
    // SAFETY: at the start of main, on its only thread; SIGPIPE's handler
    // is the standard library's "ignore", nothing of ours.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
