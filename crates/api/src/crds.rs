//! The CustomResourceDefinitions of Volcano's kinds, as a cluster running Volcano has them: same
//! names, scope, short names, printer columns and subresources, and schemas that accept every
//! field Volcano's accept (the API server prunes what a schema does not name, so a narrower
//! schema would silently lose users' data, including data already stored).
//!
//! The schemas come from the Rust types (kube's derive and schemars); this module adds what the
//! derive cannot say and removes what it says wrongly for Volcano. Known, deliberate differences
//! from Volcano's CRDs are listed in `deploy/README.md`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionNames, CustomResourceDefinitionSpec,
    CustomResourceDefinitionVersion, CustomResourceValidation,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::CustomResourceExt;
use serde_json::{Map, Value, json};
use thiserror::Error;

use crate::batch::Job;
use crate::bus::Command;
use crate::cronjob::CronJob;
use crate::flow::{JobFlow, JobTemplate};
use crate::scheduling::{PodGroup, Queue};
use crate::topology::HyperNode;

/// Why the CRDs could not be built or rendered.
#[derive(Debug, Error)]
pub enum CrdError {
    /// A schema edit produced something that is no longer a CRD (a bug in this module).
    #[error("building the CRD {name}: {message}")]
    Build {
        /// The CRD's name.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// The CRDs could not be written as YAML or JSON.
    #[error("rendering the CRD {name}: {message}")]
    Render {
        /// The CRD's name.
        name: String,
        /// What went wrong.
        message: String,
    },
}

/// The CRDs of Job, PodGroup, Queue, Command, CronJob, JobFlow, JobTemplate and HyperNode, in
/// that order.
pub fn crds() -> Result<Vec<CustomResourceDefinition>, CrdError> {
    Ok(vec![
        job()?,
        pod_group()?,
        queue()?,
        command()?,
        cron_job()?,
        job_flow()?,
        job_template()?,
        hyper_node()?,
    ])
}

/// The CRDs as one multi-document YAML text (`---` between documents), ready for `kubectl apply`.
pub fn crds_yaml() -> Result<String, CrdError> {
    let mut out = String::new();
    for crd in crds()? {
        let text = serde_yaml_ng::to_string(&crd).map_err(|e| CrdError::Render {
            name: crd.metadata.name.clone().unwrap_or_default(),
            message: e.to_string(),
        })?;
        if !out.is_empty() {
            out.push_str("---\n");
        }
        out.push_str(&text);
    }
    Ok(out)
}

/// The CRDs as one JSON `List`, a form `kubectl apply -f` takes for several objects.
pub fn crds_json() -> Result<String, CrdError> {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": crds()?});
    serde_json::to_string_pretty(&list).map_err(|e| CrdError::Render {
        name: "List".to_string(),
        message: e.to_string(),
    })
}

/// Defaults the API server fills in, as Volcano's CRDs declare them: `(path, value)`, the path
/// in property names with `[]` for array items.
fn volcano_defaults(kind: &str) -> Vec<(&'static [&'static str], Value)> {
    match kind {
        "Job" => vec![
            (&["spec", "maxRetry"], json!(3)),
            (&["spec", "queue"], json!("default")),
            (&["spec", "networkTopology", "mode"], json!("hard")),
            (
                &["spec", "tasks", "[]", "partitionPolicy", "minPartitions"],
                json!(0),
            ),
            (
                &[
                    "spec",
                    "tasks",
                    "[]",
                    "partitionPolicy",
                    "networkTopology",
                    "mode",
                ],
                json!("hard"),
            ),
        ],
        "PodGroup" => vec![
            (&["spec", "queue"], json!("default")),
            (&["spec", "networkTopology", "mode"], json!("hard")),
            (&["spec", "subGroupPolicy", "[]", "minSubGroups"], json!(0)),
            (&["spec", "subGroupPolicy", "[]", "subGroupSize"], json!(1)),
            (
                &["spec", "subGroupPolicy", "[]", "networkTopology", "mode"],
                json!("hard"),
            ),
        ],
        "Queue" => vec![
            (&["spec", "weight"], json!(1)),
            (&["spec", "dequeueStrategy"], json!("traverse")),
        ],
        "CronJob" => vec![
            (&["spec", "concurrencyPolicy"], json!("Allow")),
            (&["spec", "suspend"], json!(false)),
            (&["spec", "successfulJobsHistoryLimit"], json!(3)),
            (&["spec", "failedJobsHistoryLimit"], json!(1)),
            (&["spec", "jobTemplate", "spec", "maxRetry"], json!(3)),
            (&["spec", "jobTemplate", "spec", "queue"], json!("default")),
        ],
        _ => Vec::new(),
    }
}

