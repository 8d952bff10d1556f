//! What the pricing policy sees of the cluster: the context a container's
//! usage is charged in — what `charge` sees with each row, and `quote`
//! with an ask: its app's id, queue, user, project, type, tags, priority
//! and reservation, and its node's label and attributes — and the market
//! `multiplicators` sees: utilization, each partition's and each leaf
//! queue's load.

use crate::cluster::{App, Cluster, Node};
use crate::policy::{
    Attribute, ChargeContext, ExecutionType, Market, PartitionLoad, PriceMultiplicators, QueueLoad,
    SharingResources, Utilization,
};
use crate::resources::Resources;

/// The context of `app`'s containers of `execution_type` on `node` (none:
/// not placed yet, so no attributes, and the app's own label expression
/// for the label).
pub fn charge_context(
    cluster: &Cluster,
    app: &App,
    node: Option<&Node>,
    execution_type: crate::cluster::ExecutionType,
) -> ChargeContext {
    let (node_label, node_attributes) = match node {
        Some(node) => (
            node.partition.clone(),
            node.agent
                .attributes
                .iter()
                .map(|(key, value)| Attribute {
                    key: key.clone(),
                    value: value.clone(),
                })
                .collect(),
        ),
        None => (app.node_label_expression.clone(), Vec::new()),
    };
    ChargeContext {
        app: app.id.clone(),
        queue: cluster
            .queues()
            .queues()
            .get(app.queue_index)
            .map_or_else(|| app.queue.clone(), |q| q.path.clone()),
        user: app.user.clone(),
        project: app.project.clone(),
        application_type: app.application_type.clone(),
        application_tags: app.tags.clone(),
        priority: app.priority,
        node_label,
        node_attributes,
        execution_type: crate::scheduler::policy_execution_type(execution_type),
        reservation: app.reservation_id.clone(),
    }
}

/// The market at `now`: the cluster's utilization (allocated plus pending
/// over capacity, as HOPS-1385 has it) and each partition's and leaf
/// queue's capacity or guarantee, use and pending demand. `last` is left at
/// 1; the quota service puts its own in.
pub fn market(cluster: &Cluster, now: u64) -> Market {
    let capacity = cluster.capacity();
    let demand = cluster.allocated() + cluster.pending();
    let (memory, vcores, gpus) = demand.fractions_of(&capacity);
    let labels = cluster.node_labels();
    let names = std::iter::once("").chain(labels.iter().map(|(name, _)| name));
    let mut partitions: Vec<PartitionLoad> = names
        .map(|name| PartitionLoad {
            name: name.into(),
            capacity: wit(cluster.partition_capacity(name)),
            used: wit(Resources::ZERO),
            pending: wit(Resources::ZERO),
        })
        .collect();
    let position = |label: &str| partitions.iter().position(|p| p.name == label);
    let mut used = vec![Resources::ZERO; partitions.len()];
    for node in cluster.nodes() {
        if let Some(p) = position(&node.partition) {
            used[p] += node.allocated;
        }
    }
    let tree = cluster.queues().queues();
    let mut queue_used = vec![Resources::ZERO; tree.len()];
    let mut queue_pending = vec![Resources::ZERO; tree.len()];
    let mut pending = vec![Resources::ZERO; partitions.len()];
    for app in cluster.active_apps().map(|i| &cluster.apps()[i]) {
        if let Some(q) = queue_used.get_mut(app.queue_index) {
            *q += app.used;
            queue_pending[app.queue_index] += app.pending_resources();
        }
        for ask in app.asks.iter().filter(|a| a.pending > 0) {
            if let Some(p) = position(&ask.partition) {
                pending[p] += ask.resources.saturating_times(ask.pending);
            }
        }
    }
    for (p, load) in partitions.iter_mut().enumerate() {
        load.used = wit(used[p]);
        load.pending = wit(pending[p]);
    }
    let default_partition = cluster.partition_capacity("");
    let queues = tree
        .iter()
        .enumerate()
        .filter(|(_, q)| q.is_leaf())
        .map(|(i, q)| QueueLoad {
            path: q.path.clone(),
            guaranteed: share(default_partition, q.absolute_capacity),
            used: wit(queue_used[i]),
            pending: wit(queue_pending[i]),
        })
        .collect();
    Market {
        now_ms: i64::try_from(now).unwrap_or(i64::MAX),
        utilization: Utilization {
            memory,
            vcores,
            gpus,
        },
        partitions,
        queues,
        last: PriceMultiplicators {
            general: 1.0,
            gpu: 1.0,
        },
    }
}

/// `fraction` (0 to 1) of `r`, rounded down.
fn share(r: Resources, fraction: f64) -> SharingResources {
    let part = |x: u64| (x as f64 * fraction.clamp(0.0, 1.0)) as u64;
    SharingResources {
        memory_mb: part(r.memory_mb),
        vcores: part(u64::from(r.vcores)),
        gpus: part(u64::from(r.gpus)),
    }
}

fn wit(r: Resources) -> SharingResources {
    SharingResources {
        memory_mb: r.memory_mb,
        vcores: u64::from(r.vcores),
        gpus: u64::from(r.gpus),
    }
}

/// What `POST /ws/v1/quota/quote` asks: an app as it would be submitted,
/// and how long its containers would run.
#[derive(Debug, Clone, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuoteApp {
    /// The app, as `POST /ws/v1/cluster/apps` takes it.
    pub app: crate::cluster::SubmitApp,
    /// How long each container would run, in ms: 1 ms to 10 years. Left
    /// out: each ask's own `duration_ms` (simulated nodes), else an hour.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 315_360_000_000_u64)]
    pub duration_ms: Option<u64>,
}

