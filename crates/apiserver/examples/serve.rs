//! Serves the local API until interrupted, with two simulated nodes, and prints a kubeconfig:
//! `cargo run -p volcano-apiserver --example serve -- 127.0.0.1:8080 > kubeconfig`.

use volcano_apiserver::kubelet::{KubeletOptions, Kubelets, NodeSpec};
use volcano_apiserver::{LocalApiServer, ServerOptions, kubeconfig};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listen = match std::env::args().nth(1) {
        Some(a) => a.parse()?,
        None => ServerOptions::default().listen,
    };
    let server = LocalApiServer::start(ServerOptions {
        listen,
        ..ServerOptions::default()
    })
    .await?;
    let nodes = [NodeSpec::new("node-1"), NodeSpec::new("node-2").gpus(4)];
    let kubelets = Kubelets::start(server.store(), &nodes, KubeletOptions::default()).await?;
    println!("{}", kubeconfig(&server.url()));
    tokio::signal::ctrl_c().await?;
    kubelets.stop();
    server.shutdown().await;
    Ok(())
}
