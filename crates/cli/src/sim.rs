//! `volcano sim`: a simulation over virtual time.

use crate::Failure;

/// Flags of `volcano sim`.
#[derive(clap::Args, Debug)]
pub struct SimArgs {}

/// Runs the simulation.
pub fn run(_args: &SimArgs) -> Result<(), Failure> {
    Err(Failure::Input("volcano sim: not built yet".to_string()))
}
