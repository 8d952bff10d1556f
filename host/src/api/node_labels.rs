//! Node labels as YARN's REST has them: get-node-labels, add-node-labels,
//! remove-node-labels, a node's replace-labels and get-labels,
//! replace-node-to-labels and get-node-to-labels. Changes are for
//! administrators (`rm/labels.rs`). Bodies are read as YARN's clients send
//! them: with or without the `nodeLabelsInfo` root, a list or one entry,
//! exclusivity a boolean or its text.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::extract::{ApiPath, ApiQuery, JsonBody};
use super::openapi::RemoteException;
use super::{ApiError, ApiState};
use crate::cluster::Cluster;
use crate::rm::ResourceManager;
use crate::rm::requests::RequestError;
use crate::security::Caller;

/// YARN's NodeLabelsInfo: `{"nodeLabelInfo": [...]}`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct NodeLabelsInfo {
    node_label_info: Vec<NodeLabelInfo>,
}

/// One label: its name, whether it is exclusive, and how many running
/// nodes are in it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct NodeLabelInfo {
    name: String,
    exclusivity: bool,
    #[serde(rename = "activeNMs")]
    active_nms: usize,
}

impl NodeLabelsInfo {
    /// The cluster's labels, or only those of `only`.
    fn of(cluster: &Cluster, only: Option<&str>) -> NodeLabelsInfo {
        NodeLabelsInfo {
            node_label_info: cluster
                .node_labels()
                .iter()
                .filter(|(name, _)| only.is_none_or(|only| only == *name))
                .map(|(name, exclusive)| NodeLabelInfo {
                    name: name.into(),
                    exclusivity: exclusive,
                    active_nms: cluster.nodes().filter(|n| n.partition == name).count(),
                })
                .collect(),
        }
    }
}

/// A body of labels to add, as YARN's clients send NodeLabelsInfo.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub(super) enum AddLabels {
    /// `{"nodeLabelsInfo": {"nodeLabelInfo": …}}`.
    Wrapped(WrappedLabels),
    /// `{"nodeLabelInfo": …}`.
    Plain(LabelList),
}

/// NodeLabelsInfo with its root.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct WrappedLabels {
    #[serde(rename = "nodeLabelsInfo")]
    node_labels_info: LabelList,
}

/// `{"nodeLabelInfo": [{"name": "gpu", "exclusivity": true}]}`; one entry
/// may come without the list.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct LabelList {
    #[serde(rename = "nodeLabelInfo")]
    #[schema(value_type = Vec<NewLabel>)]
    node_label_info: OneOrMany<NewLabel>,
}

/// A list, or its one item alone (as YARN's JSON writes a list of one).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum OneOrMany<T> {
    Many(Vec<T>),
    One(T),
}

impl<T> OneOrMany<T> {
    fn into_vec(self) -> Vec<T> {
        match self {
            OneOrMany::Many(items) => items,
            OneOrMany::One(item) => vec![item],
        }
    }
}

/// A label to add: exclusive unless it says otherwise (as in YARN).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NewLabel {
    name: String,
    #[serde(default)]
    #[schema(value_type = Option<bool>)]
    exclusivity: Option<Exclusivity>,
}

/// `true`/`false`, or their text as YARN's JSON writes them.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum Exclusivity {
    Flag(bool),
    Text(String),
}

impl Exclusivity {
    fn exclusive(&self) -> Result<bool, ApiError> {
        match self {
            Exclusivity::Flag(flag) => Ok(*flag),
            Exclusivity::Text(text) => match text.trim().to_ascii_lowercase().as_str() {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err(ApiError::bad_request(format!(
                    "nodeLabelInfo.exclusivity: {:?} is not true or false",
                    text.chars().take(40).collect::<String>()
                ))),
            },
        }
    }
}

/// The cluster's node labels.
#[utoipa::path(get, path = "/ws/v1/cluster/get-node-labels", tag = "nodes",
    responses((status = 200, body = NodeLabelsInfo), (status = 401, body = RemoteException)))]
pub(super) async fn get_node_labels(
    State(state): State<ApiState>,
    _caller: Caller,
) -> Result<Json<NodeLabelsInfo>, ApiError> {
    let labels = state
        .rm
        .with(|rm: &mut ResourceManager| NodeLabelsInfo::of(rm.cluster(), None))
        .await?;
    Ok(Json(labels))
}

