//! Typed policy events: each one writes its log line and updates its metrics
//! in one place, so the two never disagree.

use super::{CallError, LoadError, PolicyKind, PolicyVersion};
use crate::metrics::{FailureLabels, KindLabels, OutcomeLabels, PolicyLabels, metrics};
use std::sync::Arc;
use std::time::Duration;

pub(super) enum PolicyEvent<'a> {
    Loaded {
        version: &'a PolicyVersion,
    },
    LoadRefused {
        kind: PolicyKind,
        source: &'a str,
        error: &'a LoadError,
    },
    ShadowLoaded {
        version: &'a PolicyVersion,
    },
    CallSucceeded {
        version: &'a PolicyVersion,
        elapsed: Duration,
    },
    CallFailed {
        version: &'a PolicyVersion,
        error: &'a CallError,
        consecutive: u32,
    },
    FellBack {
        kind: PolicyKind,
        from: &'a PolicyVersion,
        to: &'a PolicyVersion,
    },
    RolledBack {
        kind: PolicyKind,
        from: &'a PolicyVersion,
        to: &'a PolicyVersion,
        automatic: bool,
        reason: &'a str,
    },
}

impl<'a> PolicyEvent<'a> {
    pub(super) fn loaded(
        kind: PolicyKind,
        source: &'a str,
        result: &'a Result<Arc<PolicyVersion>, LoadError>,
    ) -> Self {
        match result {
            Ok(version) => PolicyEvent::Loaded { version },
            Err(error) => PolicyEvent::LoadRefused {
                kind,
                source,
                error,
            },
        }
    }

    /// As [`loaded`](Self::loaded), for a version loaded as a shadow.
    pub(super) fn shadow_loaded(
        kind: PolicyKind,
        source: &'a str,
        result: &'a Result<Arc<PolicyVersion>, LoadError>,
    ) -> Self {
        match result {
            Ok(version) => PolicyEvent::ShadowLoaded { version },
            Err(error) => PolicyEvent::LoadRefused {
                kind,
                source,
                error,
            },
        }
    }

    pub(super) fn emit(&self) {
        let m = metrics();
        match self {
            PolicyEvent::Loaded { version } => {
                let i = &version.info;
                tracing::info!(kind = %i.kind, policy = %i.name, version = %i.version, sha256 = %i.sha256, source = %i.source, "policy loaded and published");
                m.policy_loads
                    .get_or_create(&outcome(i.kind, "published"))
                    .inc();
            }
            PolicyEvent::ShadowLoaded { version } => {
                let i = &version.info;
                tracing::info!(kind = %i.kind, policy = %i.name, version = %i.version, sha256 = %i.sha256, source = %i.source, "policy loaded as a shadow beside the active one");
                m.policy_loads
                    .get_or_create(&outcome(i.kind, "shadow"))
                    .inc();
            }
            PolicyEvent::LoadRefused {
                kind,
                source,
                error,
            } => {
                tracing::warn!(%kind, source, %error, "policy load refused; the active version stays");
                m.policy_loads
                    .get_or_create(&outcome(*kind, "refused"))
                    .inc();
            }
            PolicyEvent::CallSucceeded { version, elapsed } => {
                let i = &version.info;
                m.policy_calls
                    .get_or_create(&PolicyLabels {
                        kind: i.kind.to_string(),
                        policy: crate::metrics::label(&i.name),
                    })
                    .inc();
                m.policy_call_seconds
                    .get_or_create(&KindLabels {
                        kind: i.kind.to_string(),
                    })
                    .observe(elapsed.as_secs_f64());
            }
            PolicyEvent::CallFailed {
                version,
                error,
                consecutive,
            } => {
                let i = &version.info;
                tracing::warn!(kind = %i.kind, policy = %i.name, version = %i.version, %error, consecutive, "policy call failed");
                m.policy_failures
                    .get_or_create(&FailureLabels {
                        kind: i.kind.to_string(),
                        policy: crate::metrics::label(&i.name),
                        reason: error.reason().into(),
                    })
                    .inc();
            }
            PolicyEvent::FellBack { kind, from, to } => {
                tracing::info!(%kind, from = %from.info.sha256, to = %to.info.sha256, "call answered by the last good version");
                m.policy_fallbacks
                    .get_or_create(&KindLabels {
                        kind: kind.to_string(),
                    })
                    .inc();
            }
            PolicyEvent::RolledBack {
                kind,
                from,
                to,
                automatic,
                reason,
            } => {
                tracing::warn!(%kind, from = %from.info.name, from_sha256 = %from.info.sha256, to = %to.info.name, to_sha256 = %to.info.sha256, automatic, reason, "policy rolled back");
                let cause = if *automatic { "automatic" } else { "operator" };
                m.policy_rollbacks
                    .get_or_create(&outcome(*kind, cause))
                    .inc();
            }
        }
    }
}

fn outcome(kind: PolicyKind, outcome: &str) -> OutcomeLabels {
    OutcomeLabels {
        kind: kind.to_string(),
        outcome: outcome.into(),
    }
}
