//! `volcano up`: a local control plane in one process.

use crate::Failure;

/// Flags of `volcano up`.
#[derive(clap::Args, Debug)]
pub struct UpArgs {}

/// Serves until interrupted.
pub fn run(_args: &UpArgs) -> Result<(), Failure> {
    Err(Failure::Internal(anyhow::anyhow!("not built yet")))
}