/// Adds node labels, exclusive unless `exclusivity` is false: a
/// non-exclusive label lends its nodes' idle room to asks for the default
/// partition (administrators only). All are added, or none.
#[utoipa::path(post, path = "/ws/v1/cluster/add-node-labels", tag = "nodes",
    request_body = AddLabels,
    responses((status = 200, body = NodeLabelsInfo), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 409, body = RemoteException), (status = 413, body = RemoteException)))]
pub(super) async fn add_node_labels(
    State(state): State<ApiState>,
    caller: Caller,
    JsonBody(body): JsonBody<AddLabels>,
) -> Result<Json<NodeLabelsInfo>, ApiError> {
    let list = match body {
        AddLabels::Wrapped(wrapped) => wrapped.node_labels_info,
        AddLabels::Plain(list) => list,
    };
    let labels = list
        .node_label_info
        .into_vec()
        .into_iter()
        .map(|label| {
            let exclusive = label
                .exclusivity
                .as_ref()
                .map_or(Ok(true), Exclusivity::exclusive)?;
            Ok((label.name.trim().to_string(), exclusive))
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    let added = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            rm.add_node_labels(&caller, &labels)?;
            Ok::<_, RequestError>(NodeLabelsInfo::of(rm.cluster(), None))
        })
        .await??;
    Ok(Json(added))
}

/// Removes node labels (`labels`, repeatable), all or none: a label a node,
/// a queue's properties or an active app holds is refused, naming them
/// (administrators only).
#[utoipa::path(post, path = "/ws/v1/cluster/remove-node-labels", tag = "nodes",
    params(("labels" = Vec<String>, Query, description = "A label to remove (repeatable)")),
    responses((status = 200, body = NodeLabelsInfo), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 404, body = RemoteException), (status = 409, body = RemoteException)))]
pub(super) async fn remove_node_labels(
    State(state): State<ApiState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<Vec<(String, String)>>,
) -> Result<Json<NodeLabelsInfo>, ApiError> {
    let names = labels_of(&query)?;
    if names.is_empty() {
        return Err(ApiError::bad_request(
            "labels: name at least one label to remove",
        ));
    }
    let left = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            rm.remove_node_labels(&caller, &names)?;
            Ok::<_, RequestError>(NodeLabelsInfo::of(rm.cluster(), None))
        })
        .await??;
    Ok(Json(left))
}

/// The `labels` of a query (repeatable; surrounding spaces dropped, empty
/// ones skipped), at most [`crate::limits::MAX_NODE_LABELS`].
fn labels_of(query: &[(String, String)]) -> Result<Vec<String>, ApiError> {
    let labels: Vec<String> = query
        .iter()
        .filter(|(key, _)| key == "labels")
        .map(|(_, value)| value.trim().to_string())
        .filter(|value| !value.is_empty())
        .collect();
    crate::limits::at_most("labels", labels.len(), crate::limits::MAX_NODE_LABELS)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok(labels)
}

/// What a node's labels are set to.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct NodeToLabels {
    /// Node id → its labels (none, or one).
    node_to_labels: BTreeMap<String, NodeLabelsInfo>,
}

/// Sets node `id`'s label to `labels` (at most one; none or empty: back to
/// the default partition), overriding what its agent named (administrators
/// only). Containers running there go on, counted in the new partition.
#[utoipa::path(post, path = "/ws/v1/cluster/nodes/{id}/replace-labels", tag = "nodes",
    params(("id" = String, Path, description = "The node id"),
        ("labels" = Option<String>, Query, description = "Its label; none for the default partition")),
    responses((status = 200, body = NodeToLabels), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 404, body = RemoteException)))]
pub(super) async fn replace_labels(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<Vec<(String, String)>>,
) -> Result<Json<NodeToLabels>, ApiError> {
    let labels = labels_of(&query)?;
    let mapping = vec![(id, one_label(labels)?)];
    replace(state, caller, mapping).await
}

/// YARN's NodeToLabelsEntryList: `{"nodeToLabels": [{"nodeId": …,
/// "nodeLabels": [...]}]}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct NodeToLabelsEntryList {
    #[schema(value_type = Vec<NodeToLabelsEntry>)]
    node_to_labels: OneOrMany<NodeToLabelsEntry>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct NodeToLabelsEntry {
    node_id: String,
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>)]
    node_labels: Option<OneOrMany<String>>,
}

