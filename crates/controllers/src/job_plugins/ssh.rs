//! The `ssh` plugin: password-less SSH between the pods of a job, as MPI-style launchers need.
//!
//! On job add it creates a Secret `<job>-ssh` with a key pair (`id_rsa`, `id_rsa.pub`), the same
//! public key as `authorized_keys`, and an ssh `config` with one `Host` entry per pod. Every
//! container mounts it at `/root/.ssh` (or `--ssh-key-file-path`).
//!
//! The plugin never makes keys itself: a controller here is deterministic and does no I/O, so
//! keys come from an [`SshKeySource`], or from `--ssh-private-key`/`--ssh-public-key`. Volcano
//! generates RSA-2048; a source may produce any type OpenSSH accepts (ed25519 is fine), and the
//! file names stay `id_rsa*` because job scripts refer to them.

use std::collections::BTreeMap;
use std::fmt;

use volcano_api::batch::Job;
use volcano_api::k8s_openapi::ByteString;
use volcano_api::k8s_openapi::api::core::v1::{
    KeyToPath, Pod, Secret, SecretVolumeSource, Volume, VolumeMount,
};

use super::flags::{Arity, Flags};
use super::{
    JobPlugin, PluginError, forget, is_recorded, job_name, job_namespace, mount_everywhere,
    owned_meta, record, task_hosts,
};
use crate::change::{Change, Owned};

const NAME: &str = "ssh";
const DEFAULT_PORT: u16 = 22;
const ROOT_SSH_DIR: &str = "/root/.ssh";
/// The directory inside the volume; mounting it by sub-path keeps the rest of the
/// mount point's parent untouched.
const SUB_PATH: &str = ".ssh";

const PRIVATE_KEY: &str = "id_rsa";
const PUBLIC_KEY: &str = "id_rsa.pub";
const AUTHORIZED_KEYS: &str = "authorized_keys";
const CONFIG: &str = "config";

/// OpenSSH rejects a group- or world-readable private key only when the user owns it. Secret
/// files belong to root, so root gets 0600, and any other user needs 0644 to read them at all.
const ROOT_MODE: i32 = 0o600;
const NON_ROOT_MODE: i32 = 0o644;

const FLAGS: &[(&str, Arity)] = &[
    ("ssh-key-file-path", Arity::Value),
    ("ssh-private-key", Arity::Value),
    ("ssh-public-key", Arity::Value),
    ("ssh-port", Arity::Value),
];

/// An SSH key pair in the formats OpenSSH reads from `~/.ssh`.
#[derive(Clone, PartialEq, Eq)]
pub struct SshKeyPair {
    /// The private key, PEM-encoded (`-----BEGIN ... PRIVATE KEY-----`).
    pub private_key_pem: String,
    /// The public key as one `authorized_keys` line (`ssh-ed25519 AAAA... comment`).
    pub public_key_openssh: String,
}

impl fmt::Debug for SshKeyPair {
    // Kept out of logs and test failure output: the private half is a secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SshKeyPair")
            .field("private_key_pem", &"<redacted>")
            .field("public_key_openssh", &self.public_key_openssh)
            .finish()
    }
}

/// Where the `ssh` plugin gets a fresh key pair for a job that brings none.
pub trait SshKeySource: Send {
    /// A key pair for `job`; called once per job, when its Secret is first made.
    fn key_pair(&self, job: &Job) -> Result<SshKeyPair, PluginError>;
}

/// Deterministic stand-ins for the simulator and tests. NOT keys: the text is public, the same
/// on every run, and no SSH implementation accepts it. A real cluster needs a real generator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlaceholderSshKeys;

impl SshKeySource for PlaceholderSshKeys {
    fn key_pair(&self, job: &Job) -> Result<SshKeyPair, PluginError> {
        let id = format!("{}/{}", job_namespace(job), job_name(job));
        Ok(SshKeyPair {
            private_key_pem: format!(
                "-----BEGIN VOLCANO-RS PLACEHOLDER KEY-----\n\
                 not a private key: stand-in for job {id}\n\
                 -----END VOLCANO-RS PLACEHOLDER KEY-----\n"
            ),
            public_key_openssh: format!("volcano-rs-placeholder-not-a-key {id}"),
        })
    }
}

/// The `ssh` plugin with its arguments and its key source.
pub struct SshPlugin<'a> {
    keys: &'a dyn SshKeySource,
    key_file_path: String,
    user_keys: Option<SshKeyPair>,
    port: u16,
}