fn job() -> Result<CustomResourceDefinition, CrdError> {
    finish(Job::crd(), "JobList", |schema| {
        let template = ["spec", "tasks", "[]", "template"];
        if let Some(t) = at_path(schema, &template) {
            // The pod template's schema carries the documentation of every Kubernetes pod
            // field; with it the CRD would outgrow the 256 KiB a client-side `kubectl apply`
            // stores in its last-applied annotation. Volcano drops the descriptions of this
            // CRD for the same reason; we keep our own fields' and drop only the template's.
            visit(t, &mut |o| {
                o.remove("description");
            });
            // Our pod types are Kubernetes 1.33's; Volcano's schema knows newer pod fields
            // (`hostnameOverride`, `restartPolicyRules`, ...). Pruning them would lose users'
            // data, also from Jobs already stored when the CRD is swapped: keep unknown
            // fields anywhere in the template, while known ones are still validated.
            visit(t, &mut preserve_unknown_fields);
            visit(t, &mut optional_reference_name);
        }
    })
}

fn cron_job() -> Result<CustomResourceDefinition, CrdError> {
    finish(CronJob::crd(), "CronJobList", |schema| {
        let template = ["spec", "jobTemplate", "spec", "tasks", "[]", "template"];
        // The same pod template as a Job's, trimmed and kept open for the same reasons.
        if let Some(t) = at_path(schema, &template) {
            visit(t, &mut |o| {
                o.remove("description");
            });
            visit(t, &mut preserve_unknown_fields);
            visit(t, &mut optional_reference_name);
        }
        // The template's metadata: its documentation is Kubernetes', not ours.
        if let Some(meta) = at_path(schema, &["spec", "jobTemplate", "metadata"]) {
            visit(meta, &mut |o| {
                o.remove("description");
            });
        }
    })
}

fn pod_group() -> Result<CustomResourceDefinition, CrdError> {
    let mut crd = finish(PodGroup::crd(), "PodGroupList", |_| {})?;
    // Volcano's PodGroup has no status subresource: its scheduler writes status through the
    // object itself, and with a status subresource the API server would silently ignore every
    // status written that way. A cluster must see the same shape from either implementation.
    for v in &mut crd.spec.versions {
        v.subresources = None;
    }
    Ok(crd)
}

fn queue() -> Result<CustomResourceDefinition, CrdError> {
    finish(Queue::crd(), "QueueList", |_| {})
}