/// Sets several nodes' labels at once, all or none (administrators only).
#[utoipa::path(post, path = "/ws/v1/cluster/replace-node-to-labels", tag = "nodes",
    request_body = NodeToLabelsEntryList,
    responses((status = 200, body = NodeToLabels), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException),
        (status = 404, body = RemoteException), (status = 413, body = RemoteException)))]
pub(super) async fn replace_node_to_labels(
    State(state): State<ApiState>,
    caller: Caller,
    JsonBody(body): JsonBody<NodeToLabelsEntryList>,
) -> Result<Json<NodeToLabels>, ApiError> {
    let mapping = body
        .node_to_labels
        .into_vec()
        .into_iter()
        .map(|entry| {
            let labels: Vec<String> = entry
                .node_labels
                .map(OneOrMany::into_vec)
                .unwrap_or_default()
                .into_iter()
                .map(|l| l.trim().to_string())
                .filter(|l| !l.is_empty())
                .collect();
            Ok((entry.node_id, one_label(labels)?))
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    replace(state, caller, mapping).await
}

/// A node has one label at most (YARN's partitions).
fn one_label(mut labels: Vec<String>) -> Result<Option<String>, ApiError> {
    if labels.len() > 1 {
        return Err(ApiError::bad_request(format!(
            "nodeLabels: a node has at most one label (YARN's partitions), got {}",
            labels.len()
        )));
    }
    Ok(labels.pop())
}

async fn replace(
    state: ApiState,
    caller: Caller,
    mapping: Vec<(String, Option<String>)>,
) -> Result<Json<NodeToLabels>, ApiError> {
    let answer = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            rm.replace_node_labels(&caller, &mapping)?;
            let nodes = mapping.iter().map(|(node, _)| node.as_str());
            Ok::<_, RequestError>(node_to_labels(rm.cluster(), nodes))
        })
        .await??;
    Ok(Json(answer))
}

fn node_to_labels<'a>(cluster: &Cluster, nodes: impl Iterator<Item = &'a str>) -> NodeToLabels {
    let node_to_labels = nodes
        .map(|id| {
            let label = cluster
                .node(id)
                .map(|n| n.partition.as_str())
                .or_else(|| cluster.node_labels().assigned(id))
                .unwrap_or("");
            let info = if label.is_empty() {
                NodeLabelsInfo {
                    node_label_info: Vec::new(),
                }
            } else {
                NodeLabelsInfo::of(cluster, Some(label))
            };
            (id.to_string(), info)
        })
        .collect();
    NodeToLabels { node_to_labels }
}

/// The label of node `id` (none for the default partition).
#[utoipa::path(get, path = "/ws/v1/cluster/nodes/{id}/get-labels", tag = "nodes",
    params(("id" = String, Path, description = "The node id")),
    responses((status = 200, body = NodeLabelsInfo), (status = 401, body = RemoteException),
        (status = 404, body = RemoteException)))]
pub(super) async fn get_labels(
    State(state): State<ApiState>,
    _caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<NodeLabelsInfo>, ApiError> {
    let labels = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            let cluster = rm.cluster();
            let node = cluster
                .node(&id)
                .ok_or_else(|| RequestError::Unknown(format!("unknown node {id:?}")))?;
            Ok::<_, RequestError>(match node.partition.as_str() {
                "" => NodeLabelsInfo {
                    node_label_info: Vec::new(),
                },
                label => NodeLabelsInfo::of(cluster, Some(label)),
            })
        })
        .await??;
    Ok(Json(labels))
}

/// Every node's label (nodes without one too).
#[utoipa::path(get, path = "/ws/v1/cluster/get-node-to-labels", tag = "nodes",
    responses((status = 200, body = NodeToLabels), (status = 401, body = RemoteException)))]
pub(super) async fn get_node_to_labels(
    State(state): State<ApiState>,
    _caller: Caller,
) -> Result<Json<NodeToLabels>, ApiError> {
    let answer = state
        .rm
        .with(|rm: &mut ResourceManager| {
            let cluster = rm.cluster();
            let ids: Vec<String> = cluster.nodes().map(|n| n.id.clone()).collect();
            node_to_labels(cluster, ids.iter().map(String::as_str))
        })
        .await?;
    Ok(Json(answer))
}
