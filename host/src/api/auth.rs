//! Authentication of every request, before any handler runs: the caller
//! (see `security::Authenticator`) goes into the request's extensions, or the
//! request ends here — 401 without valid credentials, 400 for malformed ones.

use axum::extract::Request;

use super::{ApiError, ApiState, openapi};
use crate::metrics::{WhatLabels, metrics};
use crate::security::{AuthError, USER_HEADER};

/// Lets `request` on with its caller in its extensions, or refuses it
/// (counted in `weft_requests_refused_total`).
pub(super) fn admit(state: &ApiState, request: &mut Request) -> Result<(), ApiError> {
    let refused = |what: &str| {
        metrics()
            .requests_refused
            .get_or_create(&WhatLabels { what: what.into() })
            .inc();
    };
    if let Some(refusal) = cross_site_change(request) {
        refused("cross-site");
        return Err(refusal);
    }
    // The API's description and the web UI's files are public, as a
    // login page is (the page then asks the API with credentials).
    let path = request.uri().path();
    if path == openapi::PATH || super::ui::is_ui_path(path) {
        return Ok(());
    }
    let headers = request.headers();
    let header = |name: &str| {
        headers
            .get(name)
            .map(|value| {
                value
                    .to_str()
                    .map_err(|_| AuthError::Malformed(format!("the {name} header is not text")))
            })
            .transpose()
    };
    // Simple mode also takes Hadoop's pseudo authentication, the
    // `user.name` query parameter its web clients send, when there is no
    // header: it is believed as the header is.
    let user = header(USER_HEADER).and_then(|user| {
        let authorization = header(axum::http::header::AUTHORIZATION.as_str())?;
        let user = user.filter(|u| !u.trim().is_empty());
        let simple = state.authenticator.mode() == crate::config::Authentication::Simple;
        let query_user = match user {
            None if simple => query_user_name(request.uri().query())?,
            _ => None,
        };
        state
            .authenticator
            .authenticate(user.or(query_user.as_deref()), authorization)
    });
    match user {
        Ok(user) => {
            let caller = state.security.caller(&user);
            request.extensions_mut().insert(caller);
            Ok(())
        }
        Err(error @ AuthError::Malformed(_)) => {
            refused("malformed credentials");
            Err(ApiError::bad_request(&error))
        }
        Err(error) => {
            refused("unauthenticated");
            Err(ApiError::unauthorized(&error))
        }
    }
}

/// The first `user.name` parameter of a query string, decoded: visible
/// ASCII, as a header's value is, within the bounds of a name.
fn query_user_name(query: Option<&str>) -> Result<Option<String>, AuthError> {
    let Some(query) = query else {
        return Ok(None);
    };
    let Some((_, user)) = form_urlencoded::parse(query.as_bytes()).find(|(n, _)| n == "user.name")
    else {
        return Ok(None);
    };
    if !user.chars().all(|c| c.is_ascii_graphic() || c == ' ') {
        return Err(AuthError::Malformed(
            "user.name: only visible ASCII characters".into(),
        ));
    }
    crate::limits::name("user.name", &user).map_err(|e| AuthError::Malformed(e.to_string()))?;
    Ok(Some(user.into_owned()))
}

/// A request that would change something, sent by a browser from another
/// site (a page the user happens to visit posting to this server: in
/// simple mode that is anyone, administrators included). Browsers say
/// where a request comes from (`Origin`, `Sec-Fetch-Site`); the CLI,
/// agents and YARN clients send neither and are unaffected.
fn cross_site_change(request: &Request) -> Option<ApiError> {
    use axum::http::Method;
    // YARN's format of the scheduler configuration is a GET that changes it.
    if matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    ) && request.uri().path() != super::scheduler_conf::FORMAT_PATH
    {
        return None;
    }
    let headers = request.headers();
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    // Another site's page, or another port's on this host (same-site):
    // only this origin's own pages, or a user's own navigation (none).
    if text("sec-fetch-site").is_some_and(|site| {
        !site.eq_ignore_ascii_case("same-origin") && !site.eq_ignore_ascii_case("none")
    }) {
        return Some(ApiError::forbidden(
            "a request from another site's page may not change anything here",
        ));
    }
    let host = text("host").unwrap_or_default();
    // A GET that changes something carries no Origin; the page it comes
    // from is in its Referer (scheme://host[:port]/…), unless hidden.
    if let Some(referer) = text("referer") {
        let after_scheme = referer.split_once("://").map_or(referer, |(_, rest)| rest);
        let referer_host = after_scheme.split('/').next().unwrap_or_default();
        if !referer_host.eq_ignore_ascii_case(host) {
            return Some(ApiError::forbidden(format!(
                "a request from the page at {} may not change anything on {}: cross-site requests are refused",
                crate::limits::cut(referer, 100),
                crate::limits::cut(host, 100)
            )));
        }
    }
    let origin = text("origin")?;
    // `Origin` is scheme://host[:port]; the request's own Host must match.
    let origin_host = origin.split_once("://").map_or(origin, |(_, rest)| rest);
    if origin_host.eq_ignore_ascii_case(host) {
        return None;
    }
    Some(ApiError::forbidden(format!(
        "a request from the page at {} may not change anything on {}: cross-site requests are refused",
        crate::limits::cut(origin, 100),
        crate::limits::cut(host, 100)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, headers: &[(&str, &str)]) -> Request {
        let mut builder = Request::builder().method(method).uri("/ws/v1/cluster/apps");
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(axum::body::Body::empty()).unwrap()
    }

    #[test]
    fn browsers_from_other_sites_may_read_but_not_change() {
        let host = ("host", "127.0.0.1:8088");
        // The CLI and agents: no Origin.
        assert!(cross_site_change(&request("POST", &[host])).is_none());
        // The web UI itself.
        let own = ("origin", "http://127.0.0.1:8088");
        assert!(cross_site_change(&request("POST", &[host, own])).is_none());
        // Another site's page, however it dresses the request.
        let other = ("origin", "http://localhost:18765");
        assert!(cross_site_change(&request("POST", &[host, other])).is_some());
        assert!(cross_site_change(&request("PUT", &[host, ("origin", "null")])).is_some());
        assert!(
            cross_site_change(&request(
                "DELETE",
                &[host, ("sec-fetch-site", "cross-site")]
            ))
            .is_some()
        );
        // Reads are left to the browser's own rules (CORS).
        assert!(cross_site_change(&request("GET", &[host, other])).is_none());
        // Another port's page on this host is another site too.
        assert!(
            cross_site_change(&request("POST", &[host, ("sec-fetch-site", "same-site")])).is_some()
        );
    }

    #[test]
    fn the_format_get_changes_and_is_guarded_as_a_change() {
        let format = |headers: &[(&str, &str)]| {
            let mut builder = Request::builder()
                .method("GET")
                .uri("/ws/v1/cluster/scheduler-conf/format?user.name=root");
            for (name, value) in headers {
                builder = builder.header(*name, *value);
            }
            cross_site_change(&builder.body(axum::body::Body::empty()).unwrap())
        };
        let host = ("host", "127.0.0.1:8088");
        // YARN's CLI: no browser headers.
        assert!(format(&[host]).is_none());
        // An <img> on another port of this host, or another site.
        assert!(format(&[host, ("sec-fetch-site", "same-site")]).is_some());
        assert!(format(&[host, ("referer", "http://127.0.0.1:9999/page")]).is_some());
        assert!(format(&[host, ("referer", "http://127.0.0.1:8088/ui/")]).is_none());
    }
}
