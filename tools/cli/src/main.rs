//! `host`: the command-line face of the library. A thin layer: parse, call, print.

mod cli;
mod commands;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // An empty variable means unset (`GPU_REDUCE_CUB_LIB=` would otherwise be an empty path).
    for (k, v) in std::env::vars_os() {
        if v.is_empty() && k.to_string_lossy().starts_with("GPU_REDUCE_") {
            // SAFETY: no other thread runs yet.
            unsafe { std::env::remove_var(&k) };
        }
    }
    let cli = cli::Cli::parse();
    match commands::run(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
