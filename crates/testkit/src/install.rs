//! `deploy/` applied as an administrator would, and clients holding only what one of its
//! ServiceAccounts is granted.

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{self, Scope};
use kube::{Client, ResourceExt};
use serde_json::Value;

use crate::HarnessError;

/// Kinds of `deploy/` that are not applied: the test runs the scheduler and the controllers
/// in its own process instead of their Deployments and Services.
const RUN_IN_PROCESS: [&str; 2] = ["Deployment", "Service"];

/// The field manager of the install, as `kubectl apply --server-side` would name itself.
const MANAGER: &str = "volcano-testkit";

/// The documents of every `.yaml` file directly in `dir`, in file-name order.
pub fn manifests(dir: &Path) -> Result<Vec<(String, Value)>, HarnessError> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| HarnessError::io(format!("read {}", dir.display()), e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml") && p.is_file())
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(&path)
            .map_err(|e| HarnessError::io(format!("read {file}"), e))?;
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let v: Value =
                serde::Deserialize::deserialize(doc).map_err(|e| HarnessError::Manifest {
                    file: file.clone(),
                    message: e.to_string(),
                })?;
            if !v.is_null() {
                out.push((file.clone(), v));
            }
        }
    }
    Ok(out)
}

fn gvk_of(file: &str, doc: &Value) -> Result<GroupVersionKind, HarnessError> {
    let field = |f: &str| {
        doc.get(f)
            .and_then(Value::as_str)
            .ok_or_else(|| HarnessError::Manifest {
                file: file.to_string(),
                message: format!("a document has no {f}"),
            })
    };
    let (api_version, kind) = (field("apiVersion")?, field("kind")?);
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    Ok(GroupVersionKind::gvk(group, version, kind))
}

/// Applies the manifests of `dir` (server-side apply, as `kubectl apply --server-side` does)
/// except the Deployments and Services, and waits until the CRDs are established.
pub async fn install(client: &Client, dir: &Path) -> Result<(), HarnessError> {
    let mut crds = Vec::new();
    for (file, doc) in manifests(dir)? {
        let gvk = gvk_of(&file, &doc)?;
        if RUN_IN_PROCESS.contains(&gvk.kind.as_str()) {
            continue;
        }
        let name = doc
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .ok_or_else(|| HarnessError::Manifest {
                file: file.clone(),
                message: format!("a {} has no metadata.name", gvk.kind),
            })?
            .to_string();
        let (resource, caps) = discovery::pinned_kind(client, &gvk)
            .await
            .map_err(|e| HarnessError::kube(format!("{file}: discover {}", gvk.kind), e))?;
        let api: Api<DynamicObject> = match caps.scope {
            Scope::Namespaced => {
                let ns = doc
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or("default");
                Api::namespaced_with(client.clone(), ns, &resource)
            }
            Scope::Cluster => Api::all_with(client.clone(), &resource),
        };
        api.patch(
            &name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&doc),
        )
        .await
        .map_err(|e| HarnessError::kube(format!("{file}: apply {} {name}", gvk.kind), e))?;
        if gvk.kind == "CustomResourceDefinition" {
            crds.push(name);
        }
    }
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for name in crds {
        wait_established(&api, &name).await?;
    }
    Ok(())
}

async fn wait_established(
    api: &Api<CustomResourceDefinition>,
    name: &str,
) -> Result<(), HarnessError> {
    for _ in 0..100 {
        let crd = api
            .get(name)
            .await
            .map_err(|e| HarnessError::kube(format!("read CRD {name}"), e))?;
        let established = crd
            .status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .any(|c| c.type_ == "Established" && c.status == "True");
        if established {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(HarnessError::Invalid(format!(
        "CRD {name} was not established after 10 s"
    )))
}

/// A bearer token of ServiceAccount `namespace/name`, from the TokenRequest API (what a pod
/// of that account mounts).
pub async fn service_account_token(
    admin: &Client,
    namespace: &str,
    name: &str,
) -> Result<String, HarnessError> {
    let api: Api<ServiceAccount> = Api::namespaced(admin.clone(), namespace);
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(6 * 3600),
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    let issued = api
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .map_err(|e| {
            HarnessError::kube(format!("a token of ServiceAccount {namespace}/{name}"), e)
        })?;
    issued
        .status
        .map(|s| s.token)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            HarnessError::Invalid(format!(
                "the token request of {namespace}/{} gave no token",
                api.resource_url()
            ))
        })
}

/// Creates namespace `name` if it does not exist.
pub async fn ensure_namespace(admin: &Client, name: &str) -> Result<(), HarnessError> {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(admin.clone());
    let ns = k8s_openapi::api::core::v1::Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    match api.create(&PostParams::default(), &ns).await {
        Ok(created) => {
            tracing::debug!(namespace = %created.name_any(), "namespace created");
            Ok(())
        }
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(HarnessError::kube(format!("create namespace {name}"), e)),
    }
}

/// Creates ServiceAccount `namespace/name` if it does not exist (kube-controller-manager does
/// this for `default` in every namespace; without it, admission refuses pods).
pub async fn ensure_service_account(
    admin: &Client,
    namespace: &str,
    name: &str,
) -> Result<(), HarnessError> {
    let api: Api<ServiceAccount> = Api::namespaced(admin.clone(), namespace);
    let sa = ServiceAccount {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    match api.create(&PostParams::default(), &sa).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(HarnessError::kube(
            format!("create ServiceAccount {namespace}/{name}"),
            e,
        )),
    }
}
