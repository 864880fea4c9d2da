//! The `svc` plugin: gives every pod of a job a stable DNS name and tells each pod where the
//! others are.
//!
//! Each pod gets `hostname` = its own name and `subdomain` = the job name; a headless Service
//! named after the job turns that into `<pod>.<job>` in DNS. A ConfigMap `<job>-svc`, mounted at
//! `/etc/volcano`, lists each task's hosts (`<task>.host`, one per line) and carries
//! `VC_<TASK>_HOSTS` (comma-separated) and `VC_<TASK>_NUM`, which are also injected as
//! environment. A NetworkPolicy lets only the job's own pods reach them.

use std::collections::BTreeMap;

use volcano_api::batch::Job;
use volcano_api::k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapKeySelector, ConfigMapVolumeSource, EnvVar, EnvVarSource, Pod, Service,
    ServiceSpec, Volume, VolumeMount,
};
use volcano_api::k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicySpec,
};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::flags::{Arity, Flags};
use super::{
    JobPlugin, PluginError, forget, is_recorded, job_name, job_namespace, job_pod_labels,
    mount_everywhere, owned_meta, pod_spec, record, task_hosts,
};
use crate::change::{Change, Owned};

const NAME: &str = "svc";
const MOUNT_PATH: &str = "/etc/volcano";

const FLAGS: &[(&str, Arity)] = &[
    ("publish-not-ready-addresses", Arity::Switch),
    ("disable-network-policy", Arity::Switch),
    ("inject-hosts-env", Arity::Switch),
];

/// The `svc` plugin with its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SvcPlugin {
    publish_not_ready_addresses: bool,
    disable_network_policy: bool,
    inject_hosts_env: bool,
}

impl SvcPlugin {
    /// Parses `--publish-not-ready-addresses` (default false), `--disable-network-policy`
    /// (default false) and `--inject-hosts-env` (default true).
    pub fn from_args(args: &[String]) -> Result<Self, PluginError> {
        let flags = Flags::parse(NAME, args, FLAGS)?;
        Ok(SvcPlugin {
            publish_not_ready_addresses: flags.switch("publish-not-ready-addresses", false)?,
            disable_network_policy: flags.switch("disable-network-policy", false)?,
            inject_hosts_env: flags.switch("inject-hosts-env", true)?,
        })
    }

    fn config_map(&self, job: &Job) -> ConfigMap {
        ConfigMap {
            metadata: owned_meta(job, config_map_name(job)),
            data: Some(host_file(job)),
            ..ConfigMap::default()
        }
    }

    fn service(&self, job: &Job) -> Service {
        Service {
            metadata: owned_meta(job, job_name(job).to_string()),
            spec: Some(ServiceSpec {
                // Headless: DNS answers with the pods' own addresses, one record per hostname.
                cluster_ip: Some("None".to_string()),
                selector: Some(job_pod_labels(job)),
                publish_not_ready_addresses: Some(self.publish_not_ready_addresses),
                ..ServiceSpec::default()
            }),
            status: None,
        }
    }

    fn network_policy(&self, job: &Job) -> NetworkPolicy {
        let job_pods = LabelSelector {
            match_labels: Some(job_pod_labels(job)),
            match_expressions: None,
        };
        NetworkPolicy {
            metadata: owned_meta(job, job_name(job).to_string()),
            spec: Some(NetworkPolicySpec {
                pod_selector: Some(job_pods.clone()),
                ingress: Some(vec![NetworkPolicyIngressRule {
                    from: Some(vec![NetworkPolicyPeer {
                        pod_selector: Some(job_pods),
                        ..NetworkPolicyPeer::default()
                    }]),
                    ports: None,
                }]),
                policy_types: Some(vec!["Ingress".to_string()]),
                egress: None,
            }),
        }
    }
}

fn config_map_name(job: &Job) -> String {
    format!("{}-{NAME}", job_name(job))
}

/// A task name as it appears in keys: `-` is not allowed in environment variable names.
fn key_part(task: &str) -> String {
    task.replace('-', "_")
}

fn hosts_env(task: &str) -> String {
    format!("VC_{}_HOSTS", key_part(task).to_uppercase())
}

fn num_env(task: &str) -> String {
    format!("VC_{}_NUM", key_part(task).to_uppercase())
}

/// The ConfigMap data: per task, the host list as a file and as environment values.
fn host_file(job: &Job) -> BTreeMap<String, String> {
    let mut data = BTreeMap::new();
    for task in &job.spec.tasks {
        let hosts: Vec<String> = task_hosts(job, task).into_iter().map(|h| h.fqdn).collect();
        data.insert(format!("{}.host", key_part(&task.name)), hosts.join("\n"));
        data.insert(hosts_env(&task.name), hosts.join(","));
        data.insert(num_env(&task.name), hosts.len().to_string());
    }
    data
}

