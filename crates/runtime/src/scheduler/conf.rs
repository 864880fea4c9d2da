//! The scheduler configuration in force, re-read when its file changes. A file that no longer
//! parses is reported and the configuration in force is kept: a typo in a ConfigMap never
//! stops scheduling.

use std::path::PathBuf;
use std::time::SystemTime;

use volcano_api::keys;
use volcano_scheduler::conf::SchedulerConf;

use crate::RuntimeError;

/// The configuration and where it comes from.
#[derive(Debug)]
pub struct ConfSource {
    path: Option<PathBuf>,
    stamp: Option<(SystemTime, u64)>,
    text: String,
    conf: SchedulerConf,
}

/// The `volcano-scheduler.conf` text in `text`, which may also be a whole ConfigMap document
/// (as mounted files are not, but as users keep them in a repository).
fn conf_text(text: &str) -> String {
    let inner = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text)
        .ok()
        .filter(|v| v.get("kind").and_then(|k| k.as_str()) == Some("ConfigMap"))
        .and_then(|v| {
            v.get("data")?
                .get(keys::SCHEDULER_CONF_KEY)?
                .as_str()
                .map(str::to_string)
        });
    inner.unwrap_or_else(|| text.to_string())
}

fn parse(path: &std::path::Path, text: &str) -> Result<SchedulerConf, RuntimeError> {
    let (conf, skipped) =
        SchedulerConf::parse(&conf_text(text)).map_err(|e| RuntimeError::Conf {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
    if !skipped.actions.is_empty() || !skipped.plugins.is_empty() {
        tracing::warn!(
            path = %path.display(),
            actions = ?skipped.actions,
            plugins = ?skipped.plugins,
            "Volcano actions and plugins not implemented by volcano-rs are skipped"
        );
    }
    Ok(conf)
}

impl ConfSource {
    /// Volcano's built-in default configuration.
    pub fn builtin() -> ConfSource {
        ConfSource {
            path: None,
            stamp: None,
            text: String::new(),
            conf: SchedulerConf::default_conf(),
        }
    }

    /// The configuration in `path`; an error if it cannot be read or parsed at start.
    pub fn file(path: PathBuf) -> Result<ConfSource, RuntimeError> {
        let text = std::fs::read_to_string(&path).map_err(|e| RuntimeError::Conf {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let conf = parse(&path, &text)?;
        let stamp = stamp(&path);
        Ok(ConfSource {
            path: Some(path),
            stamp,
            text,
            conf,
        })
    }

    /// The configuration in force.
    pub fn conf(&self) -> &SchedulerConf {
        &self.conf
    }

    /// Re-reads the file if it changed; `true` if a new configuration is now in force.
    pub fn reload(&mut self) -> bool {
        let Some(path) = self.path.clone() else {
            return false;
        };
        let now = stamp(&path);
        if now.is_none() || now == self.stamp {
            return false;
        }
        self.stamp = now;
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot re-read the scheduler configuration; keeping the one in force");
                return false;
            }
        };
        if text == self.text {
            return false;
        }
        match parse(&path, &text) {
            Ok(conf) => {
                tracing::info!(path = %path.display(), "scheduler configuration reloaded");
                self.conf = conf;
                self.text = text;
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "the new scheduler configuration is invalid; keeping the one in force");
                self.text = text;
                false
            }
        }
    }
}

/// When and how big: a ConfigMap update swaps a symlink, which changes both.
fn stamp(path: &std::path::Path) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_file_is_reloaded_and_a_broken_one_keeps_the_conf_in_force() {
        let dir = std::env::temp_dir().join(format!("volcano-conf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("volcano-scheduler.conf");
        std::fs::write(
            &path,
            "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n",
        )
        .unwrap();
        let mut src = ConfSource::file(path.clone()).unwrap();
        assert_eq!(src.conf().actions, vec!["enqueue", "allocate"]);

        std::fs::write(
            &path,
            "actions: \"allocate, backfill, preempt\"\ntiers:\n- plugins:\n  - name: gang\n",
        )
        .unwrap();
        src.stamp = None;
        assert!(src.reload());
        assert_eq!(src.conf().actions, vec!["allocate", "backfill", "preempt"]);

        std::fs::write(&path, "actions: \"allocate, teleport\"\n").unwrap();
        src.stamp = None;
        assert!(!src.reload());
        assert_eq!(src.conf().actions, vec!["allocate", "backfill", "preempt"]);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_missing_file_at_start_is_an_error_naming_it() {
        let e = ConfSource::file(PathBuf::from("/nonexistent/volcano.conf")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/volcano.conf"), "{e}");
    }
}
