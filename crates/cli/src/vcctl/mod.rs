//! The commands a Volcano user knows from `vcctl`: `volcano job ...` and `volcano queue ...`,
//! against any API server.

use clap::Subcommand;

use crate::Failure;

/// `volcano job`.
#[derive(Subcommand, Debug)]
pub enum JobCommand {}

/// `volcano queue`.
#[derive(Subcommand, Debug)]
pub enum QueueCommand {}

/// Runs a `volcano job` command.
pub fn run_job(cmd: JobCommand) -> Result<(), Failure> {
    match cmd {}
}

/// Runs a `volcano queue` command.
pub fn run_queue(cmd: QueueCommand) -> Result<(), Failure> {
    match cmd {}
}
