//! Shared setup of the integration tests: a server on a free port and a kube-rs client for it.

#![allow(dead_code)] // Each test binary uses a different part of this module.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Test setup fails loudly by design.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use serde_json::json;
use volcano_apiserver::{LocalApiServer, ServerOptions};

/// A running server and a client talking to it.
pub struct TestServer {
    pub server: LocalApiServer,
    pub client: Client,
}

/// Starts a server with default options.
pub async fn start() -> TestServer {
    start_with(ServerOptions::default()).await
}

/// Starts a server with these options.
pub async fn start_with(opts: ServerOptions) -> TestServer {
    let server = LocalApiServer::start(opts).await.expect("server starts");
    let config = kube::Config::new(server.url().parse().expect("url parses"));
    let client = Client::try_from(config).expect("client builds");
    TestServer { server, client }
}

/// A pod with one busybox container running `command`.
pub fn pod(name: &str, command: &[&str]) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "test"}},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "command": command}]},
    }))
    .expect("a valid pod")
}

/// Waits at most `secs` for `fut`.
pub async fn within<T>(secs: u64, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), fut)
        .await
        .expect("finished in time")
}

/// Sends one raw HTTP/1.1 request (connection closed after it) and returns the status code and
/// body, for what a typed client cannot send.
pub async fn raw(
    server: &LocalApiServer,
    method: &str,
    path: &str,
    content_type: &str,
    body: &[u8],
) -> (u16, String) {
    let (code, _, body) = raw_with_headers(server, method, path, content_type, body).await;
    (code, body)
}

/// [`raw`], also returning the response's header lines.
pub async fn raw_with_headers(
    server: &LocalApiServer,
    method: &str,
    path: &str,
    content_type: &str,
    body: &[u8],
) -> (u16, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(server.addr())
        .await
        .expect("connects");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        server.addr(),
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("writes");
    stream.write_all(body).await.expect("writes");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.expect("reads");
    let text = String::from_utf8_lossy(&response).to_string();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status line");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (code, head.to_string(), body.to_string())
}
