//! TODO(helper): the `svc` plugin.
use super::PluginError;
/// Placeholder.
pub struct SvcPlugin;
impl SvcPlugin {
    /// Placeholder.
    pub fn from_args(_args: &[String]) -> Result<Self, PluginError> {
        Err(PluginError {
            plugin: "svc",
            message: "not built yet".into(),
        })
    }
}
