//! The stylesheet and the script, compiled into the binary (no frontend build).

use axum::{
    extract::Path,
    http::{header, StatusCode},
    response::{IntoResponse, Response},
};

pub(crate) const CSS_PATH: &str = "/assets/console.css";
pub(crate) const JS_PATH: &str = "/assets/console.js";

const CSS: &str = include_str!("assets/console.css");
const JS: &str = include_str!("assets/console.js");

pub(super) async fn serve(Path(file): Path<String>) -> Response {
    let (body, kind) = match file.as_str() {
        "console.css" => (CSS, "text/css; charset=utf-8"),
        "console.js" => (JS, "text/javascript; charset=utf-8"),
        _ => return (StatusCode::NOT_FOUND, "no such asset").into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        body,
    )
        .into_response()
}
