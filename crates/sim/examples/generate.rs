//! Prints a generated workload as scenario YAML.
//!
//! `cargo run -p volcano-sim --example generate -- 'nodes=10,jobs=20' [SEED]`, or `help` for
//! the keys.

use std::process::ExitCode;

use volcano_sim::generate::{GenerateSpec, HELP, generate, to_yaml};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let text = args.next().unwrap_or_default();
    if text == "help" || text == "--help" {
        print!("{HELP}");
        return ExitCode::SUCCESS;
    }
    let seed = match args.next().map(|s| s.parse::<u64>()) {
        None => 0,
        Some(Ok(seed)) => seed,
        Some(Err(e)) => {
            eprintln!("seed: {e}");
            return ExitCode::from(2);
        }
    };
    let spec: GenerateSpec = match text.parse() {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match to_yaml(&generate(&spec, seed)) {
        Ok(yaml) => {
            print!("{yaml}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
