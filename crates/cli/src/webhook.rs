//! `volcano webhook-manager`: Volcano's admission webhooks over HTTPS.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use prometheus_client::registry::Registry;
use volcano_controllers::admission::{AdmissionSettings, Endpoint};
use volcano_runtime::serve::serve;
use volcano_runtime::webhook::certs::{CertSource, GENERATED_VALIDITY, names_for};
use volcano_runtime::webhook::{WebhookOptions, WebhookServer};
use volcano_runtime::{shutdown_signal, stop_channel};

use crate::Failure;
use crate::runtime::{WebhookManagerArgs, client_for};

/// How often certificate files, renewal and the webhook configurations are checked.
const CHECK_EVERY: Duration = Duration::from_secs(2);

/// Paths Volcano serves for kinds volcano-rs does not have yet: accepted in
/// `--enabled-admission` (the chart lists them) and not served.
const NOT_YET: &[&str] = &["/jobtemplates/validate"];

/// Runs the webhook server until it is told to stop.
pub fn run(args: &WebhookManagerArgs) -> Result<(), Failure> {
    let options = options(args)?;
    let healthz = if args.enable_healthz {
        Some(go_address(&args.healthz_address, "--healthz-address")?)
    } else {
        None
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Internal(anyhow::anyhow!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        let client = client_for(
            args.kubeconfig.as_deref(),
            args.shared.master.as_deref(),
            "volcano-admission",
        )
        .await?;
        let (trigger, stop) = stop_channel();
        let listen = options.listen;
        let server = WebhookServer::start(client, options, stop.clone())
            .await
            .map_err(|e| match e {
                volcano_runtime::webhook::WebhookError::Listen { .. } => {
                    Failure::Input(format!("--port {}: {e}", listen.port()))
                }
                other => Failure::Input(other.to_string()),
            })?;
        if let Some(addr) = healthz {
            let (bound, _) = serve(
                addr,
                Registry::default(),
                server.ready.clone(),
                stop.clone(),
            )
            .await
            .map_err(|e| Failure::Input(format!("--healthz-address {addr}: {e}")))?;
            tracing::info!(address = %bound, "serving /healthz and /readyz (--healthz-address)");
        }
        shutdown_signal().await;
        tracing::warn!("stopping: finishing the reviews in flight");
        let _ = trigger.send(true);
        let grace = args.graceful_shutdown_time;
        let _ = tokio::time::timeout(grace, futures::future::join_all(server.tasks)).await;
        Ok(())
    })
}

fn options(args: &WebhookManagerArgs) -> Result<WebhookOptions, Failure> {
    let url = args.webhook_url.clone().filter(|u| !u.is_empty());
    let service = match (&args.webhook_namespace, &args.webhook_service_name) {
        (Some(ns), Some(name)) if !ns.is_empty() && !name.is_empty() => {
            Some((ns.as_str(), name.as_str()))
        }
        _ => None,
    };
    if url.is_none() && service.is_none() {
        return Err(Failure::Input(
            "--webhook-url, or --webhook-namespace with --webhook-service-name, is required: \
             the API server must be told where to call the webhooks"
                .into(),
        ));
    }
    if let Some(u) = &url
        && !u.starts_with("https://")
    {
        return Err(Failure::Input(format!(
            "--webhook-url {u:?}: the API server calls webhooks over HTTPS only (https://...)"
        )));
    }
    let certs = match (
        &args.tls_cert_file,
        &args.tls_private_key_file,
        &args.ca_cert_file,
    ) {
        (None, None, None) => CertSource::Generated {
            names: names_for(service, url.as_deref()),
            validity: GENERATED_VALIDITY,
        },
        (Some(cert), Some(key), Some(ca)) => CertSource::Files {
            cert: cert.clone(),
            key: key.clone(),
            ca: ca.clone(),
        },
        _ => {
            return Err(Failure::Input(
                "--tls-cert-file, --tls-private-key-file and --ca-cert-file go together: give \
                 all three (a certificate, its key and the CA for caBundle), or none to have \
                 them generated"
                    .into(),
            ));
        }
    };
    let mut endpoints = Vec::new();
    for path in args.enabled_admission.split(',').map(str::trim) {
        if path.is_empty() {
            continue;
        }
        match Endpoint::from_path(path) {
            Some(e) if !endpoints.contains(&e) => endpoints.push(e),
            Some(_) => {}
            None if NOT_YET.contains(&path) => {
                tracing::warn!(path, "not served: volcano-rs has no such kind yet");
            }
            None => {
                return Err(Failure::Input(format!(
                    "--enabled-admission: unknown admission path {path:?} (known: {})",
                    Endpoint::ALL.map(Endpoint::path).join(",")
                )));
            }
        }
    }
    let ip: IpAddr = if args.listen_address.is_empty() {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    } else {
        args.listen_address.parse().map_err(|e| {
            Failure::Input(format!(
                "--listen-address {:?}: not an IP address: {e}",
                args.listen_address
            ))
        })?
    };
    if args.port == 0 && url.is_none() {
        tracing::warn!("--port 0 picks a free port the Service does not know");
    }
    Ok(WebhookOptions {
        listen: SocketAddr::new(ip, args.port),
        endpoints,
        settings: AdmissionSettings {
            scheduler_names: args.scheduler_names.clone(),
            max_queue_depth: args.max_queue_depth,
            enable_root_queue_protection: args.enable_root_queue_protection,
        },
        certs,
        url,
        check_every: CHECK_EVERY,
    })
}

/// A Go listen address: `:11251` (every interface), `host:port` or `[v6]:port`.
fn go_address(text: &str, flag: &str) -> Result<SocketAddr, Failure> {
    let full = if text.starts_with(':') {
        format!("0.0.0.0{text}")
    } else {
        text.to_string()
    };
    full.parse()
        .map_err(|e| Failure::Input(format!("{flag} {text:?}: not host:port: {e}")))
}
