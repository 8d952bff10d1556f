//! The `weft` binary.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = weft_host::cli::Cli::parse();
    match weft_host::cli::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            // One sentence: the outermost context, then its causes.
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
