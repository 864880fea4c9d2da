//! `volcano scheduler` and `volcano controller-manager`: the runtime of `volcano-kube`.

use crate::Failure;

/// Flags of `volcano scheduler`.
#[derive(clap::Args, Debug)]
pub struct SchedulerArgs {}

/// Flags of `volcano controller-manager`.
#[derive(clap::Args, Debug)]
pub struct ControllerManagerArgs {}

/// Runs the scheduler until it is told to stop.
pub fn run_scheduler(_args: &SchedulerArgs) -> Result<(), Failure> {
    Err(Failure::Internal(anyhow::anyhow!("not built yet")))
}

/// Runs the controllers until they are told to stop.
pub fn run_controller_manager(_args: &ControllerManagerArgs) -> Result<(), Failure> {
    Err(Failure::Internal(anyhow::anyhow!("not built yet")))
}
