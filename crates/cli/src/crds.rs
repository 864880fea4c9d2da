//! `volcano crds`: the CustomResourceDefinitions of Volcano's kinds.

use crate::Failure;

/// Flags of `volcano crds`.
#[derive(clap::Args, Debug)]
pub struct CrdsArgs {}

/// Prints the CRDs.
pub fn run(_args: &CrdsArgs) -> Result<(), Failure> {
    Err(Failure::Internal(anyhow::anyhow!("not built yet")))
}