impl<'a> SshPlugin<'a> {
    /// Parses `--ssh-key-file-path` (default `/root/.ssh`), `--ssh-private-key`,
    /// `--ssh-public-key` and `--ssh-port` (default 22); `keys` is used only when no private key
    /// is given.
    pub fn from_args(args: &[String], keys: &'a dyn SshKeySource) -> Result<Self, PluginError> {
        let flags = Flags::parse(NAME, args, FLAGS)?;
        let key_file_path = flags
            .text("ssh-key-file-path")
            .unwrap_or(ROOT_SSH_DIR)
            .to_string();
        let private = flags.text("ssh-private-key").filter(|k| !k.is_empty());
        let public = flags.text("ssh-public-key").unwrap_or_default();
        if private.is_none() && !public.is_empty() {
            // Volcano ignores a lone public key too: without its private half it is useless
            // for pod-to-pod SSH, so a key pair is generated instead.
            tracing::warn!("ssh plugin: --ssh-public-key without --ssh-private-key is ignored");
        }
        let user_keys = private.map(|private| SshKeyPair {
            private_key_pem: private.to_string(),
            public_key_openssh: public.to_string(),
        });
        let port = match flags.integer("ssh-port")? {
            None => DEFAULT_PORT,
            Some(p) => match u16::try_from(p) {
                Ok(p) if p > 0 => p,
                // Volcano falls back rather than failing the job, so a job it runs runs here.
                _ => {
                    tracing::warn!("ssh plugin: invalid --ssh-port {p}, using {DEFAULT_PORT}");
                    DEFAULT_PORT
                }
            },
        };
        Ok(SshPlugin {
            keys,
            key_file_path,
            user_keys,
            port,
        })
    }

    fn secret(&self, job: &Job) -> Result<Secret, PluginError> {
        let (private, public) = match &self.user_keys {
            // The user's text goes in exactly as given.
            Some(k) => (k.private_key_pem.clone(), k.public_key_openssh.clone()),
            None => {
                let k = self.keys.key_pair(job)?;
                let mut public = k.public_key_openssh;
                if !public.ends_with('\n') {
                    public.push('\n');
                }
                (k.private_key_pem, public)
            }
        };
        let bytes = |s: &str| ByteString(s.as_bytes().to_vec());
        let data = BTreeMap::from([
            (PRIVATE_KEY.to_string(), bytes(&private)),
            (PUBLIC_KEY.to_string(), bytes(&public)),
            (AUTHORIZED_KEYS.to_string(), bytes(&public)),
            (CONFIG.to_string(), bytes(&ssh_config(job, self.port))),
        ]);
        Ok(Secret {
            metadata: owned_meta(job, secret_name(job)),
            data: Some(data),
            ..Secret::default()
        })
    }
}

fn secret_name(job: &Job) -> String {
    format!("{}-{NAME}", job_name(job))
}

/// An ssh config naming every pod of the job. Host keys are not checked because a pod recreated
/// under the same name comes back with a new one.
fn ssh_config(job: &Job, port: u16) -> String {
    let mut config = String::from("StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n");
    for task in &job.spec.tasks {
        for host in task_hosts(job, task) {
            config.push_str(&format!(
                "Host {}\n  HostName {}\n  Port {port}\n",
                host.name, host.fqdn
            ));
        }
    }
    config
}

