//! A pod's `Binding`, sent in protobuf ([`crate::protobuf`]) as kube-scheduler sends it. It
//! names the uid of the pod decided on, as Volcano's and kube-scheduler's bindings do: a pod
//! deleted and made again under the same name, as a restarted Job's pods are, is another pod,
//! which the API server then refuses (409) to bind in its place.

use kube::Client;

use crate::protobuf::{Message, ProtobufWriter, envelope};

/// The pod a write is for: its name, and the uid the decision was made on.
#[derive(Debug, Clone, Copy)]
pub struct DecidedPod<'a> {
    /// The pod's namespace.
    pub namespace: &'a str,
    /// The pod's name.
    pub name: &'a str,
    /// The pod's uid, where known: the write is refused if the pod now has another.
    pub uid: Option<&'a str>,
}

impl DecidedPod<'_> {
    /// The path of the pod's subresource `sub` (`binding`, `eviction`).
    pub(super) fn subresource_path(&self, sub: &str) -> String {
        format!(
            "/api/v1/namespaces/{}/pods/{}/{sub}",
            self.namespace, self.name
        )
    }
}

/// The `Binding` of `pod` to `node` (core/v1: metadata = 1, target = 2).
fn protobuf_body(pod: DecidedPod<'_>, node: &str) -> Vec<u8> {
    // ObjectMeta: name = 1, namespace = 3, uid = 5.
    let mut meta = Message::new().string(1, pod.name).string(3, pod.namespace);
    if let Some(uid) = pod.uid {
        meta = meta.string(5, uid);
    }
    // ObjectReference: kind = 1, name = 3, apiVersion = 5.
    let target = Message::new()
        .string(1, "Node")
        .string(3, node)
        .string(5, "v1");
    let binding = Message::new().message(1, &meta).message(2, &target);
    envelope("v1", "Binding", &binding)
}

fn json_body(pod: DecidedPod<'_>, node: &str) -> Vec<u8> {
    let mut meta = serde_json::json!({"name": pod.name, "namespace": pod.namespace});
    if let Some(uid) = pod.uid {
        meta["uid"] = uid.into();
    }
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": meta,
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
    /// Binds `pod` to `node`.
    pub async fn bind(
        &self,
        client: &Client,
        pod: DecidedPod<'_>,
        node: &str,
    ) -> Result<(), kube::Error> {
        self.writer
            .post(
                client,
                &pod.subresource_path("binding"),
                || protobuf_body(pod, node),
                || Ok(json_body(pod, node)),
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protobuf::read::{bytes, fields, text};

    #[test]
    fn a_binding_names_the_pod_its_uid_and_its_node() {
        let pod = DecidedPod {
            namespace: "team-a",
            name: "trainer-0",
            uid: Some("0b8c6f1e-5a1d-4a59-9a43-1d2f0f3c9e77"),
        };
        let body = protobuf_body(pod, "gpu-node-7");
        let unknown = fields(&body[4..]);
        let type_meta = fields(&bytes(&unknown, 1));
        assert_eq!(text(&type_meta, 2), "Binding");
        let binding = fields(&bytes(&unknown, 2));
        let meta = fields(&bytes(&binding, 1));
        assert_eq!(text(&meta, 1), "trainer-0");
        assert_eq!(text(&meta, 3), "team-a");
        assert_eq!(text(&meta, 5), "0b8c6f1e-5a1d-4a59-9a43-1d2f0f3c9e77");
        let target = fields(&bytes(&binding, 2));
        assert_eq!(text(&target, 1), "Node");
        assert_eq!(text(&target, 3), "gpu-node-7");
        assert_eq!(text(&target, 5), "v1");

        let json: serde_json::Value =
            serde_json::from_slice(&json_body(pod, "gpu-node-7")).unwrap();
        assert_eq!(
            json["metadata"]["uid"],
            "0b8c6f1e-5a1d-4a59-9a43-1d2f0f3c9e77"
        );
    }
}
