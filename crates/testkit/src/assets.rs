//! The binaries of the real tier, found the envtest way.

use std::path::{Path, PathBuf};

/// The variable naming the folder of the binaries, as controller-runtime's envtest reads it.
pub const ASSETS_VAR: &str = "KUBEBUILDER_ASSETS";

/// When set (to anything but empty or `0`), a missing binary fails the test instead of
/// skipping it: CI sets it where it has put the binaries in place.
pub const REQUIRE_VAR: &str = "VOLCANO_REQUIRE_REAL_CLUSTER";

/// `program` in a folder of `PATH`, if any.
fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Paths of the real control plane's binaries.
#[derive(Debug, Clone)]
pub struct Assets {
    /// `kube-apiserver`.
    pub kube_apiserver: PathBuf,
    /// `etcd`.
    pub etcd: PathBuf,
    /// `kube-controller-manager`, when present: it creates namespaces' default
    /// ServiceAccounts, collects garbage and runs Deployments.
    pub kube_controller_manager: Option<PathBuf>,
}

impl Assets {
    /// The binaries in `$KUBEBUILDER_ASSETS`; `Err` says why the tier cannot run.
    pub fn from_env() -> Result<Assets, String> {
        let dir = std::env::var_os(ASSETS_VAR)
            .filter(|d| !d.is_empty())
            .ok_or_else(|| format!("{ASSETS_VAR} is not set"))?;
        Assets::in_dir(Path::new(&dir))
    }

    /// The binaries in `dir`.
    pub fn in_dir(dir: &Path) -> Result<Assets, String> {
        let find = |name: &str| {
            let p = dir.join(name);
            p.is_file().then_some(p)
        };
        let kube_apiserver = find("kube-apiserver")
            .ok_or_else(|| format!("{} holds no kube-apiserver", dir.display()))?;
        // envtest ships etcd beside the API server; Debian's etcd-server puts it on PATH.
        let etcd = find("etcd")
            .or_else(|| on_path("etcd"))
            .ok_or_else(|| format!("{} holds no etcd, nor is one on PATH", dir.display()))?;
        Ok(Assets {
            kube_apiserver,
            etcd,
            kube_controller_manager: find("kube-controller-manager"),
        })
    }

    /// The binaries, or `None` after printing why the calling test skips. Panics instead when
    /// [`REQUIRE_VAR`] says the tier must run.
    pub fn or_skip(test: &str) -> Option<Assets> {
        match Assets::from_env() {
            Ok(a) => Some(a),
            Err(why) => {
                let required = std::env::var(REQUIRE_VAR)
                    .map(|v| !v.is_empty() && v != "0")
                    .unwrap_or(false);
                assert!(
                    !required,
                    "{test}: the real-cluster tier must run, but {why}"
                );
                eprintln!("skipped {test}: no real API server ({why})");
                None
            }
        }
    }
}
