//! GET /ws/v1/accounting: ended apps' accounting records, as JSON or CSV,
//! a page at a time (seed 002 §6).

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use super::extract::ApiQuery;
use super::openapi::RemoteException;
use super::{ApiError, ApiState};
use crate::accounting::export::{self, Page, Query};
use crate::refusal::Refusal;
use crate::rm::ResourceManager;
use crate::security::Caller;

/// The header that carries the next page's cursor in a CSV answer.
pub(super) const NEXT_HEADER: &str = "x-weft-next";

/// Pages read at once: a read holds the store, which the event loop's
/// commits wait for, so readers queue here rather than there.
static READS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// Which records, and in what form.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct AccountingQuery {
    /// Finished at or after: ms since the epoch, YYYY-MM-DD (UTC) or RFC 3339.
    from: Option<String>,
    /// Finished before (same forms).
    to: Option<String>,
    project: Option<String>,
    /// A user's records; users who are not administrators see only theirs.
    user: Option<String>,
    /// `json` (the default) or `csv`.
    format: Option<String>,
    /// At most this many records (1 to 10,000; default 10,000).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<u64>,
    /// The `next` cursor of the page before (in CSV: the X-Weft-Next header).
    after: Option<u64>,
}

enum Format {
    Json,
    Csv,
}

impl AccountingQuery {
    fn check(self, caller: &Caller, admin: bool) -> Result<(Query, Format), ApiError> {
        let bad = |e: crate::limits::OutOfBounds| ApiError::bad_request(e);
        let time = |field: &str, text: Option<String>| {
            text.map(|t| export::parse_time(field, &t)).transpose()
        };
        let format = match self.format.as_deref().map(str::trim) {
            None | Some("json") => Format::Json,
            Some("csv") => Format::Csv,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "format is {:?}, but must be json or csv",
                    crate::limits::cut(other, 40)
                )));
            }
        };
        for (field, value) in [("project", &self.project), ("user", &self.user)] {
            if let Some(value) = value {
                crate::limits::name(field, value).map_err(bad)?;
            }
        }
        let user = match self.user {
            Some(user) if !admin && user != caller.user => {
                return Err(ApiError::forbidden(format!(
                    "user {} may read only their own accounting records, not {user}'s (administrators read all)",
                    caller.user
                )));
            }
            None if !admin => Some(caller.user.clone()),
            user => user,
        };
        let limit = self
            .limit
            .map(|l| {
                crate::limits::within("limit", l, 1, crate::limits::MAX_ACCOUNTING_PAGE as u64)
            })
            .transpose()
            .map_err(bad)?;
        let query = Query {
            from: time("from", self.from).map_err(bad)?,
            to: time("to", self.to).map_err(bad)?,
            project: self.project,
            user,
            after: self.after,
            limit: limit.map(|l| l as usize),
        };
        Ok((query, format))
    }
}

/// Ended apps' records — user, app, queue, project, memorySeconds,
/// vcoreSeconds, gpuSeconds, containers run and failed, times, final
/// status, credits — finished in [from, to), in the order they became
/// final (a record that came late is never behind a cursor already given).
/// A full page carries the cursor of the next (`next`; in CSV the
/// X-Weft-Next header).
#[utoipa::path(get, path = "/ws/v1/accounting", tag = "accounting", params(AccountingQuery),
    responses((status = 200, content((Page = "application/json"), (String = "text/csv"))),
        (status = 400, body = RemoteException), (status = 401, body = RemoteException),
        (status = 403, body = RemoteException),
        (status = 503, description = "accounting is off (weft.accounting.enabled = false)", body = RemoteException)))]
pub(super) async fn records(
    State(state): State<ApiState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<AccountingQuery>,
) -> Result<Response, ApiError> {
    let admin = state.security.is_admin(&caller);
    let (query, format) = query.check(&caller, admin)?;
    let store = state
        .rm
        .with(|rm: &mut ResourceManager| rm.accounting_store())
        .await?
        .map_err(|off| ApiError::refused(Refusal::Off, off))?;
    let page = match store {
        // Off the event loop: a page is up to 10,000 rows.
        Some(store) => {
            let _turn = READS
                .acquire()
                .await
                .map_err(|e| ApiError::internal(format!("accounting reads closed: {e}")))?;
            tokio::task::spawn_blocking(move || export::query(&store, &query))
                .await
                .map_err(|e| ApiError::internal(format!("the accounting read failed: {e}")))?
                .map_err(|e| ApiError::internal(format!("accounting records unreadable: {e}")))?
        }
        None => Page {
            records: Vec::new(),
            next: None,
        },
    };
    Ok(match format {
        Format::Json => Json(page).into_response(),
        Format::Csv => csv(page),
    })
}

fn csv(page: Page) -> Response {
    let mut body = export::csv_header();
    for record in &page.records {
        body.push_str(&export::csv_line(record));
    }
    let mut response = ([(header::CONTENT_TYPE, "text/csv; charset=utf-8")], body).into_response();
    if let Some(next) = page.next {
        response
            .headers_mut()
            .insert(NEXT_HEADER, HeaderValue::from(next));
    }
    response
}
