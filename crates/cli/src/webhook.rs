//! `volcano webhook-manager`: Volcano's admission webhooks over HTTPS.

use crate::Failure;
use crate::runtime::WebhookManagerArgs;

/// Runs the webhook server until it is told to stop.
pub fn run(args: &WebhookManagerArgs) -> Result<(), Failure> {
    let _ = args;
    Err(Failure::Internal(anyhow::anyhow!(
        "webhook-manager is not built yet"
    )))
}
