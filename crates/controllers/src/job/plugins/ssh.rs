//! TODO(helper): the `ssh` plugin.
use super::PluginError;
/// Placeholder.
pub trait SshKeySource {}
/// Placeholder.
pub struct SshPlugin;
impl SshPlugin {
    /// Placeholder.
    pub fn from_args(_args: &[String], _keys: &dyn SshKeySource) -> Result<Self, PluginError> {
        Err(PluginError {
            plugin: "ssh",
            message: "not built yet".into(),
        })
    }
}