impl JobPlugin for SshPlugin<'_> {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_pod_create(&self, job: &Job, pod: &mut Pod) -> Result<(), PluginError> {
        let name = secret_name(job);
        let items = [PRIVATE_KEY, PUBLIC_KEY, AUTHORIZED_KEYS, CONFIG]
            .into_iter()
            .map(|key| KeyToPath {
                key: key.to_string(),
                path: format!("{SUB_PATH}/{key}"),
                mode: None,
            })
            .collect();
        let mode = if self.key_file_path == ROOT_SSH_DIR {
            ROOT_MODE
        } else {
            NON_ROOT_MODE
        };
        let volume = Volume {
            name: name.clone(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(name.clone()),
                items: Some(items),
                default_mode: Some(mode),
                optional: None,
            }),
            ..Volume::default()
        };
        let mount = VolumeMount {
            name,
            mount_path: self.key_file_path.clone(),
            sub_path: Some(SUB_PATH.to_string()),
            ..VolumeMount::default()
        };
        mount_everywhere(pod, volume, &mount);
        Ok(())
    }

    fn on_job_add(
        &self,
        job: &Job,
        controlled: &mut BTreeMap<String, String>,
    ) -> Result<Vec<Change>, PluginError> {
        if is_recorded(controlled, NAME) {
            return Ok(Vec::new());
        }
        let secret = self.secret(job)?;
        record(controlled, NAME);
        Ok(vec![Change::Create(Box::new(Owned::Secret(secret)))])
    }

    fn on_job_update(&self, _job: &Job) -> Result<Vec<Change>, PluginError> {
        // Volcano leaves the Secret alone after creation: files mounted by sub-path never see
        // updates, so a new host list would not reach the pods (volcano-sh/volcano#1420).
        Ok(Vec::new())
    }

    fn on_job_delete(
        &self,
        job: &Job,
        controlled: &mut BTreeMap<String, String>,
    ) -> Result<Vec<Change>, PluginError> {
        if !is_recorded(controlled, NAME) {
            return Ok(Vec::new());
        }
        forget(controlled, NAME);
        Ok(vec![Change::Delete {
            kind: "Secret",
            namespace: job_namespace(job).to_string(),
            name: secret_name(job),
        }])
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::super::testing::{containers, job, pod};
    use super::*;

    /// Counts calls, so a test can tell whether the plugin asked for a key.
    #[derive(Default)]
    struct Counting(Cell<u32>);

    impl SshKeySource for Counting {
        fn key_pair(&self, job: &Job) -> Result<SshKeyPair, PluginError> {
            self.0.set(self.0.get() + 1);
            PlaceholderSshKeys.key_pair(job)
        }
    }

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| a.to_string()).collect()
    }

    fn secret_data(changes: &[Change]) -> BTreeMap<String, String> {
        let Some(Change::Create(owned)) = changes.first() else {
            panic!("expected one Create, got {changes:?}")
        };
        let Owned::Secret(secret) = owned.as_ref() else {
            panic!("not a Secret")
        };
        assert_eq!(secret.metadata.name.as_deref(), Some("mpi-ssh"));
        secret
            .data
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), String::from_utf8_lossy(&v.0).into_owned()))
            .collect()
    }

    #[test]
    fn job_add_makes_a_secret_with_keys_and_config() {
        let j = job("ns", "mpi").task("master", 1).task("worker", 2).build();
        let keys = Counting::default();
        let plugin = SshPlugin::from_args(&[], &keys).unwrap();
        let mut controlled = BTreeMap::new();
        let data = secret_data(&plugin.on_job_add(&j, &mut controlled).unwrap());

        assert_eq!(keys.0.get(), 1);
        assert_eq!(
            controlled.get("plugin-ssh").map(String::as_str),
            Some("ssh")
        );
        let names: Vec<_> = data.keys().map(String::as_str).collect();
        assert_eq!(names, ["authorized_keys", "config", "id_rsa", "id_rsa.pub"]);
        assert!(data["id_rsa"].contains("PLACEHOLDER"));
        assert_eq!(
            data["id_rsa.pub"],
            "volcano-rs-placeholder-not-a-key ns/mpi\n"
        );
        assert_eq!(data["authorized_keys"], data["id_rsa.pub"]);
        assert_eq!(
            data["config"],
            "StrictHostKeyChecking no\n\
             UserKnownHostsFile /dev/null\n\
             Host mpi-master-0\n  HostName mpi-master-0.mpi\n  Port 22\n\
             Host mpi-worker-0\n  HostName mpi-worker-0.mpi\n  Port 22\n\
             Host mpi-worker-1\n  HostName mpi-worker-1.mpi\n  Port 22\n"
        );

        let again = plugin.on_job_add(&j, &mut controlled).unwrap();
        assert!(again.is_empty(), "a recorded job gets no second secret");
        assert_eq!(keys.0.get(), 1);
    }

    #[test]
    fn user_keys_are_used_as_given_and_no_key_is_generated() {
        let j = job("ns", "mpi").task("worker", 1).build();
        let keys = Counting::default();
        let a = args(&[
            "--ssh-private-key=PRIVATE",
            "--ssh-public-key",
            "ssh-ed25519 AAAA me",
            "--ssh-port=2222",
        ]);
        let plugin = SshPlugin::from_args(&a, &keys).unwrap();
        let data = secret_data(&plugin.on_job_add(&j, &mut BTreeMap::new()).unwrap());
        assert_eq!(keys.0.get(), 0);
        assert_eq!(data["id_rsa"], "PRIVATE");
        assert_eq!(data["id_rsa.pub"], "ssh-ed25519 AAAA me");
        assert_eq!(data["authorized_keys"], "ssh-ed25519 AAAA me");
        assert!(
            data["config"]
                .ends_with("Host mpi-worker-0\n  HostName mpi-worker-0.mpi\n  Port 2222\n")
        );
    }

    #[test]
    fn a_key_source_failure_fails_the_add_and_records_nothing() {
        struct Broken;
        impl SshKeySource for Broken {
            fn key_pair(&self, _job: &Job) -> Result<SshKeyPair, PluginError> {
                Err(PluginError::new(NAME, "no entropy"))
            }
        }
        let j = job("ns", "mpi").task("worker", 1).build();
        let plugin = SshPlugin::from_args(&[], &Broken).unwrap();
        let mut controlled = BTreeMap::new();
        let err = plugin.on_job_add(&j, &mut controlled).err();
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some("job plugin ssh: no entropy")
        );
        assert!(controlled.is_empty());
    }

    #[test]
    fn ports_out_of_range_fall_back_to_22_and_words_are_refused() {
        let keys = PlaceholderSshKeys;
        for bad in ["0", "-1", "65536"] {
            let plugin = SshPlugin::from_args(&args(&["--ssh-port", bad]), &keys).unwrap();
            assert_eq!(plugin.port, 22, "--ssh-port {bad}");
        }
        let err = SshPlugin::from_args(&args(&["--ssh-port=ssh"]), &keys).err();
        assert_eq!(
            err.map(|e| e.message).as_deref(),
            Some("flag --ssh-port wants an integer, not \"ssh\"")
        );
        let err = SshPlugin::from_args(&args(&["--ssh-key-path=/x"]), &keys).err();
        assert!(err.is_some_and(|e| e.message.starts_with("unknown flag --ssh-key-path;")));
    }

    #[test]
    fn pods_mount_the_keys_at_root_ssh_private_to_root() {
        let j = job("ns", "mpi").task("worker", 1).build();
        let mut p = pod(&j, "worker", 0);
        let plugin = SshPlugin::from_args(&[], &PlaceholderSshKeys).unwrap();
        plugin.on_pod_create(&j, &mut p).unwrap();

        let volumes = p.spec.as_ref().and_then(|s| s.volumes.clone()).unwrap();
        assert_eq!(volumes.len(), 1);
        assert_eq!(volumes[0].name, "mpi-ssh");
        let source = volumes[0].secret.clone().unwrap();
        assert_eq!(source.secret_name.as_deref(), Some("mpi-ssh"));
        assert_eq!(source.default_mode, Some(0o600));
        let paths: Vec<_> = source
            .items
            .unwrap()
            .into_iter()
            .map(|i| (i.key, i.path))
            .collect();
        let expect = |k: &str| (k.to_string(), format!(".ssh/{k}"));
        assert_eq!(
            paths,
            vec![
                expect("id_rsa"),
                expect("id_rsa.pub"),
                expect("authorized_keys"),
                expect("config")
            ]
        );
        for c in containers(&p) {
            let mounts = c.volume_mounts.clone().unwrap();
            assert_eq!(mounts.len(), 1, "{}", c.name);
            assert_eq!(mounts[0].mount_path, "/root/.ssh");
            assert_eq!(mounts[0].sub_path.as_deref(), Some(".ssh"));
        }
    }

    #[test]
    fn another_key_path_is_readable_by_non_root_users() {
        let j = job("ns", "mpi").task("worker", 1).build();
        let mut p = pod(&j, "worker", 0);
        let a = args(&["--ssh-key-file-path=/home/mpi/.ssh"]);
        let plugin = SshPlugin::from_args(&a, &PlaceholderSshKeys).unwrap();
        plugin.on_pod_create(&j, &mut p).unwrap();
        let spec = p.spec.unwrap();
        let mode = spec.volumes.unwrap()[0]
            .secret
            .as_ref()
            .unwrap()
            .default_mode;
        assert_eq!(mode, Some(0o644));
        assert_eq!(
            spec.containers[0].volume_mounts.as_ref().unwrap()[0].mount_path,
            "/home/mpi/.ssh"
        );
    }

    #[test]
    fn job_delete_removes_the_secret_once() {
        let j = job("ns", "mpi").task("worker", 1).build();
        let plugin = SshPlugin::from_args(&[], &PlaceholderSshKeys).unwrap();
        let mut controlled = BTreeMap::new();
        plugin.on_job_add(&j, &mut controlled).unwrap();
        let changes = plugin.on_job_delete(&j, &mut controlled).unwrap();
        assert!(matches!(
            changes.as_slice(),
            [Change::Delete { kind: "Secret", namespace, name }] if namespace == "ns" && name == "mpi-ssh"
        ));
        assert!(controlled.is_empty());
        assert!(
            plugin
                .on_job_delete(&j, &mut controlled)
                .unwrap()
                .is_empty()
        );
        assert!(plugin.on_job_update(&j).unwrap().is_empty());
    }

    #[test]
    fn debug_output_hides_the_private_key() {
        let pair = PlaceholderSshKeys
            .key_pair(&job("ns", "mpi").build())
            .unwrap();
        let shown = format!("{pair:?}");
        assert!(!shown.contains("PLACEHOLDER KEY"), "{shown}");
        assert!(shown.contains("<redacted>"));
    }
}
