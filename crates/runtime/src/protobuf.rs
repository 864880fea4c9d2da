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
pub(crate) const MAGIC: &[u8; 4] = b"k8s\0";

/// Kubernetes' protobuf media type.
pub(crate) const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

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

/// The object inside an envelope (the magic bytes, then a `runtime.Unknown` whose raw = 2),
/// borrowed, not copied; `None` if `body` is not one.
pub fn object(body: &[u8]) -> Option<&[u8]> {
    read::field(body.strip_prefix(MAGIC)?, 2)
}

/// Whether an answer with these headers is in protobuf (a watch's media type carries
/// `;stream=watch`).
pub(crate) fn is_protobuf(headers: &http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(PROTOBUF))
}

/// Creates objects with POST, in protobuf while the server takes it.
#[derive(Debug, Default)]
pub struct ProtobufWriter {
    json_only: AtomicBool,
}

impl ProtobufWriter {
    /// POSTs to `path` the body `protobuf()` ([`envelope`]), or `json()` to a server that does
    /// not decode protobuf. The answer is asked for in the body's own encoding; an error's
    /// `Status` is read in either.
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

/// Sends one create, asking for the answer in the body's own encoding: a created object the
/// API server encodes in JSON costs it a reflection pass as long as the decoding did. Only an
/// error's body is read, a `Status` in either encoding.
async fn send(
    client: &Client,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Result<(), kube::Error> {
    let request = http::Request::post(path)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::ACCEPT, accept(content_type))
        .body(kube::client::Body::from(body))
        .map_err(kube::Error::HttpError)?;
    let response = client.send(request).await?;
    let code = response.status();
    let protobuf_answer = is_protobuf(response.headers());
    // Read whole even when unused, so the connection is taken again.
    let body = response.into_body().collect_bytes().await?;
    if code.is_success() {
        return Ok(());
    }
    let status = if protobuf_answer {
        status_from_protobuf(&body)
    } else {
        serde_json::from_slice::<kube::core::Status>(&body).ok()
    };
    let status = status.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(&body);
        kube::core::Status::failure(text.trim(), "Failed to parse error data")
    });
    Err(kube::Error::Api(status.with_code(code.as_u16()).boxed()))
}

/// What to ask the answer in: the body's own encoding, or JSON where a kind has no protobuf.
fn accept(content_type: &str) -> &'static str {
    if content_type == PROTOBUF {
        "application/vnd.kubernetes.protobuf, application/json"
    } else {
        "application/json"
    }
}

