//! A kubeconfig for talking to the local server with kubectl or kube-rs.

/// A kubeconfig (cluster, user and context `volcano-up`, current) for a plain-HTTP server
/// without authentication.
pub fn kubeconfig(server_url: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: volcano-up
  cluster:
    server: {server_url}
users:
- name: volcano-up
  user: {{}}
contexts:
- name: volcano-up
  context:
    cluster: volcano-up
    user: volcano-up
    namespace: default
current-context: volcano-up
preferences: {{}}
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_valid_yaml_naming_the_server() {
        let doc: serde_json::Value =
            serde_yaml_ng::from_str(&kubeconfig("http://127.0.0.1:1")).unwrap();
        assert_eq!(
            doc["clusters"][0]["cluster"]["server"],
            "http://127.0.0.1:1"
        );
        assert_eq!(doc["current-context"], "volcano-up");
    }
}