/// What the pricing policy's `quote` says an app would cost.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Quote {
    /// Credits for every container of every ask, together.
    pub credits: f64,
    /// Per ask, in order.
    pub asks: Vec<AskQuote>,
    /// The project charged, and what it has left now.
    pub project: String,
    /// Its credits left (negative: in debt).
    pub credits_left: f64,
    /// The pricing policy that priced it.
    pub pricing_policy: Option<String>,
    /// When the containers would start: now, in ms since the epoch.
    pub start_ms: u64,
}

/// One ask's price.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct AskQuote {
    /// Its containers.
    pub containers: u32,
    /// How long each would run, in ms (at least the minimum runtime, as
    /// they would be charged).
    pub duration_ms: u64,
    /// Credits for all of them.
    pub credits: f64,
}

/// Which containers of each ask a price is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Containers {
    /// All of them.
    All,
    /// The fewest that can start: one, or its gang's minimum.
    First,
}

/// An hour: what a quote assumes of a command whose length is not known.
const QUOTED_BY_DEFAULT_MS: u64 = 3_600_000;

impl super::ResourceManager {
    /// What `request`'s app would cost at today's prices if submitted now
    /// by `caller` — checked as a submission is (bounds, the largest node,
    /// the queue's ACL, on whose behalf, the project, the reservation), and
    /// nothing submitted. A failing pricing policy answers this caller
    /// alone: no tenant's quote rolls a version back.
    pub fn quote_app(
        &mut self,
        caller: &crate::security::Caller,
        request: QuoteApp,
    ) -> Result<Quote, super::requests::RequestError> {
        use super::requests::RequestError;
        let QuoteApp {
            app: mut submission,
            duration_ms,
        } = request;
        if let Some(ms) = duration_ms {
            crate::limits::within(
                "duration_ms",
                ms,
                1,
                crate::limits::MAX_APP_LIFETIME_S * 1000,
            )?;
        }
        self.check_submission(caller, &mut submission)?;
        let leaf = self
            .cluster
            .queues()
            .leaf(&submission.queue)
            .ok_or_else(|| {
                RequestError::Invalid(format!("no leaf queue {:?}", submission.queue))
            })?;
        let now = self.now();
        let credits_left = self.quota.credits_left(&submission.project);
        let pricing = self.policies.pricing();
        let (asks, credits) = self.price_app(
            &submission,
            leaf,
            duration_ms,
            Containers::All,
            now,
            pricing,
        )?;
        Ok(Quote {
            credits,
            asks,
            project: submission.project,
            credits_left,
            pricing_policy: pricing.active().map(|v| v.info.name.clone()),
            start_ms: now,
        })
    }

    /// Each ask of `submission` (to leaf `leaf`) priced by the pricing
    /// policy's `quote` for `duration_ms` (else its own duration, else an
    /// hour; at least the minimum runtime), its `containers`, and the total.
    pub(super) fn price_app(
        &self,
        submission: &crate::cluster::SubmitApp,
        leaf: usize,
        duration_ms: Option<u64>,
        containers: Containers,
        now: u64,
        pricing: &dyn crate::quota::Pricing,
    ) -> Result<(Vec<AskQuote>, f64), super::requests::RequestError> {
        let minimum = self.quota.settings().min_runtime_ms;
        let queue = &self.cluster.queues().queues()[leaf];
        // As the app would keep them (`Cluster::submit`); no app id yet.
        let app_label = submission.node_label_expression.as_deref().map_or_else(
            || queue.partitions.default_label_expression.clone(),
            |e| e.trim().to_string(),
        );
        let context = ChargeContext {
            app: String::new(),
            queue: queue.path.clone(),
            user: submission.user.clone(),
            project: submission.project.clone(),
            application_type: submission.normal_application_type(),
            application_tags: submission.normal_tags(),
            priority: submission.priority,
            node_label: app_label,
            node_attributes: Vec::new(),
            execution_type: ExecutionType::Guaranteed,
            reservation: submission.reservation_id.clone(),
        };
        let mut asks = Vec::with_capacity(submission.asks.len());
        let mut total = 0.0;
        for ask in &submission.asks {
            let ms = duration_ms
                .or(ask.duration_ms)
                .unwrap_or(QUOTED_BY_DEFAULT_MS)
                .max(minimum);
            let context = ChargeContext {
                execution_type: crate::scheduler::policy_execution_type(ask.execution_type),
                node_label: ask
                    .node_label_expression
                    .as_deref()
                    .map_or_else(|| context.node_label.clone(), |e| e.trim().to_string()),
                ..context.clone()
            };
            let resources = Resources::new(ask.memory_mb, ask.vcores, ask.gpus);
            let count = match containers {
                Containers::All => ask.count,
                Containers::First => ask.gang.map_or(1, |g| g.minimum.clamp(1, ask.count)),
            };
            let credits = self
                .quota
                .quote(pricing, context, resources, count, now, ms)
                .map_err(|e| {
                    super::requests::RequestError::Unavailable(format!(
                        "the pricing policy cannot quote now: {e}"
                    ))
                })?;
            total += credits;
            asks.push(AskQuote {
                containers: count,
                duration_ms: ms,
                credits,
            });
        }
        Ok((asks, total))
    }
}
