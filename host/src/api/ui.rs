//! The web UI: the files of `host/ui/` compiled into the binary and served
//! at `/` (the page) and `/ui/…` (its modules and styles) to anyone, as a
//! login page is; everything it shows comes from the authenticated API.
//! Also GET /ws/v1/whoami, which the page asks to offer only what the
//! caller may do.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use super::openapi::RemoteException;
use super::{ApiError, ApiState};
use crate::config::Authentication;
use crate::security::Caller;

#[derive(rust_embed::Embed)]
#[folder = "ui/"]
struct Assets;

/// What a browser may do with the page: its own scripts and styles, the
/// API of this server, nothing else (names on the page are users' text).
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or_default() {
        "html" => "text/html; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "json" => "application/json",
        _ => "application/octet-stream",
    }
}

fn asset_response(path: &str) -> Response {
    let Some(file) = Assets::get(path) else {
        return ApiError::not_found(format!("no UI file {path:?}")).into_response();
    };
    let mut response = (StatusCode::OK, file.data.into_owned()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(path)),
    );
    // Revalidated each time: an upgraded server serves its own page.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

/// The page.
pub(super) async fn index() -> Response {
    asset_response("index.html")
}

/// One of the page's files.
pub(super) async fn asset(Path(path): Path<String>) -> Response {
    asset_response(&path)
}

/// Whether `path` is the UI's (served without credentials).
pub(super) fn is_ui_path(path: &str) -> bool {
    path == "/" || path.starts_with("/ui/")
}

/// Who the caller is, as the server sees them.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct WhoAmI {
    pub user: String,
    /// Whether they administer the cluster (`yarn.admin.acl`).
    pub admin: bool,
    /// `simple` (the X-Weft-User header) or `token` (a bearer token).
    pub authentication: &'static str,
}

/// The caller: their user name, whether they are an administrator, and
/// how this server authenticates.
#[utoipa::path(get, path = "/ws/v1/whoami", tag = "cluster",
    responses((status = 200, body = WhoAmI), (status = 401, body = RemoteException)))]
pub(super) async fn whoami(State(state): State<ApiState>, caller: Caller) -> Json<WhoAmI> {
    Json(WhoAmI {
        admin: state.security.is_admin(&caller),
        user: caller.user,
        authentication: match state.authenticator.mode() {
            Authentication::Simple => "simple",
            Authentication::Token => "token",
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_is_embedded_with_a_type_a_browser_runs() {
        let files: Vec<String> = Assets::iter().map(|f| f.to_string()).collect();
        assert!(files.contains(&"index.html".to_string()), "{files:?}");
        assert!(files.iter().any(|f| f.ends_with(".js")), "{files:?}");
        for file in &files {
            assert_ne!(
                content_type(file),
                "application/octet-stream",
                "{file} has no known type"
            );
        }
        let index =
            String::from_utf8(Assets::get("index.html").unwrap().data.into_owned()).unwrap();
        assert!(index.contains("type=\"module\""), "{index}");
    }
}
