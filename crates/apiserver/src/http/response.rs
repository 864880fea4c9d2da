//! JSON responses and the mapping of [`ApiError`] to HTTP.

use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::error::ApiError;

/// A JSON response with a status code.
pub fn json(code: StatusCode, body: &Value) -> Response {
    // Serializing a `Value` cannot fail: its map keys are strings.
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        Body::from(bytes),
    )
        .into_response()
}

/// 200 with a JSON body.
pub fn ok(body: &Value) -> Response {
    json(StatusCode::OK, body)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        json(code, &self.to_status())
    }
}
