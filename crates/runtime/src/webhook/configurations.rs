//! The webhook configurations the API server calls us through: each enabled endpoint has one,
//! named as Volcano's chart names it (`volcano-admission-service-<path>`), and gets our CA in
//! its `caBundle` (and, with `--webhook-url`, our URL in place of the Service).

use base64::Engine;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};
use volcano_controllers::admission::Endpoint;

use super::WebhookError;

/// Field manager of the configuration patches.
const MANAGER: &str = "volcano-admission";

/// Prefix of every configuration's name (Volcano's `volcanoAdmissionPrefix`).
pub const CONFIGURATION_PREFIX: &str = "volcano-admission-service";

/// The configuration's name for `endpoint`: `/jobs/mutate` is `volcano-admission-service-jobs-mutate`.
pub fn configuration_name(endpoint: Endpoint) -> String {
    format!(
        "{CONFIGURATION_PREFIX}{}",
        endpoint.path().replace('/', "-")
    )
}

/// What each webhook's `clientConfig` should say.
#[derive(Debug, Clone)]
pub struct ClientTarget {
    /// PEM of the CA(s) that sign our serving certificate.
    pub ca_bundle: Vec<u8>,
    /// `--webhook-url`: when set, the API server calls `<url><path>` instead of the Service.
    pub url: Option<String>,
}

impl ClientTarget {
    /// Whether `config` already says what it should for `endpoint`.
    fn matches(&self, config: &WebhookClientConfig, endpoint: Endpoint) -> bool {
        let ca_ok = config.ca_bundle.as_ref().map(|b| b.0.as_slice()) == Some(&self.ca_bundle);
        let url_ok = match &self.url {
            None => true,
            Some(url) => {
                config.url.as_deref() == Some(full_url(url, endpoint).as_str())
                    && config.service.is_none()
            }
        };
        ca_ok && url_ok
    }

    fn client_config(&self, endpoint: Endpoint) -> Value {
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.ca_bundle);
        match &self.url {
            Some(url) => json!({"caBundle": ca, "url": full_url(url, endpoint), "service": null}),
            None => json!({"caBundle": ca}),
        }
    }
}

fn full_url(url: &str, endpoint: Endpoint) -> String {
    format!("{}{}", url.trim_end_matches('/'), endpoint.path())
}

/// Writes `target` into the configuration of each of `endpoints`. Returns the names of the
/// configurations that do not exist (yet): the caller tries again later, as the chart may
/// install them after the webhook starts.
pub async fn write_client_configs(
    client: &Client,
    endpoints: &[Endpoint],
    target: &ClientTarget,
) -> Result<Vec<String>, WebhookError> {
    let mut missing = Vec::new();
    for &endpoint in endpoints {
        let name = configuration_name(endpoint);
        let found = if endpoint.is_mutating() {
            let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
            write_one(&api, &name, endpoint, target, |c| {
                c.webhooks
                    .unwrap_or_default()
                    .into_iter()
                    .map(|w| (w.name, w.client_config))
                    .collect()
            })
            .await?
        } else {
            let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
            write_one(&api, &name, endpoint, target, |c| {
                c.webhooks
                    .unwrap_or_default()
                    .into_iter()
                    .map(|w| (w.name, w.client_config))
                    .collect()
            })
            .await?
        };
        if !found {
            missing.push(name);
        }
    }
    Ok(missing)
}

/// Writes `target` into configuration `name` if it exists; whether it does.
async fn write_one<K>(
    api: &Api<K>,
    name: &str,
    endpoint: Endpoint,
    target: &ClientTarget,
    webhooks_of: fn(K) -> Vec<(String, WebhookClientConfig)>,
) -> Result<bool, WebhookError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let Some(current) = api.get_opt(name).await.map_err(|e| api_error(name, e))? else {
        return Ok(false);
    };
    patch(api, name, endpoint, &webhooks_of(current), target).await?;
    Ok(true)
}

async fn patch<K>(
    api: &Api<K>,
    name: &str,
    endpoint: Endpoint,
    webhooks: &[(String, WebhookClientConfig)],
    target: &ClientTarget,
) -> Result<(), WebhookError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    if webhooks.iter().all(|(_, c)| target.matches(c, endpoint)) {
        return Ok(());
    }
    // `webhooks` merges by name, so each entry keeps its rules and only its clientConfig changes.
    let entries: Vec<Value> = webhooks
        .iter()
        .map(|(n, _)| json!({"name": n, "clientConfig": target.client_config(endpoint)}))
        .collect();
    let body = json!({"webhooks": entries});
    api.patch(name, &PatchParams::apply(MANAGER), &Patch::Strategic(&body))
        .await
        .map_err(|e| api_error(name, e))?;
    tracing::info!(configuration = name, "wrote the webhook's CA bundle");
    Ok(())
}

fn api_error(name: &str, e: kube::Error) -> WebhookError {
    WebhookError::Configuration {
        name: name.to_string(),
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configurations_are_named_as_volcanos_chart_names_them() {
        assert_eq!(
            configuration_name(Endpoint::JobsMutate),
            "volcano-admission-service-jobs-mutate"
        );
        assert_eq!(
            configuration_name(Endpoint::QueuesValidate),
            "volcano-admission-service-queues-validate"
        );
    }

    #[test]
    fn a_url_replaces_the_service() {
        let t = ClientTarget {
            ca_bundle: b"ca".to_vec(),
            url: Some("https://127.0.0.1:9443/".into()),
        };
        let c = t.client_config(Endpoint::PodsValidate);
        assert_eq!(c["url"], "https://127.0.0.1:9443/pods/validate");
        assert!(c["service"].is_null());
        assert_eq!(c["caBundle"], "Y2E=");
    }
}