impl JobPlugin for SvcPlugin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_pod_create(&self, job: &Job, pod: &mut Pod) -> Result<(), PluginError> {
        let pod_name = pod.metadata.name.clone().unwrap_or_default();
        let spec = pod_spec(pod);
        // A template that chose its own names keeps them; the host lists follow the template.
        if spec.hostname.as_deref().is_none_or(str::is_empty) {
            spec.hostname = Some(pod_name);
        }
        if spec.subdomain.as_deref().is_none_or(str::is_empty) {
            spec.subdomain = Some(job_name(job).to_string());
        }

        let cm_name = config_map_name(job);
        // The flag exists because a job with many tasks can exceed the environment size limit;
        // the values are references so that they follow the ConfigMap.
        if self.inject_hosts_env {
            let env: Vec<EnvVar> = job
                .spec
                .tasks
                .iter()
                .flat_map(|t| [hosts_env(&t.name), num_env(&t.name)])
                .map(|key| EnvVar {
                    name: key.clone(),
                    value: None,
                    value_from: Some(EnvVarSource {
                        config_map_key_ref: Some(ConfigMapKeySelector {
                            key,
                            name: cm_name.clone(),
                            optional: None,
                        }),
                        ..EnvVarSource::default()
                    }),
                })
                .collect();
            let inits = spec.init_containers.iter_mut().flatten();
            for container in spec.containers.iter_mut().chain(inits) {
                container
                    .env
                    .get_or_insert_with(Vec::new)
                    .extend(env.iter().cloned());
            }
        }

