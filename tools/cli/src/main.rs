//! `host`: the command-line face of the library. A thin layer: parse, call, print.

mod cli;
mod commands;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

fn main() -> ExitCode {
    // An empty variable means unset (`GPU_REDUCE_CUB_LIB=` would otherwise be an empty path).
    for (k, v) in std::env::vars_os() {
        if v.is_empty() && k.to_string_lossy().starts_with("GPU_REDUCE_") {
            // SAFETY: no other thread runs yet.
            unsafe { std::env::remove_var(&k) };
        }
    }
    let matches = cli::Cli::command().get_matches();
    let cli = cli::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let given = matches
        .subcommand()
        .map_or_else(commands::Given::default, |(_, m)| commands::Given::of(m));
    match commands::run(cli.command, &given) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
