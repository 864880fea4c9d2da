//! The connection to the API server, as vcctl finds it, and the translation of what the server
//! answers into one-line errors with the right exit status.

use std::path::PathBuf;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::Failure;

/// How long one request may wait for an answer: a stuck server should end the command with
/// an error, not hang a user's script forever.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Flags every `volcano job` and `volcano queue` command takes to find the API server.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ConnectionArgs {
    /// Kubeconfig file [default: $KUBECONFIG, then ~/.kube/config, then the in-cluster service
    /// account].
    #[arg(short = 'k', long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Address of the API server, overriding the kubeconfig's (e.g. https://10.0.0.1:6443).
    #[arg(short = 's', long, value_name = "URL")]
    pub master: Option<String>,
}

/// A client and the address it talks to, for error messages.
pub struct Cluster {
    /// The kube client.
    pub client: Client,
    /// The API server's URL.
    pub server: String,
}

/// The client configuration from `--kubeconfig`, else inferred as kubectl does (`KUBECONFIG`,
/// `~/.kube/config`, the in-cluster service account). Shared with `volcano scheduler` and
/// `volcano controller-manager`.
pub async fn load_config(kubeconfig: Option<&std::path::Path>) -> Result<Config, Failure> {
    Ok(match kubeconfig {
        Some(path) => {
            let named = |e: &dyn std::error::Error| {
                Failure::Input(format!("--kubeconfig {}: {}", path.display(), chain(e)))
            };
            let kubeconfig = Kubeconfig::read_from(path).map_err(|e| named(&e))?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|e| named(&e))?
        }
        None => Config::infer().await.map_err(|e| {
            Failure::Internal(anyhow::anyhow!(
                "no API server configured: give --kubeconfig, set KUBECONFIG or write ~/.kube/config ({})",
                chain(&e)
            ))
        })?,
    })
}

/// Builds the client; nothing is sent yet, so an unreachable server shows on the first request.
pub async fn connect(args: &ConnectionArgs) -> Result<Cluster, Failure> {
    let mut config = load_config(args.kubeconfig.as_deref()).await?;
    if let Some(master) = &args.master {
        let bad = |why: String| Failure::Input(format!("--master {master:?}: {why}"));
        config.cluster_url = master.parse().map_err(|e| bad(format!("not a URL: {e}")))?;
        // kube-rs panics on a URL without scheme or host, so it never gets one.
        let url = &config.cluster_url;
        if !matches!(url.scheme_str(), Some("http" | "https")) || url.host().is_none() {
            return Err(bad("expected http(s)://host[:port]".to_string()));
        }
    }
    config.read_timeout = Some(READ_TIMEOUT);
    let server = config
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_string();
    let client = Client::try_from(config).map_err(|e| {
        Failure::Internal(anyhow::anyhow!(
            "cannot set up a client for the API server at {server}: {}",
            chain(&e)
        ))
    })?;
    Ok(Cluster { client, server })
}

/// What a failed request was about, for its error message.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// The object as the user named it (`job "default/x"`, `queue "q1"`), or the collection
    /// for a list (`jobs`).
    pub what: &'a str,
    /// The API resource, for when the server does not serve it (`jobs.batch.volcano.sh`).
    pub resource: &'a str,
}

impl Cluster {
    /// The failure a request error deserves: a missing or duplicate object, or one the server
    /// rejected, is bad input (exit 2); anything else (unreachable server, refused
    /// credentials, missing CRDs) is exit 1, each with one line naming the server.
    pub fn failure(&self, subject: Subject<'_>, err: kube::Error) -> Failure {
        classify(&self.server, subject, err)
    }
}

fn classify(server: &str, subject: Subject<'_>, err: kube::Error) -> Failure {
    let Subject { what, resource } = subject;
    let internal = |msg: String| Failure::Internal(anyhow::anyhow!(msg));
    let status = match err {
        kube::Error::Api(status) => status,
        kube::Error::SerdeError(e) => {
            return internal(format!(
                "the API server at {server} sent {what} in a form volcano cannot read: {e}"
            ));
        }
        other => {
            return internal(format!(
                "cannot reach the API server at {server}: {}",
                cause(&other)
            ));
        }
    };
    let message = status.message.trim();
    // A create in a namespace that does not exist: the namespace is what is missing.
    if let Some(details) = status.details.as_ref().filter(|d| d.kind == "namespaces") {
        return Failure::Input(format!("namespace \"{}\" not found", details.name));
    }
    match status.code {
        404 if object_missing(&status) => Failure::Input(format!("{what} not found")),
        404 => internal(format!(
            "the API server at {server} does not serve {resource}; are Volcano's CRDs installed? \
             (volcano crds | kubectl apply -f -)"
        )),
        409 if status.reason == "AlreadyExists" => Failure::Input(format!("{what} already exists")),
        400 | 422 => Failure::Input(format!("the API server rejected {what}: {message}")),
        // Admission webhooks deny with 403 unless they choose a code; that is about the
        // object, not about the user's rights.
        403 if message.contains("admission webhook") => {
            Failure::Input(format!("the API server rejected {what}: {message}"))
        }
        401 => internal(format!(
            "the API server at {server} did not accept the credentials: {message}"
        )),
        403 => internal(format!("the API server at {server} forbids it: {message}")),
        code => internal(format!(
            "the API server at {server} answered {code} for {what}: {message}"
        )),
    }
}

