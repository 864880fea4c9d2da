//! Writes in Kubernetes' protobuf encoding, as kube-scheduler sends its bindings and events.
//! The API server decodes a JSON body with reflection, twice (once for its kind, once for the
//! object); a protobuf body costs it a fraction of that. Only what the components create in
//! bulk is sent so; reads, watches and patches stay JSON. A server that does not decode
//! protobuf (`volcano up`'s) answers 415 Unsupported Media Type, and from then on that writer
//! sends JSON.

use std::sync::atomic::{AtomicBool, Ordering};

use http::header;
use kube::Client;

/// What precedes every protobuf-encoded object Kubernetes reads: "k8s" and a zero byte.
const MAGIC: &[u8; 4] = b"k8s\0";

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// One protobuf message being written, field by field (field numbers are those of the
/// `generated.proto` files of `k8s.io/api` and `k8s.io/apimachinery`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Message(Vec<u8>);

impl Message {
    /// An empty message.
    pub fn new() -> Message {
        Message::default()
    }

    /// A string field (skipped when empty, as an unset optional one).
    pub fn string(mut self, number: u32, value: &str) -> Message {
        if !value.is_empty() {
            self.put_bytes(number, value.as_bytes());
        }
        self
    }

    /// A nested message field.
    pub fn message(mut self, number: u32, value: &Message) -> Message {
        self.put_bytes(number, &value.0);
        self
    }

    /// An integer field (`int32` or `int64`; a negative one takes ten bytes, as protobuf has it).
    pub fn int(mut self, number: u32, value: i64) -> Message {
        self.put_varint(u64::from(number << 3));
        self.put_varint(value as u64);
        self
    }

    /// The message's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    fn put_bytes(&mut self, number: u32, bytes: &[u8]) {
        self.put_varint(u64::from((number << 3) | 2));
        self.put_varint(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
    }

    fn put_varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
}

/// The request body for `object` of `api_version`/`kind`: the magic bytes, then a
/// `runtime.Unknown` (typeMeta = 1, raw = 2) holding it.
pub fn envelope(api_version: &str, kind: &str, object: &Message) -> Vec<u8> {
    let type_meta = Message::new().string(1, api_version).string(2, kind);
    let unknown = Message::new().message(1, &type_meta).message(2, object);
    let mut body = MAGIC.to_vec();
    body.extend_from_slice(unknown.bytes());
    body
}

/// Creates objects with POST, in protobuf while the server takes it.
#[derive(Debug, Default)]
pub struct ProtobufWriter {
    json_only: AtomicBool,
}

impl ProtobufWriter {
    /// POSTs to `path` the body `protobuf()` ([`envelope`]), or `json()` to a server that does
    /// not decode protobuf. The answer is asked for in JSON, so an error reads as one.
    pub async fn post(
        &self,
        client: &Client,
        path: &str,
        protobuf: impl FnOnce() -> Vec<u8>,
        json: impl FnOnce() -> Result<Vec<u8>, kube::Error>,
    ) -> Result<(), kube::Error> {
        if !self.json_only.load(Ordering::Relaxed) {
            match send(client, path, PROTOBUF, protobuf()).await {
                Err(kube::Error::Api(s)) if s.code == 415 => {
                    // The 415 itself says the server cannot decode protobuf, whatever the JSON
                    // write then meets.
                    self.json_only.store(true, Ordering::Relaxed);
                    tracing::info!(
                        path,
                        "the API server does not decode protobuf: writing JSON"
                    );
                }
                other => return other,
            }
        }
        send(client, path, "application/json", json()?).await
    }
}

async fn send(
    client: &Client,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Result<(), kube::Error> {
    let request = http::Request::post(path)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::ACCEPT, "application/json")
        .body(body)
        .map_err(kube::Error::HttpError)?;
    client.request_text(request).await.map(|_| ())
}

/// Reading back what [`Message`] writes, for tests.
#[cfg(test)]
pub mod read {
    /// A field's value: bytes (wire type 2) or an integer (wire type 0).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Value {
        /// Length-delimited.
        Bytes(Vec<u8>),
        /// Varint.
        Int(u64),
    }

    fn varint(b: &mut &[u8]) -> u64 {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let byte = b[0];
            *b = &b[1..];
            v |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return v;
            }
            shift += 7;
        }
    }

    /// The fields of one message, in order.
    pub fn fields(mut b: &[u8]) -> Vec<(u64, Value)> {
        let mut out = Vec::new();
        while !b.is_empty() {
            let key = varint(&mut b);
            match key & 7 {
                0 => out.push((key >> 3, Value::Int(varint(&mut b)))),
                2 => {
                    let len = varint(&mut b) as usize;
                    out.push((key >> 3, Value::Bytes(b[..len].to_vec())));
                    b = &b[len..];
                }
                t => panic!("wire type {t}"),
            }
        }
        out
    }

    /// Field `n`'s bytes.
    pub fn bytes(fields: &[(u64, Value)], n: u64) -> Vec<u8> {
        match fields.iter().find(|(k, _)| *k == n) {
            Some((_, Value::Bytes(b))) => b.clone(),
            other => panic!("field {n}: {other:?}"),
        }
    }

    /// Field `n` as text.
    pub fn text(fields: &[(u64, Value)], n: u64) -> String {
        String::from_utf8(bytes(fields, n)).unwrap_or_default()
    }

    /// Field `n`'s integer.
    pub fn int(fields: &[(u64, Value)], n: u64) -> u64 {
        match fields.iter().find(|(k, _)| *k == n) {
            Some((_, Value::Int(v))) => *v,
            other => panic!("field {n}: {other:?}"),
        }
    }

    /// Whether field `n` is set.
    pub fn has(fields: &[(u64, Value)], n: u64) -> bool {
        fields.iter().any(|(k, _)| *k == n)
    }
}

#[cfg(test)]
mod tests {
    use super::read::{fields, int, text};
    use super::*;

    #[test]
    fn an_object_is_wrapped_as_kubernetes_reads_it() {
        let long = "n".repeat(200);
        let object = Message::new()
            .string(1, &long)
            .string(2, "")
            .int(3, 1_800_000_000);
        let body = envelope("v1", "Binding", &object);
        assert_eq!(&body[..4], b"k8s\0");
        let unknown = fields(&body[4..]);
        let type_meta = fields(&super::read::bytes(&unknown, 1));
        assert_eq!(text(&type_meta, 1), "v1");
        assert_eq!(text(&type_meta, 2), "Binding");
        let raw = fields(&super::read::bytes(&unknown, 2));
        // Past 127 bytes a length takes two bytes; an empty string is left unset.
        assert_eq!(text(&raw, 1), long);
        assert!(!super::read::has(&raw, 2));
        assert_eq!(int(&raw, 3), 1_800_000_000);
    }
}
