//! Reading scenario files and directories into one checked [`Scenario`].

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::decode::{self, Decoded};
use super::object::Object;
use super::{LoadError, Scenario, SchedulerConfText, cross, documents};
use crate::keys;

/// Loads every file (or every `*.yaml`/`*.yml` file of a directory, in name order).
pub fn load_paths(paths: &[PathBuf]) -> Result<Scenario, LoadError> {
    if paths.is_empty() {
        return Err(LoadError {
            source: None,
            path: None,
            object: None,
            field: None,
            message: "no scenario files given".to_string(),
        });
    }
    let mut builder = Builder::default();
    for path in paths {
        for file in files_of(path)? {
            let bytes = fs::read(&file)
                .map_err(|e| LoadError::for_path(&file, format!("cannot read: {e}")))?;
            let text = String::from_utf8(bytes)
                .map_err(|e| LoadError::for_path(&file, format!("not UTF-8 text: {e}")))?;
            builder.add_file(&file, &text)?;
        }
    }
    builder.finish()
}

/// Loads one file's text; `file` is used only to name it in errors.
pub fn load_str(file: &Path, text: &str) -> Result<Scenario, LoadError> {
    let mut builder = Builder::default();
    builder.add_file(file, text)?;
    builder.finish()
}

/// `path` itself, or the YAML files directly inside it when it is a directory.
fn files_of(path: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let metadata =
        fs::metadata(path).map_err(|e| LoadError::for_path(path, format!("cannot read: {e}")))?;
    if !metadata.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let entries = fs::read_dir(path)
        .map_err(|e| LoadError::for_path(path, format!("cannot read directory: {e}")))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|e| LoadError::for_path(path, format!("cannot read directory: {e}")))?;
        let file = entry.path();
        let is_yaml = file
            .extension()
            .and_then(|ext| ext.to_str())
            .is_some_and(|ext| ext == "yaml" || ext == "yml");
        // A subdirectory named `x.yaml` is not a scenario file; symlinks to files are.
        if is_yaml && fs::metadata(&file).is_ok_and(|m| m.is_file()) {
            files.push(file);
        }
    }
    if files.is_empty() {
        return Err(LoadError::for_path(
            path,
            "directory holds no *.yaml or *.yml file",
        ));
    }
    files.sort();
    Ok(files)
}

/// The scenario being assembled from the documents of every file, in order.
#[derive(Default)]
struct Builder {
    scenario: Scenario,
}

impl Builder {
    fn add_file(&mut self, file: &Path, text: &str) -> Result<(), LoadError> {
        for document in documents::split(file, text)? {
            if let Some(decoded) = decode::decode(document)? {
                self.add(decoded)?;
            }
        }
        Ok(())
    }

    fn add(&mut self, decoded: Decoded) -> Result<(), LoadError> {
        let Decoded { key, object, site } = decoded;
        if let Some(first) = self.scenario.sources.get(&key) {
            return Err(site.field_error(
                "metadata.name",
                format!("{key} is defined twice; the first is at {first}"),
            ));
        }
        let objects = &mut self.scenario.objects;
        match object {
            Object::Node(o) => objects.nodes.push(*o),
            Object::Pod(o) => objects.pods.push(Arc::new(*o)),
            Object::PodGroup(o) => objects.pod_groups.push(*o),
            Object::Queue(o) => objects.queues.push(*o),
            Object::Job(o) => objects.jobs.push(*o),
            Object::Command(o) => objects.commands.push(*o),
            Object::PriorityClass(o) => objects.priority_classes.push(*o),
            Object::Namespace(o) => objects.namespaces.push(*o),
            Object::PersistentVolume(o) => objects.persistent_volumes.push(*o),
            Object::PersistentVolumeClaim(o) => objects.persistent_volume_claims.push(*o),
            Object::StorageClass(o) => objects.storage_classes.push(*o),
            Object::CSINode(o) => objects.csi_nodes.push(*o),
            Object::ReplicaSet(o) => objects.replica_sets.push(*o),
            Object::StatefulSet(o) => objects.stateful_sets.push(*o),
            Object::Deployment(o) => objects.deployments.push(*o),
            Object::CronJob(o) => objects.cron_jobs.push(*o),
            Object::JobFlow(o) => objects.job_flows.push(*o),
            Object::JobTemplate(o) => objects.job_templates.push(*o),
            Object::HyperNode(o) => objects.hyper_nodes.push(*o),
            Object::ConfigMap(cm) => {
                let field = format!("data.{}", keys::SCHEDULER_CONF_KEY);
                if let Some(first) = &self.scenario.scheduler_conf {
                    return Err(site.field_error(
                        field,
                        format!(
                            "a second scheduler configuration; a scenario holds only one, the first is at {}",
                            first.source
                        ),
                    ));
                }
                // Decoding has already required the key; an absent one reads as empty text.
                let text = cm
                    .data
                    .and_then(|mut data| data.remove(keys::SCHEDULER_CONF_KEY))
                    .unwrap_or_default();
                self.scenario.scheduler_conf = Some(SchedulerConfText {
                    text,
                    source: site.source().clone(),
                });
            }
        }
        self.scenario.sources.insert(key, site.source().clone());
        Ok(())
    }

    fn finish(self) -> Result<Scenario, LoadError> {
        cross::check(&self.scenario)?;
        Ok(self.scenario)
    }
}