/// A 404 about a named object, rather than about a resource type the server does not have
/// (which kube-apiserver answers with no details and "the server could not find the
/// requested resource").
fn object_missing(status: &kube::core::Status) -> bool {
    let named = status.details.as_ref().is_some_and(|d| !d.name.is_empty());
    named || (status.reason == "NotFound" && !status.message.contains("requested resource"))
}

/// The last two links of an error's chain: what failed and why (`tcp connect error:
/// Connection refused`), without the wrappers kube and hyper put around it.
fn cause(err: &dyn std::error::Error) -> String {
    let mut links = vec![err.to_string()];
    let mut source = err.source();
    while let Some(cause) = source {
        links.push(cause.to_string());
        source = cause.source();
    }
    let from = links.len().saturating_sub(2);
    links[from..].join(": ")
}

/// An error and its causes on one line, without repeating a cause a message already quotes.
pub fn chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use kube::core::Status;
    use kube::core::response::StatusDetails;

    use super::*;

    const SUBJECT: Subject<'static> = Subject {
        what: "job \"default/x\"",
        resource: "jobs.batch.volcano.sh",
    };

    fn api(code: u16, reason: &str, message: &str, name: &str) -> kube::Error {
        let mut status = Status::failure(message, reason).with_code(code);
        if !name.is_empty() {
            let details: StatusDetails =
                serde_json::from_value(serde_json::json!({ "name": name })).unwrap();
            status = status.with_details(details);
        }
        kube::Error::Api(status.boxed())
    }

    fn text(f: Failure) -> (u8, String) {
        match f {
            Failure::Input(m) => (2, m),
            Failure::Internal(e) => (1, format!("{e:#}")),
        }
    }

    #[test]
    fn a_missing_object_is_bad_input() {
        let err = api(
            404,
            "NotFound",
            "jobs.batch.volcano.sh \"x\" not found",
            "x",
        );
        assert_eq!(
            text(classify("https://s", SUBJECT, err)),
            (2, "job \"default/x\" not found".to_string())
        );
    }

    #[test]
    fn a_missing_namespace_is_named() {
        let mut err = api(404, "NotFound", "namespaces \"team\" not found", "team");
        if let kube::Error::Api(status) = &mut err
            && let Some(details) = status.details.as_mut()
        {
            details.kind = "namespaces".to_string();
        }
        assert_eq!(
            text(classify("https://s", SUBJECT, err)),
            (2, "namespace \"team\" not found".to_string())
        );
    }

    #[test]
    fn a_missing_resource_type_points_at_the_crds() {
        let err = api(
            404,
            "NotFound",
            "the server could not find the requested resource",
            "",
        );
        let (code, msg) = text(classify("https://s", SUBJECT, err));
        assert_eq!(code, 1);
        assert!(msg.contains("https://s") && msg.contains("jobs.batch.volcano.sh"));
        assert!(msg.contains("CRDs"), "{msg}");
    }

    #[test]
    fn duplicates_and_rejections_are_bad_input() {
        let dup = api(409, "AlreadyExists", "already exists", "x");
        assert_eq!(
            text(classify("https://s", SUBJECT, dup)),
            (2, "job \"default/x\" already exists".to_string())
        );
        let denied = api(
            403,
            "",
            "admission webhook \"validatejob.volcano.sh\" denied the request: bad",
            "",
        );
        let (code, msg) = text(classify("https://s", SUBJECT, denied));
        assert_eq!(code, 2);
        assert!(msg.starts_with("the API server rejected job \"default/x\": admission webhook"));
        let rbac = api(403, "Forbidden", "user cannot create jobs", "");
        assert_eq!(text(classify("https://s", SUBJECT, rbac)).0, 1);
    }

    #[test]
    fn chains_skip_causes_already_quoted() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert_eq!(chain(&io), "refused");
    }
}