/// A `Status` in protobuf (`k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto`: message = 3,
/// reason = 4) inside its envelope, read as the failure it answers; `None` if it is not one.
/// Its code is the answer's HTTP status, set by [`send`]; its `details` (field 5) are left out:
/// the writers act on the code alone, and the message names the object.
fn status_from_protobuf(body: &[u8]) -> Option<kube::core::Status> {
    let raw = object(body)?;
    let text = |n| {
        read::field(raw, n)
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    Some(kube::core::Status::failure(&text(3), &text(4)))
}

/// Reading Kubernetes' protobuf: envelopes, an error's `Status`, watch events, and in tests
/// what [`Message`] writes.
pub mod read {
    /// A field's value: bytes (wire type 2) or an integer (wire type 0).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Value {
        /// Length-delimited.
        Bytes(Vec<u8>),
        /// Varint.
        Int(u64),
    }

    fn varint(b: &mut &[u8]) -> Option<u64> {
        let (mut v, mut shift) = (0u64, 0u32);
        loop {
            let (&byte, rest) = b.split_first()?;
            *b = rest;
            v |= u64::from(byte & 0x7f).checked_shl(shift)?;
            if byte < 0x80 {
                return Some(v);
            }
            shift += 7;
        }
    }

    /// The first length-delimited field `n` of a message, borrowed; `None` if it has none, or
    /// if what comes before it is not varints and length-delimited fields (the only wire types
    /// Kubernetes' objects use).
    pub fn field(mut b: &[u8], n: u64) -> Option<&[u8]> {
        while !b.is_empty() {
            let key = varint(&mut b)?;
            match key & 7 {
                0 => {
                    varint(&mut b)?;
                }
                2 => {
                    let len = usize::try_from(varint(&mut b)?).ok()?;
                    let (value, rest) = b.split_at_checked(len)?;
                    if key >> 3 == n {
                        return Some(value);
                    }
                    b = rest;
                }
                _ => return None,
            }
        }
        None
    }

    /// The fields of one message, in order; `None` if `b` is not a message of varints and
    /// length-delimited fields (the only wire types Kubernetes' objects use).
    #[cfg(test)]
    pub fn parse(mut b: &[u8]) -> Option<Vec<(u64, Value)>> {
        let mut out = Vec::new();
        while !b.is_empty() {
            let key = varint(&mut b)?;
            match key & 7 {
                0 => out.push((key >> 3, Value::Int(varint(&mut b)?))),
                2 => {
                    let len = usize::try_from(varint(&mut b)?).ok()?;
                    let (field, rest) = b.split_at_checked(len)?;
                    out.push((key >> 3, Value::Bytes(field.to_vec())));
                    b = rest;
                }
                _ => return None,
            }
        }
        Some(out)
    }

    /// Field `n`'s bytes, if it is a length-delimited field.
    #[cfg(test)]
    pub fn field_bytes(fields: &[(u64, Value)], n: u64) -> Option<&[u8]> {
        fields.iter().find_map(|(k, v)| match v {
            Value::Bytes(b) if *k == n => Some(b.as_slice()),
            _ => None,
        })
    }

    /// The fields of one message, in order.
    #[cfg(test)]
    pub fn fields(b: &[u8]) -> Vec<(u64, Value)> {
        parse(b).expect("a protobuf message")
    }

    /// Field `n`'s bytes.
    #[cfg(test)]
    pub fn bytes(fields: &[(u64, Value)], n: u64) -> Vec<u8> {
        match field_bytes(fields, n) {
            Some(b) => b.to_vec(),
            None => panic!("field {n}: {fields:?}"),
        }
    }

    /// Field `n` as text.
    #[cfg(test)]
    pub fn text(fields: &[(u64, Value)], n: u64) -> String {
        String::from_utf8(bytes(fields, n)).unwrap_or_default()
    }

    /// Field `n`'s integer.
    #[cfg(test)]
    pub fn int(fields: &[(u64, Value)], n: u64) -> u64 {
        match fields.iter().find(|(k, _)| *k == n) {
            Some((_, Value::Int(v))) => *v,
            other => panic!("field {n}: {other:?}"),
        }
    }

    /// Whether field `n` is set.
    #[cfg(test)]
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

    #[test]
    fn an_error_answered_in_protobuf_reads_as_the_api_servers_status() {
        let status = Message::new()
            .string(2, "Failure")
            .string(3, "pods \"p\" not found")
            .string(4, "NotFound")
            .int(6, 404);
        let found = status_from_protobuf(&envelope("v1", "Status", &status)).unwrap();
        assert_eq!(found.message, "pods \"p\" not found");
        assert_eq!(found.reason, "NotFound");
        // What is not a protobuf Status is no Status, and reading it never panics.
        assert!(status_from_protobuf(b"{\"kind\":\"Status\"}").is_none());
        let body = envelope("v1", "Status", &status);
        for cut in 0..body.len() {
            let _ = status_from_protobuf(&body[..cut]);
        }
        assert!(
            status_from_protobuf(b"k8s\0\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff").is_none()
        );
    }

    #[tokio::test]
    async fn a_refused_create_is_an_api_error_with_the_servers_code_and_message() {
        let status = envelope(
            "v1",
            "Status",
            &Message::new()
                .string(3, "pods \"p\" not found")
                .string(4, "NotFound"),
        );
        let service = tower::service_fn(move |_: http::Request<kube::client::Body>| {
            let body = status.clone();
            async move {
                let mut answer = http::Response::new(kube::client::Body::from(body));
                *answer.status_mut() = http::StatusCode::NOT_FOUND;
                answer
                    .headers_mut()
                    .insert(header::CONTENT_TYPE, PROTOBUF.parse().unwrap());
                Ok::<_, std::convert::Infallible>(answer)
            }
        });
        let client = Client::new(service, "default");
        match send(
            &client,
            "/api/v1/namespaces/ns/pods/p/binding",
            PROTOBUF,
            vec![],
        )
        .await
        {
            Err(kube::Error::Api(s)) => {
                assert_eq!(s.code, 404);
                assert_eq!(s.message, "pods \"p\" not found");
                assert_eq!(s.reason, "NotFound");
            }
            other => panic!("{other:?}"),
        }
    }
}
