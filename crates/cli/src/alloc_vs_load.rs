//! `volcano sim alloc-vs-load`: the arrival-only GPU allocation experiment.

use crate::Failure;

/// Flags of `volcano sim alloc-vs-load`.
#[derive(clap::Args, Debug)]
pub struct AllocVsLoadArgs {}

/// Runs the experiment.
pub fn run(_args: &AllocVsLoadArgs) -> Result<(), Failure> {
    Err(Failure::Input("alloc-vs-load: not built yet".to_string()))
}
