//! The process's Prometheus metrics, rendered at `GET /metrics`. Metrics are
//! updated from the typed events in `events.rs`, so a log line and its metric
//! never disagree.

use std::sync::OnceLock;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
/// Labels of a policy's successful calls: its kind and name.
pub struct PolicyLabels {
    /// The policy kind: `scheduling`, `pricing` or `sharing`.
    pub kind: String,
    /// The name the policy's `describe` gave, escaped with [`label`].
    pub policy: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
/// Labels of a policy's failed calls: its kind, name and why it failed.
pub struct FailureLabels {
    /// The policy kind: `scheduling`, `pricing` or `sharing`.
    pub kind: String,
    /// The name the policy's `describe` gave, escaped with [`label`].
    pub policy: String,
    /// `CallError::reason`: `timeout`, `memory`, `trap`, `invalid-output`,
    /// `refused`, `no-policy` or `instance-pool`.
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
/// The one label of a per-kind policy metric.
pub struct KindLabels {
    /// The policy kind: `scheduling`, `pricing` or `sharing`.
    pub kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
/// Labels of a policy event counted by how it ended: loads, rollbacks and
/// shadow calls.
pub struct OutcomeLabels {
    /// The policy kind: `scheduling`, `pricing` or `sharing`.
    pub kind: String,
    /// How it ended: for loads `published`, `shadow` or `refused`; for
    /// rollbacks `operator` or `automatic`; for shadow calls `same`,
    /// `differing`, `failed` or `dropped`.
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
/// The one label of the applications gauge.
pub struct StateLabels {
    /// The YARN application state: `ACCEPTED`, `RUNNING`, `FINISHED` or
    /// `KILLED`.
    pub state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
/// The one label of a count of things that went wrong, saying which.
pub struct WhatLabels {
    /// For panics, the event loop's command or timer (or `http handler`);
    /// for refused requests, the reason (`unauthenticated`, `cross-site`,
    /// `body too large`, …).
    pub what: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
/// The one label of a per-project quota metric.
pub struct ProjectLabels {
    /// The project's name (HopsYARN's project), escaped with [`label`].
    pub project: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
/// Labels of the credits a pricing shadow compares: the project, and which
/// policy charged them.
pub struct ShadowCreditLabels {
    /// The project's name, escaped with [`label`].
    pub project: String,
    /// `active` or `shadow`.
    pub policy: String,
}

/// Every metric the process exports, registered under the prefix `weft_`;
/// each field's doc gives its exported name. One per process: [`metrics`].
pub struct Metrics {
    registry: Registry,
    /// `weft_policy_calls_total`: policy calls that returned a valid result.
    pub policy_calls: Family<PolicyLabels, Counter>,
    /// `weft_policy_failures_total`: policy calls that trapped, timed out or
    /// returned output the host refused.
    pub policy_failures: Family<FailureLabels, Counter>,
    /// `weft_policy_fallbacks_total`: calls the last good version answered
    /// after the active one failed.
    pub policy_fallbacks: Family<KindLabels, Counter>,
    /// `weft_policy_rollbacks_total`: rollbacks, by cause (`operator` or
    /// `automatic`).
    pub policy_rollbacks: Family<OutcomeLabels, Counter>,
    /// `weft_policy_loads_total`: policy loads, by outcome.
    pub policy_loads: Family<OutcomeLabels, Counter>,
    /// `weft_policy_call_seconds`: latency of successful policy calls, in
    /// seconds (buckets from 1 µs to about 1 s).
    pub policy_call_seconds: Family<KindLabels, Histogram>,
    /// `weft_policy_shadow_calls_total`: live calls a shadow answered beside
    /// the active version, by outcome.
    pub policy_shadow_calls: Family<OutcomeLabels, Counter>,
    /// `weft_policy_shadow_credits_total`: credits charged while a pricing
    /// shadow ran, per project, by the active policy and as the shadow
    /// would have charged them.
    pub policy_shadow_credits: Family<ShadowCreditLabels, Counter<f64, AtomicU64>>,
    /// `weft_policy_compile_cache_hits_total`: components read compiled from
    /// the disk cache instead of compiled.
    pub policy_compile_cache_hits: Counter,
    /// `weft_policy_compile_cache_misses_total`: components the disk cache
    /// did not hold (or held damaged), compiled.
    pub policy_compile_cache_misses: Counter,
    /// `weft_policy_compile_cache_discarded_total`: disk cache entries found
    /// damaged or unusable, deleted and compiled again.
    pub policy_compile_cache_discarded: Counter,
    /// `weft_apps`: applications by state, set before each scrape.
    pub apps: Family<StateLabels, Gauge>,
    /// `weft_containers_running`: containers running now.
    pub containers_running: Gauge,
    /// `weft_containers_allocated_total`: containers allocated since start.
    pub containers_allocated: Counter,
    /// `weft_credits_charged_total`: credits charged to each project since
    /// start.
    pub credits_charged: Family<ProjectLabels, Counter<f64, AtomicU64>>,
    /// `weft_project_credits_remaining`: credits each project has left
    /// (negative: in debt).
    pub project_credits_remaining: Family<ProjectLabels, Gauge<f64, AtomicU64>>,
    /// `weft_project_burn_rate_per_hour`: credits each project spent over
    /// the last hour.
    pub project_burn_rate: Family<ProjectLabels, Gauge<f64, AtomicU64>>,
    /// `weft_project_budget_low`: 1 while a project has fewer credits left
    /// than `weft.quota.budget.warn-credits` (exhausted included), else 0.
    pub project_budget_low: Family<ProjectLabels, Gauge>,
    /// `weft_project_budget_exhausted`: 1 while a project has no credits
    /// left, else 0.
    pub project_budget_exhausted: Family<ProjectLabels, Gauge>,
    /// `weft_budget_preemptions_total`: running containers preempted because
    /// their project ran out of credits (stop-running).
    pub budget_preemptions: Counter,
    /// `weft_reclaim_preemptions_total`: running containers reclaim took
    /// back for starved queues.
    pub reclaim_preemptions: Counter,
    /// `weft_reclaim_marked_total`: running containers reclaim marked for
    /// preemption (their masters told; killed after `max_wait_before_kill`
    /// if still chosen).
    pub reclaim_marked: Counter,
    /// `weft_reclaim_observed_total`: containers reclaim would have taken
    /// back, under `…preemption.observe_only` (none was).
    pub reclaim_observed: Counter,
    /// `weft_containers_lost_total`: containers lost with their node
    /// (ABORTED, exit status -100) and asked for again.
    pub containers_lost: Counter,
    /// `weft_event_loop_panics_total`: commands and timers that panicked and
    /// were caught, by what panicked.
    pub event_loop_panics: Family<WhatLabels, Counter>,
    /// `weft_requests_refused_total`: requests refused before any handler
    /// ran, by reason.
    pub requests_refused: Family<WhatLabels, Counter>,
    /// `weft_store_commit_seconds`: time to write one event's changes to the
    /// store in one transaction, in seconds (buckets from 50 µs to about
    /// 3 s).
    pub store_commit_seconds: Histogram,
    /// `weft_store_commit_failures_total`: commits the store refused (their
    /// writes are kept and tried again).
    pub store_commit_failures: Counter,
    /// `weft_ha_active`: 1 while this server is the active resource
    /// manager, 0 while it stands by.
    pub ha_active: Gauge,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

/// A label value as the text exposition must carry it: backslash, double
/// quote and line feed escaped (the encoder writes values as given, and a
/// project or policy name is the caller's text).
pub fn label(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '"' => escaped.push_str("\\\""),
            '\n' => escaped.push_str("\\n"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// The process-wide metrics.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::with_prefix("weft");
        let policy_call_seconds = Family::<KindLabels, Histogram>::new_with_constructor(|| {
            // 1 µs .. ~1 s, doubling.
            Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
                1e-6, 2.0, 21,
            ))
        });
        let metrics = Metrics {
            registry: Registry::default(),
            policy_calls: Family::default(),
            policy_failures: Family::default(),
            policy_fallbacks: Family::default(),
            policy_rollbacks: Family::default(),
            policy_loads: Family::default(),
            policy_call_seconds,
            policy_shadow_calls: Family::default(),
            policy_shadow_credits: Family::default(),
            policy_compile_cache_hits: Counter::default(),
            policy_compile_cache_misses: Counter::default(),
            policy_compile_cache_discarded: Counter::default(),
            apps: Family::default(),
            containers_running: Gauge::default(),
            containers_allocated: Counter::default(),
            credits_charged: Family::default(),
            project_credits_remaining: Family::default(),
            project_burn_rate: Family::default(),
            project_budget_low: Family::default(),
            project_budget_exhausted: Family::default(),
            budget_preemptions: Counter::default(),
            reclaim_preemptions: Counter::default(),
            reclaim_observed: Counter::default(),
            reclaim_marked: Counter::default(),
            containers_lost: Counter::default(),
            event_loop_panics: Family::default(),
            requests_refused: Family::default(),
            // 50 µs .. ~3 s, doubling.
            store_commit_seconds: Histogram::new(
                prometheus_client::metrics::histogram::exponential_buckets(50e-6, 2.0, 17),
            ),
            store_commit_failures: Counter::default(),
            ha_active: Gauge::default(),
        };
        registry.register(
            "policy_calls",
            "Policy calls that returned a valid result",
            metrics.policy_calls.clone(),
        );
        registry.register(
            "policy_failures",
            "Policy calls that trapped, timed out or returned invalid output",
            metrics.policy_failures.clone(),
        );
        registry.register(
            "policy_fallbacks",
            "Calls answered by the last good version after the active one failed",
            metrics.policy_fallbacks.clone(),
        );
        registry.register(
            "policy_rollbacks",
            "Rollbacks, by cause (operator or automatic)",
            metrics.policy_rollbacks.clone(),
        );
        registry.register(
            "policy_loads",
            "Policy loads, by outcome",
            metrics.policy_loads.clone(),
        );
        registry.register(
            "policy_call_seconds",
            "Latency of policy calls",
            metrics.policy_call_seconds.clone(),
        );
        registry.register(
            "policy_shadow_calls",
            "Live calls a shadow policy answered beside the active one, by outcome (same, differing, failed, dropped)",
            metrics.policy_shadow_calls.clone(),
        );
        registry.register(
            "policy_shadow_credits",
            "Credits charged while a pricing shadow ran, per project, by the active policy and as the shadow would have",
            metrics.policy_shadow_credits.clone(),
        );
        registry.register(
            "policy_compile_cache_hits",
            "Policy components read compiled from the disk cache instead of compiled",
            metrics.policy_compile_cache_hits.clone(),
        );
        registry.register(
            "policy_compile_cache_misses",
            "Policy components the disk cache did not hold, compiled",
            metrics.policy_compile_cache_misses.clone(),
        );
        registry.register(
            "policy_compile_cache_discarded",
            "Disk cache entries found damaged or unusable, deleted and compiled again",
            metrics.policy_compile_cache_discarded.clone(),
        );
        registry.register("apps", "Applications by state", metrics.apps.clone());
        registry.register(
            "containers_running",
            "Containers running now",
            metrics.containers_running.clone(),
        );
        registry.register(
            "containers_allocated",
            "Containers allocated since start",
            metrics.containers_allocated.clone(),
        );
        registry.register(
            "credits_charged",
            "Credits charged to projects since start",
            metrics.credits_charged.clone(),
        );
        registry.register(
            "project_credits_remaining",
            "Credits each project has left (negative: in debt)",
            metrics.project_credits_remaining.clone(),
        );
        registry.register(
            "project_burn_rate_per_hour",
            "Credits each project spent per hour over the last hour",
            metrics.project_burn_rate.clone(),
        );
        registry.register(
            "project_budget_low",
            "1 while a project has fewer credits left than weft.quota.budget.warn-credits (or none)",
            metrics.project_budget_low.clone(),
        );
        registry.register(
            "project_budget_exhausted",
            "1 while a project has no credits left",
            metrics.project_budget_exhausted.clone(),
        );
        registry.register(
            "budget_preemptions",
            "Running containers preempted because their project had no credits left (stop-running)",
            metrics.budget_preemptions.clone(),
        );
        registry.register(
            "reclaim_preemptions",
            "Running containers reclaim took back for starved queues",
            metrics.reclaim_preemptions.clone(),
        );
        registry.register(
            "reclaim_observed",
            "Containers reclaim would have taken back under observe_only (none was)",
            metrics.reclaim_observed.clone(),
        );
        registry.register(
            "reclaim_marked",
            "Running containers reclaim marked for preemption (masters told; killed after max_wait_before_kill if still chosen)",
            metrics.reclaim_marked.clone(),
        );
        registry.register(
            "containers_lost",
            "Containers lost with their node (ABORTED, exit status -100) and asked for again",
            metrics.containers_lost.clone(),
        );
        registry.register(
            "event_loop_panics",
            "Commands and timers of the event loop that panicked (a bug; the loop went on)",
            metrics.event_loop_panics.clone(),
        );
        registry.register(
            "requests_refused",
            "Requests refused before any handler ran, by reason (unauthenticated, too large, …)",
            metrics.requests_refused.clone(),
        );
        registry.register(
            "store_commit_seconds",
            "Time to write one event's changes to the store (one transaction)",
            metrics.store_commit_seconds.clone(),
        );
        registry.register(
            "store_commit_failures",
            "Commits the store refused (their writes are kept and tried again)",
            metrics.store_commit_failures.clone(),
        );
        registry.register(
            "ha_active",
            "1 while this server is the active resource manager, 0 while it stands by",
            metrics.ha_active.clone(),
        );
        Metrics {
            registry,
            ..metrics
        }
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn label_values_cannot_break_out_of_their_quotes() {
        assert_eq!(
            super::label("victim\"} 123 \\\n"),
            "victim\\\"} 123 \\\\\\n"
        );
        assert_eq!(super::label("genomics"), "genomics");
    }
}
