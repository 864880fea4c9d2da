//! TODO(helper): the `env` plugin.
use super::PluginError;
/// Placeholder.
pub struct EnvPlugin;
impl EnvPlugin {
    /// Placeholder.
    pub fn from_args(_args: &[String]) -> Result<Self, PluginError> {
        Err(PluginError {
            plugin: "env",
            message: "not built yet".into(),
        })
    }
}
