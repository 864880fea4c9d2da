//! A pod's eviction, through the Eviction API, sent in protobuf ([`crate::protobuf`]) with the
//! uid of the pod decided on as its precondition: a pod deleted and made again under the same
//! name is another pod, which the API server then refuses (409) to evict in its place. (kube's
//! `Api::evict` writes its delete options under a key the API server does not read, so a
//! precondition given there is dropped.)

use kube::Client;

use super::binding::DecidedPod;
use crate::protobuf::{Message, ProtobufWriter, envelope};

/// The `Eviction` of `pod` (policy/v1: metadata = 1, deleteOptions = 2).
fn protobuf_body(pod: DecidedPod<'_>) -> Vec<u8> {
    // ObjectMeta: name = 1, namespace = 3.
    let meta = Message::new().string(1, pod.name).string(3, pod.namespace);
    let mut eviction = Message::new().message(1, &meta);
    if let Some(uid) = pod.uid {
        // DeleteOptions: preconditions = 2; Preconditions: uid = 1.
        let preconditions = Message::new().string(1, uid);
        eviction = eviction.message(2, &Message::new().message(2, &preconditions));
    }
    envelope("policy/v1", "Eviction", &eviction)
}

fn json_body(pod: DecidedPod<'_>) -> Vec<u8> {
    let mut eviction = serde_json::json!({
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod.name, "namespace": pod.namespace},
    });
    if let Some(uid) = pod.uid {
        eviction["deleteOptions"] = serde_json::json!({"preconditions": {"uid": uid}});
    }
    eviction.to_string().into_bytes()
}

/// Writes evictions.
#[derive(Debug, Default)]
pub struct Evictor {
    writer: ProtobufWriter,
}

impl Evictor {
    /// Evicts `pod`, gracefully, as the Eviction API does without a grace period given.
    pub async fn evict(&self, client: &Client, pod: DecidedPod<'_>) -> Result<(), kube::Error> {
        let path = pod.subresource_path("eviction");
        self.writer
            .post(client, &path, || protobuf_body(pod), || Ok(json_body(pod)))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protobuf::read::{bytes, fields, text};

    #[test]
    fn an_eviction_names_the_pod_and_its_uid_as_the_precondition() {
        let pod = DecidedPod {
            namespace: "team-a",
            name: "trainer-0",
            uid: Some("0b8c6f1e-5a1d-4a59-9a43-1d2f0f3c9e77"),
        };
        let body = protobuf_body(pod);
        let unknown = fields(&body[4..]);
        let type_meta = fields(&bytes(&unknown, 1));
        assert_eq!(text(&type_meta, 1), "policy/v1");
        assert_eq!(text(&type_meta, 2), "Eviction");
        let eviction = fields(&bytes(&unknown, 2));
        let meta = fields(&bytes(&eviction, 1));
        assert_eq!(text(&meta, 1), "trainer-0");
        assert_eq!(text(&meta, 3), "team-a");
        let options = fields(&bytes(&eviction, 2));
        let preconditions = fields(&bytes(&options, 2));
        assert_eq!(
            text(&preconditions, 1),
            "0b8c6f1e-5a1d-4a59-9a43-1d2f0f3c9e77"
        );

        let json: serde_json::Value = serde_json::from_slice(&json_body(pod)).unwrap();
        assert_eq!(
            json["deleteOptions"]["preconditions"]["uid"],
            "0b8c6f1e-5a1d-4a59-9a43-1d2f0f3c9e77"
        );
    }
}