        let volume = Volume {
            name: cm_name.clone(),
            config_map: Some(ConfigMapVolumeSource {
                name: cm_name.clone(),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        };
        let mount = VolumeMount {
            name: cm_name,
            mount_path: MOUNT_PATH.to_string(),
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
        let mut changes = vec![
            Change::Create(Box::new(Owned::ConfigMap(self.config_map(job)))),
            Change::Create(Box::new(Owned::Service(self.service(job)))),
        ];
        if !self.disable_network_policy {
            changes.push(Change::Create(Box::new(Owned::NetworkPolicy(
                self.network_policy(job),
            ))));
        }
        record(controlled, NAME);
        Ok(changes)
    }

    fn on_job_update(&self, job: &Job) -> Result<Vec<Change>, PluginError> {
        // Replicas may have changed; the host lists must follow. Writing the same data again
        // is harmless, and the caller may skip a write that changes nothing.
        Ok(vec![Change::Update(Box::new(Owned::ConfigMap(
            self.config_map(job),
        )))])
    }

    fn on_job_delete(
        &self,
        job: &Job,
        controlled: &mut BTreeMap<String, String>,
    ) -> Result<Vec<Change>, PluginError> {
        if !is_recorded(controlled, NAME) {
            return Ok(Vec::new());
        }
        let delete = |kind: &'static str, name: String| Change::Delete {
            kind,
            namespace: job_namespace(job).to_string(),
            name,
        };
        let mut changes = vec![
            delete("ConfigMap", config_map_name(job)),
            delete("Service", job_name(job).to_string()),
        ];
        if !self.disable_network_policy {
            changes.push(delete("NetworkPolicy", job_name(job).to_string()));
        }
        forget(controlled, NAME);
        Ok(changes)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{containers, job, pod};
    use super::*;

    fn svc(args: &[&str]) -> SvcPlugin {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        SvcPlugin::from_args(&args).unwrap_or_else(|e| panic!("{e}"))
    }

    fn created(changes: &[Change]) -> Vec<&Owned> {
        changes
            .iter()
            .filter_map(|c| match c {
                Change::Create(o) => Some(o.as_ref()),
                _ => None,
            })
            .collect()
    }

    fn added(plugin: &SvcPlugin, job: &Job) -> (Vec<Change>, BTreeMap<String, String>) {
        let mut controlled = BTreeMap::new();
        let changes = plugin.on_job_add(job, &mut controlled).unwrap();
        (changes, controlled)
    }

    #[test]
    fn flags_default_like_volcano() {
        assert_eq!(
            svc(&[]),
            SvcPlugin {
                publish_not_ready_addresses: false,
                disable_network_policy: false,
                inject_hosts_env: true,
            }
        );
        assert_eq!(
            svc(&[
                "--publish-not-ready-addresses",
                "--disable-network-policy=true",
                "--inject-hosts-env=false"
            ]),
            SvcPlugin {
                publish_not_ready_addresses: true,
                disable_network_policy: true,
                inject_hosts_env: false,
            }
        );
    }

    #[test]
    fn unknown_flag_is_named() {
        let err = SvcPlugin::from_args(&["--publish-not-ready".to_string()])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.starts_with("job plugin svc: unknown flag --publish-not-ready;"),
            "{err}"
        );
    }

    #[test]
    fn pods_get_hostname_subdomain_and_host_lists() {
        let j = job("ns", "tf").task("ps", 1).task("work-er", 2).build();
        let mut p = pod(&j, "work-er", 1);
        svc(&[]).on_pod_create(&j, &mut p).unwrap();

        let spec = p.spec.clone().unwrap_or_default();
        assert_eq!(spec.hostname.as_deref(), Some("tf-work-er-1"));
        assert_eq!(spec.subdomain.as_deref(), Some("tf"));
        let volumes = spec.volumes.unwrap_or_default();
        assert_eq!(volumes.len(), 1);
        assert_eq!(volumes[0].name, "tf-svc");
        assert_eq!(
            volumes[0].config_map.as_ref().map(|c| c.name.as_str()),
            Some("tf-svc")
        );

        let all = containers(&p);
        assert_eq!(all.len(), 2, "main container and init container");
        for c in all {
            let mounts = c.volume_mounts.clone().unwrap_or_default();
            assert_eq!(mounts.len(), 1);
            assert_eq!(
                (mounts[0].name.as_str(), mounts[0].mount_path.as_str()),
                ("tf-svc", "/etc/volcano")
            );
            let env: Vec<(String, String, String)> = c
                .env
                .iter()
                .flatten()
                .filter_map(|e| {
                    let r = e.value_from.as_ref()?.config_map_key_ref.as_ref()?;
                    Some((e.name.clone(), r.name.clone(), r.key.clone()))
                })
                .collect();
            let expect = |k: &str| (k.to_string(), "tf-svc".to_string(), k.to_string());
            assert_eq!(
                env,
                vec![
                    expect("VC_PS_HOSTS"),
                    expect("VC_PS_NUM"),
                    expect("VC_WORK_ER_HOSTS"),
                    expect("VC_WORK_ER_NUM"),
                ]
            );
        }
    }

    #[test]
    fn names_chosen_by_the_template_are_kept() {
        let j = job("ns", "tf").task("ps", 1).build();
        let mut p = pod(&j, "ps", 0);
        if let Some(spec) = p.spec.as_mut() {
            spec.hostname = Some("mine".into());
            spec.subdomain = Some("elsewhere".into());
        }
        svc(&[]).on_pod_create(&j, &mut p).unwrap();
        let spec = p.spec.unwrap_or_default();
        assert_eq!(spec.hostname.as_deref(), Some("mine"));
        assert_eq!(spec.subdomain.as_deref(), Some("elsewhere"));
    }

    #[test]
    fn hosts_env_can_be_turned_off() {
        let j = job("ns", "tf").task("ps", 1).build();
        let mut p = pod(&j, "ps", 0);
        svc(&["--inject-hosts-env=false"])
            .on_pod_create(&j, &mut p)
            .unwrap();
        assert!(containers(&p).iter().all(|c| c.env.is_none()));
        assert!(
            containers(&p).iter().all(|c| c.volume_mounts.is_some()),
            "the host files are still mounted"
        );
    }

    #[test]
    fn job_add_creates_host_lists_service_and_network_policy() {
        let j = job("ns", "tf")
            .task("ps", 2)
            .task("work-er", 3)
            .task("chief", 2)
            .task_hostname("chief", "boss", "lead")
            .build();
        let (changes, controlled) = added(&svc(&[]), &j);
        assert_eq!(
            controlled.get("plugin-svc").map(String::as_str),
            Some("svc")
        );
        let objects = created(&changes);
        let kinds: Vec<_> = objects.iter().map(|o| o.kind()).collect();
        assert_eq!(kinds, vec!["ConfigMap", "Service", "NetworkPolicy"]);

        let Owned::ConfigMap(cm) = objects[0] else {
            panic!("not a ConfigMap")
        };
        assert_eq!(cm.metadata.name.as_deref(), Some("tf-svc"));
        let data = cm.data.clone().unwrap_or_default();
        let expected: BTreeMap<String, String> = [
            ("ps.host", "tf-ps-0.tf\ntf-ps-1.tf"),
            ("VC_PS_HOSTS", "tf-ps-0.tf,tf-ps-1.tf"),
            ("VC_PS_NUM", "2"),
            (
                "work_er.host",
                "tf-work-er-0.tf\ntf-work-er-1.tf\ntf-work-er-2.tf",
            ),
            (
                "VC_WORK_ER_HOSTS",
                "tf-work-er-0.tf,tf-work-er-1.tf,tf-work-er-2.tf",
            ),
            ("VC_WORK_ER_NUM", "3"),
            ("chief.host", "boss.lead"),
            ("VC_CHIEF_HOSTS", "boss.lead"),
            ("VC_CHIEF_NUM", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(data, expected);

        let Owned::Service(service) = objects[1] else {
            panic!("not a Service")
        };
        assert_eq!(service.metadata.name.as_deref(), Some("tf"));
        assert_eq!(service.metadata.namespace.as_deref(), Some("ns"));
        let spec = service.spec.clone().unwrap_or_default();
        assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
        assert_eq!(spec.publish_not_ready_addresses, Some(false));
        assert_eq!(spec.ports, None, "Volcano's Service declares no ports");
        let selector: Vec<_> = spec.selector.unwrap_or_default().into_iter().collect();
        assert_eq!(
            selector,
            vec![
                ("volcano.sh/job-name".to_string(), "tf".to_string()),
                ("volcano.sh/job-namespace".to_string(), "ns".to_string()),
            ]
        );

        let Owned::NetworkPolicy(np) = objects[2] else {
            panic!("not a NetworkPolicy")
        };
        let spec = np.spec.clone().unwrap_or_default();
        let own_pods = spec.pod_selector.and_then(|s| s.match_labels);
        let from = spec
            .ingress
            .unwrap_or_default()
            .into_iter()
            .flat_map(|r| r.from.unwrap_or_default())
            .map(|peer| peer.pod_selector.and_then(|s| s.match_labels))
            .collect::<Vec<_>>();
        assert_eq!(from, vec![own_pods.clone()], "only the job's pods get in");
        assert_eq!(own_pods, Some(job_pod_labels(&j)));
        assert_eq!(spec.policy_types, Some(vec!["Ingress".to_string()]));

        for o in objects {
            let owners = match o {
                Owned::ConfigMap(x) => x.metadata.owner_references.clone(),
                Owned::Service(x) => x.metadata.owner_references.clone(),
                Owned::NetworkPolicy(x) => x.metadata.owner_references.clone(),
                _ => None,
            };
            let owner = owners.unwrap_or_default().into_iter().next();
            assert_eq!(
                owner.map(|r| (r.kind, r.name)),
                Some(("Job".into(), "tf".into()))
            );
        }
    }

    #[test]
    fn job_add_respects_its_arguments() {
        let j = job("ns", "tf").task("ps", 1).build();
        let (changes, _) = added(
            &svc(&["--disable-network-policy", "--publish-not-ready-addresses"]),
            &j,
        );
        let objects = created(&changes);
        assert!(objects.iter().all(|o| o.kind() != "NetworkPolicy"));
        let published = objects.iter().find_map(|o| match o {
            Owned::Service(s) => s.spec.as_ref()?.publish_not_ready_addresses,
            _ => None,
        });
        assert_eq!(published, Some(true));
    }

    #[test]
    fn job_add_once_recorded_does_nothing() {
        let j = job("ns", "tf").task("ps", 1).build();
        let mut controlled = BTreeMap::from([("plugin-svc".to_string(), "svc".to_string())]);
        let changes = svc(&[]).on_job_add(&j, &mut controlled);
        assert!(changes.is_ok_and(|c| c.is_empty()));
    }

    #[test]
    fn job_update_rewrites_the_host_lists() {
        let j = job("ns", "tf").task("ps", 3).build();
        let changes = svc(&[]).on_job_update(&j).unwrap();
        assert_eq!(changes.len(), 1);
        let Change::Update(owned) = &changes[0] else {
            panic!("expected an update, got {:?}", changes[0])
        };
        let Owned::ConfigMap(cm) = owned.as_ref() else {
            panic!("not a ConfigMap")
        };
        let num = cm.data.as_ref().and_then(|d| d.get("VC_PS_NUM")).cloned();
        assert_eq!(num.as_deref(), Some("3"));
    }

    #[test]
    fn job_delete_removes_what_add_made() {
        let j = job("ns", "tf").task("ps", 1).build();
        let plugin = svc(&[]);
        let (_, mut controlled) = added(&plugin, &j);
        let changes = plugin.on_job_delete(&j, &mut controlled).unwrap();
        let deleted: Vec<_> = changes
            .iter()
            .filter_map(|c| match c {
                Change::Delete {
                    kind,
                    namespace,
                    name,
                } => Some(format!("{kind} {namespace}/{name}")),
                _ => None,
            })
            .collect();
        assert_eq!(
            deleted,
            vec![
                "ConfigMap ns/tf-svc",
                "Service ns/tf",
                "NetworkPolicy ns/tf"
            ]
        );
        assert!(controlled.is_empty());
        let again = plugin.on_job_delete(&j, &mut controlled);
        assert!(again.is_ok_and(|c| c.is_empty()), "deletes only once");
    }
}
