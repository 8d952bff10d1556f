//! The one layer around every route (and the fallback) that every request
//! passes: who is asking (`auth.rs`), refused at once if no one may; an
//! OPTIONS probe answered; and a body left unread by its handler closes the
//! connection after the answer.
//!
//! Written as a plain tower service rather than `axum::middleware::from_fn`
//! layers: those clone their inner service and box a future for every
//! request, which was a quarter of a heartbeat's cost (BENCHMARKS.md,
//! "Where a heartbeat's time goes").

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use super::{ApiError, ApiState, auth};

/// Puts [`Gate`] around a service.
#[derive(Clone)]
pub(super) struct GateLayer {
    state: Arc<ApiState>,
}

impl GateLayer {
    pub(super) fn new(state: ApiState) -> GateLayer {
        GateLayer {
            state: Arc::new(state),
        }
    }
}

impl<S> tower::Layer<S> for GateLayer {
    type Service = Gate<S>;

    fn layer(&self, inner: S) -> Gate<S> {
        Gate {
            inner,
            state: self.state.clone(),
        }
    }
}

/// Authenticates each request before `inner` sees it, and marks the
/// answer `Connection: close` when the request's body was not read to its
/// end.
#[derive(Clone)]
pub(super) struct Gate<S> {
    inner: S,
    state: Arc<ApiState>,
}

impl<S> tower::Service<Request> for Gate<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = GateFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // Hadoop's web clients (its AuthenticatedURL: `yarn schedulerconf`
        // among them) probe a URL with OPTIONS first and go on only on a
        // 2xx. The probe is answered, empty: nothing is done or told.
        if request.method() == axum::http::Method::OPTIONS {
            return GateFuture::Answered {
                response: Some(axum::http::StatusCode::OK.into_response()),
            };
        }
        let (parts, body) = request.into_parts();
        // Only a body that may still hold bytes is watched.
        let read_to_end = (!body.is_end_stream()).then(|| Arc::new(AtomicBool::new(false)));
        let body = match &read_to_end {
            None => body,
            Some(done) => Body::new(ReadToEnd {
                inner: body,
                done: done.clone(),
            }),
        };
        let mut request = Request::from_parts(parts, body);
        // A panic while authenticating is one 500 (logged and counted), as
        // one in a handler is.
        let refusal = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            auth::admit(&self.state, &mut request)
        })) {
            Ok(Ok(())) => {
                return GateFuture::Admitted {
                    future: self.inner.call(request),
                    read_to_end,
                };
            }
            Ok(Err(refusal)) => refusal.into_response(),
            Err(payload) => {
                tracing::error!("a panic while authenticating a request");
                super::error::panic_response(payload)
            }
        };
        GateFuture::Answered {
            response: Some(close_unless_read(refusal, &read_to_end)),
        }
    }
}

pin_project_lite::pin_project! {
    /// The answer of a [`Gate`]: the inner service's, or its own (a
    /// refusal, or an OPTIONS probe's).
    #[project = GateProjection]
    pub(super) enum GateFuture<F> {
        Admitted { #[pin] future: F, read_to_end: Option<Arc<AtomicBool>> },
        Answered { response: Option<Response> },
    }
}

impl<F> Future for GateFuture<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            GateProjection::Admitted {
                future,
                read_to_end,
            } => future
                .poll(cx)
                .map(|answer| answer.map(|response| close_unless_read(response, read_to_end))),
            GateProjection::Answered { response } => Poll::Ready(Ok(response
                .take()
                .unwrap_or_else(|| ApiError::internal("an answer polled twice").into_response()))),
        }
    }
}

/// `response`, saying `Connection: close` if the request's body was left
/// unread: the server cannot keep the connection for another request
/// without reading the rest first (a chunked body's end may not even have
/// arrived), so hyper closes it after the answer, and saying so keeps a
/// client from sending its next request down it.
fn close_unless_read(mut response: Response, read_to_end: &Option<Arc<AtomicBool>>) -> Response {
    if read_to_end
        .as_ref()
        .is_some_and(|done| !done.load(Ordering::Relaxed))
    {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// A request body that records whether it was read to its end.
struct ReadToEnd {
    inner: Body,
    done: Arc<AtomicBool>,
}

impl HttpBody for ReadToEnd {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) {
            this.done.store(true, Ordering::Relaxed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
