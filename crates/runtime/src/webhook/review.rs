//! AdmissionReview (`admission.k8s.io/v1`) in and out: the request is read untyped, so a field
//! this program does not model never fails a review.

use base64::Engine;
use serde_json::{Value, json};
use volcano_controllers::admission::{
    AdmissionSettings, AdmissionView, Endpoint, Operation, Request, Verdict, review,
};

/// Answers the AdmissionReview `body` sent to `endpoint`. A body that is not a review gets a
/// review that refuses, saying why, so the API server reports our reason.
pub fn answer(
    endpoint: Endpoint,
    body: &Value,
    view: &dyn AdmissionView,
    settings: &AdmissionSettings,
) -> Value {
    let request = body.get("request");
    let uid = request
        .and_then(|r| r.get("uid"))
        .cloned()
        .unwrap_or(Value::String(String::new()));
    let api_version = body
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("admission.k8s.io/v1");
    let respond = |response: Value| json!({"apiVersion": api_version, "kind": "AdmissionReview", "response": response});
    let Some(request) = request else {
        return respond(denial(&uid, "the AdmissionReview has no request"));
    };
    let op_text = request
        .get("operation")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(operation) = Operation::parse(op_text) else {
        return respond(denial(&uid, &format!("unknown operation {op_text:?}")));
    };
    let present = |key: &str| request.get(key).filter(|v| !v.is_null());
    let verdict = review(
        Request {
            endpoint,
            operation,
            object: present("object"),
            old_object: present("oldObject"),
        },
        view,
        settings,
    );
    let name = request
        .get("name")
        .and_then(|n| n.as_str())
        .unwrap_or_default();
    tracing::debug!(
        path = endpoint.path(),
        operation = op_text,
        name,
        allowed = matches!(verdict, Verdict::Allowed(_)),
        "admission review"
    );
    respond(match verdict {
        Verdict::Denied(why) => denial(&uid, &why),
        Verdict::Allowed(patch) if patch.is_empty() => json!({"uid": uid, "allowed": true}),
        Verdict::Allowed(patch) => {
            let bytes = patch.to_json().to_string();
            json!({
                "uid": uid,
                "allowed": true,
                "patchType": "JSONPatch",
                "patch": base64::engine::general_purpose::STANDARD.encode(bytes),
            })
        }
    })
}

/// A refusal as Volcano's webhooks give it: a message and no code, which the API server turns
/// into 400 "admission webhook ... denied the request: <message>".
fn denial(uid: &Value, message: &str) -> Value {
    json!({"uid": uid, "allowed": false, "status": {"message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use volcano_api::scheduling::Queue;

    struct NoQueues;
    impl AdmissionView for NoQueues {
        fn queue(&self, _: &str) -> Option<Queue> {
            None
        }
        fn queues(&self) -> Vec<Queue> {
            Vec::new()
        }
    }

    #[test]
    fn a_refusal_carries_the_uid_and_volcanos_message() {
        let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u-1", "operation": "CREATE", "name": "pg",
            "object": {"metadata": {"name": "pg", "namespace": "ns"},
                "spec": {"queue": "gone", "minMember": 1}}}});
        let out = answer(
            Endpoint::PodGroupsValidate,
            &body,
            &NoQueues,
            &AdmissionSettings::default(),
        );
        assert_eq!(out["response"]["uid"], "u-1");
        assert_eq!(out["response"]["allowed"], false);
        assert_eq!(
            out["response"]["status"]["message"],
            "unable to find queue: queue.scheduling.volcano.sh \"gone\" not found"
        );
    }

    #[test]
    fn defaults_travel_as_a_base64_json_patch() {
        let body = json!({"request": {"uid": "u-2", "operation": "CREATE",
            "object": {"metadata": {"name": "q"}, "spec": {}}}});
        let out = answer(
            Endpoint::QueuesMutate,
            &body,
            &NoQueues,
            &AdmissionSettings::default(),
        );
        assert_eq!(out["response"]["patchType"], "JSONPatch");
        let patch = out["response"]["patch"].as_str().unwrap_or_default();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .unwrap_or_default();
        let ops: Value = serde_json::from_slice(&decoded).unwrap_or(Value::Null);
        assert_eq!(ops[0]["path"], "/spec/reclaimable");
    }
}
