//! Implementation of scenario loading (being written).
use std::path::{Path, PathBuf};

use super::{LoadError, Scenario};

/// Loads every file (or every `*.yaml`/`*.yml` file of a directory, in name order).
pub fn load_paths(paths: &[PathBuf]) -> Result<Scenario, LoadError> {
    let _ = paths;
    Err(LoadError::for_path(Path::new("-"), "not implemented yet"))
}

/// Loads one file's text; `file` is used only to name it in errors.
pub fn load_str(file: &Path, text: &str) -> Result<Scenario, LoadError> {
    let _ = text;
    Err(LoadError::for_path(file, "not implemented yet"))
}
