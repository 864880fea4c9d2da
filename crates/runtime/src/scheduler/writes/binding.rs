//! A pod's `Binding`, sent in protobuf ([`crate::protobuf`]) as kube-scheduler sends it.

use kube::Client;

use crate::protobuf::{Message, ProtobufWriter, envelope};

/// The `Binding` of pod `namespace/name` to `node` (core/v1: metadata = 1, target = 2).
fn protobuf_body(namespace: &str, name: &str, node: &str) -> Vec<u8> {
    // ObjectMeta: name = 1, namespace = 3.
    let meta = Message::new().string(1, name).string(3, namespace);
    // ObjectReference: kind = 1, name = 3, apiVersion = 5.
    let target = Message::new()
        .string(1, "Node")
        .string(3, node)
        .string(5, "v1");
    let binding = Message::new().message(1, &meta).message(2, &target);
    envelope("v1", "Binding", &binding)
}

fn json_body(namespace: &str, name: &str, node: &str) -> Vec<u8> {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    })
    .to_string()
    .into_bytes()
}

/// Writes bindings.
#[derive(Debug, Default)]
pub struct Binder {
    writer: ProtobufWriter,
}

impl Binder {
    /// Binds pod `namespace/name` to `node`.
    pub async fn bind(
        &self,
        client: &Client,
        namespace: &str,
        name: &str,
        node: &str,
    ) -> Result<(), kube::Error> {
        let path = format!("/api/v1/namespaces/{namespace}/pods/{name}/binding");
        self.writer
            .post(
                client,
                &path,
                || protobuf_body(namespace, name, node),
                || Ok(json_body(namespace, name, node)),
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protobuf::read::{bytes, fields, text};

    #[test]
    fn a_binding_names_the_pod_and_its_node() {
        let body = protobuf_body("team-a", "trainer-0", "gpu-node-7");
        let unknown = fields(&body[4..]);
        let type_meta = fields(&bytes(&unknown, 1));
        assert_eq!(text(&type_meta, 2), "Binding");
        let binding = fields(&bytes(&unknown, 2));
        let meta = fields(&bytes(&binding, 1));
        assert_eq!(text(&meta, 1), "trainer-0");
        assert_eq!(text(&meta, 3), "team-a");
        let target = fields(&bytes(&binding, 2));
        assert_eq!(text(&target, 1), "Node");
        assert_eq!(text(&target, 3), "gpu-node-7");
        assert_eq!(text(&target, 5), "v1");
    }
}