/// Command has no `spec`, so it is not derived with `CustomResource`: its CRD is assembled here,
/// its schema generated the way kube's derive generates one.
fn command() -> Result<CustomResourceDefinition, CrdError> {
    const NAME: &str = "commands.bus.volcano.sh";
    let generator = schemars::generate::SchemaSettings::openapi3()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .with_transform(schemars::transform::AddNullable::default())
        .with_transform(kube::core::schema::StructuralSchemaRewriter)
        .with_transform(kube::core::schema::OptionalEnum)
        .with_transform(kube::core::schema::OptionalIntOrString)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<Command>().to_value();
    if let Some(obj) = schema.as_object_mut() {
        obj.insert(
            "description".into(),
            "A Command: an action (AbortJob, ResumeJob, OpenQueue, ...) asked of a controller \
             about one object."
                .into(),
        );
    }
    // The target is replaced whole, never merged field by field (Volcano's OwnerReference
    // schema says so too), which matters to server-side apply.
    if let Some(Value::Object(target)) = at_path(&mut schema, &["target"]) {
        target.insert("x-kubernetes-map-type".into(), "atomic".into());
    }
    let schema = serde_json::from_value(schema).map_err(|e| CrdError::Build {
        name: NAME.to_string(),
        message: e.to_string(),
    })?;
    let crd = CustomResourceDefinition {
        metadata: ObjectMeta {
            name: Some(NAME.to_string()),
            ..ObjectMeta::default()
        },
        spec: CustomResourceDefinitionSpec {
            group: "bus.volcano.sh".to_string(),
            names: CustomResourceDefinitionNames {
                kind: "Command".to_string(),
                plural: "commands".to_string(),
                singular: Some("command".to_string()),
                ..CustomResourceDefinitionNames::default()
            },
            scope: "Namespaced".to_string(),
            versions: vec![CustomResourceDefinitionVersion {
                name: "v1alpha1".to_string(),
                served: true,
                storage: true,
                schema: Some(CustomResourceValidation {
                    open_api_v3_schema: Some(schema),
                }),
                ..CustomResourceDefinitionVersion::default()
            }],
            ..CustomResourceDefinitionSpec::default()
        },
        status: None,
    };
    finish(crd, "CommandList", |_| {})
}

fn job_flow() -> Result<CustomResourceDefinition, CrdError> {
    finish(JobFlow::crd(), "JobFlowList", |schema| {
        job_spec_as_volcano(schema, &["spec", "flows", "[]", "patch", "jobSpec"]);
    })
}

fn hyper_node() -> Result<CustomResourceDefinition, CrdError> {
    finish(HyperNode::crd(), "HyperNodeList", |_| {})
}

fn job_template() -> Result<CustomResourceDefinition, CrdError> {
    finish(JobTemplate::crd(), "JobTemplateList", |schema| {
        job_spec_as_volcano(schema, &["spec"]);
    })
}

/// A Job spec embedded elsewhere (a JobTemplate's spec, a flow's patch) gets what the Job's
/// own does: Volcano's defaults and a pod template that keeps unknown fields, without its
/// documentation (see [`job`]).
fn job_spec_as_volcano(schema: &mut Value, at: &[&str]) {
    for (path, default) in volcano_defaults("Job") {
        let Some(rest) = path.strip_prefix(&["spec"][..]) else {
            continue;
        };
        let full: Vec<&str> = at.iter().chain(rest).copied().collect();
        if let Some(Value::Object(field)) = at_path(schema, &full) {
            field.insert("default".into(), default);
        }
    }
    let template: Vec<&str> = at
        .iter()
        .chain(&["tasks", "[]", "template"])
        .copied()
        .collect();
    if let Some(t) = at_path(schema, &template) {
        visit(t, &mut |o| {
            o.remove("description");
        });
        visit(t, &mut preserve_unknown_fields);
        visit(t, &mut optional_reference_name);
    }
}

/// What every CRD gets: its list kind named (as Volcano's are), the root fields every object
/// has, schemars' defaults replaced by Volcano's, Quantity's documentation dropped, and then
/// `edit` applied to each version's schema.
///
/// schemars writes a `default` for every field with `#[serde(default)]`: the API server would
/// then store zero counts and empty lists into every object, which Volcano's CRDs never do. So
/// all of them go, and only the defaults Volcano declares are put back.
fn finish(
    mut crd: CustomResourceDefinition,
    list_kind: &str,
    edit: impl Fn(&mut Value),
) -> Result<CustomResourceDefinition, CrdError> {
    crd.spec.names.list_kind = Some(list_kind.to_string());
    let name = crd.metadata.name.clone().unwrap_or_default();
    let build = |e: serde_json::Error| CrdError::Build {
        name: name.clone(),
        message: e.to_string(),
    };
    for v in &mut crd.spec.versions {
        let Some(props) = v
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        else {
            continue;
        };
        let mut value = serde_json::to_value(&*props).map_err(build)?;
        if let Some(obj) = value.as_object_mut() {
            // schemars names the root after the Rust type; Volcano's schemas have no title.
            obj.remove("title");
        }
        if let Some(Value::Object(root)) = value.get_mut("properties") {
            root.entry("apiVersion")
                .or_insert_with(|| json!({"type": "string"}));
            root.entry("kind")
                .or_insert_with(|| json!({"type": "string"}));
            // The API server refuses a CRD whose root `metadata` says anything but its type
            // (a description included): metadata is its own to validate.
            root.insert("metadata".into(), json!({"type": "object"}));
        }
        visit(&mut value, &mut |o| {
            o.remove("default");
            // Quantity's long documentation, repeated at every resource list, says nothing a
            // reader of this CRD needs.
            if o.contains_key("x-kubernetes-int-or-string") {
                o.remove("description");
            }
        });
        for (path, default) in volcano_defaults(&crd.spec.names.kind) {
            let field = at_path(&mut value, path).ok_or_else(|| CrdError::Build {
                name: name.clone(),
                message: format!("no field {} to default", path.join(".")),
            })?;
            if let Value::Object(field) = field {
                field.insert("default".into(), default);
            }
        }
        edit(&mut value);
        *props = serde_json::from_value(value).map_err(build)?;
    }
    Ok(crd)
}

/// The direct sub-schemas of a schema object.
fn children(obj: &mut Map<String, Value>) -> Vec<&mut Value> {
    let mut out = Vec::new();
    for (key, value) in obj.iter_mut() {
        match (key.as_str(), value) {
            ("properties", Value::Object(props)) => out.extend(props.values_mut()),
            ("items" | "additionalProperties" | "not", v @ Value::Object(_)) => out.push(v),
            ("allOf" | "anyOf" | "oneOf", Value::Array(subs)) => out.extend(subs.iter_mut()),
            _ => {}
        }
    }
    out
}

/// The sub-schema at a path of property names, `[]` stepping into array items.
fn at_path<'a>(mut schema: &'a mut Value, path: &[&str]) -> Option<&'a mut Value> {
    for key in path {
        schema = match *key {
            "[]" => schema.get_mut("items")?,
            name => schema.get_mut("properties")?.get_mut(name)?,
        };
    }
    Some(schema)
}

/// Calls `f` on a schema object and on each of its sub-schemas.
fn visit(schema: &mut Value, f: &mut dyn FnMut(&mut Map<String, Value>)) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    f(obj);
    for child in children(obj) {
        visit(child, f);
    }
}

/// Marks an object that is not a map as keeping unknown fields.
fn preserve_unknown_fields(obj: &mut Map<String, Value>) {
    let is_object = obj.get("type").and_then(Value::as_str) == Some("object");
    if is_object && !obj.contains_key("additionalProperties") {
        obj.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
    }
}

/// Property names of Kubernetes' reference types (`LocalObjectReference`, `SecretKeySelector`,
/// `ConfigMapEnvSource`, `ConfigMapVolumeSource`, `ConfigMapProjection`, ...).
const REFERENCE_FIELDS: &[&str] = &["name", "key", "optional", "defaultMode", "items"];

/// Kubernetes declares the `name` of its reference types optional (default ""), and Volcano's
/// schema follows; k8s-openapi's schemas require it. So that no template Volcano accepts is
/// refused, `name` is made optional in an object shaped like a reference type. (`PodOS`,
/// `{name}` too, loses its requirement as well: accepting more is the safe side.)
fn optional_reference_name(obj: &mut Map<String, Value>) {
    let is_reference = obj
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|props| props.keys().all(|k| REFERENCE_FIELDS.contains(&k.as_str())));
    if is_reference && let Some(Value::Array(required)) = obj.get_mut("required") {
        required.retain(|r| r != "name");
        if required.is_empty() {
            obj.remove("required");
        }
    }
}
