//! YARN's scheduler-conf resources: the queue properties in force, and
//! changes to them (`yarn schedulerconf`) — queues added, updated and
//! removed, global properties — in YARN's JSON (as its CLI sends it: a
//! single item or an array, values as strings) or XML (`<sched-conf>`);
//! their version, a check without applying, and a format that drops them.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::extract::{RawBody, decode_json};
use super::openapi::RemoteException;
use super::{ApiError, ApiState};
use crate::queues::QueueProperties;
use crate::queues::mutation::{ConfUpdate, QueueParams};
use crate::rm::ResourceManager;
use crate::rm::scheduler_conf::ConfChangeError;
use crate::security::Caller;

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct SchedulerConf {
    property: Vec<ConfProperty>,
}

#[derive(Debug, Serialize, ToSchema)]
pub(super) struct ConfProperty {
    name: String,
    value: String,
}

/// The properties of `properties` every caller may see: all but the ACLs
/// (who may submit to or administer a queue is not shown to every caller).
fn shown(properties: &QueueProperties) -> SchedulerConf {
    let property = properties
        .iter()
        .map(|(name, value)| ConfProperty {
            name: name.into(),
            value: value.into(),
        })
        .collect();
    SchedulerConf { property }
}

/// As YARN's: only administrators read the scheduler configuration (it
/// holds the queues' ACLs) or its version, or validate a change.
fn check_may_read(state: &ApiState, caller: &Caller) -> Result<(), ApiError> {
    state
        .security
        .check_admin(caller, "read the scheduler configuration")
        .map_err(ApiError::forbidden)
}

/// The `yarn.scheduler.capacity.*` properties the queue tree in force was
/// built from (the queue file's, with the changes made through the API on
/// top). Administrators only, as YARN's.
#[utoipa::path(get, path = "/ws/v1/cluster/scheduler-conf", tag = "cluster",
    responses((status = 200, body = SchedulerConf), (status = 401, body = RemoteException),
        (status = 403, body = RemoteException)))]
pub(super) async fn scheduler_conf(
    State(state): State<ApiState>,
    caller: Caller,
) -> Result<Json<SchedulerConf>, ApiError> {
    check_may_read(&state, &caller)?;
    let conf = state
        .rm
        .with(|rm: &mut ResourceManager| shown(rm.cluster().queues().properties()))
        .await?;
    Ok(Json(conf))
}

/// YARN's SchedConfUpdateInfo in JSON, as Jersey maps it: each list may
/// come as one item or an array, `null` where empty.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SchedConfUpdateInfo {
    /// Queues to add: full path and parameters.
    #[serde(rename = "add-queue", default)]
    add_queue: Option<OneOrMany<QueueConfigInfo>>,
    /// Queues whose parameters change.
    #[serde(rename = "update-queue", default)]
    update_queue: Option<OneOrMany<QueueConfigInfo>>,
    /// Queues to remove (STOPPED first), by full path.
    #[serde(rename = "remove-queue", default)]
    remove_queue: Option<OneOrMany<String>>,
    /// Properties by full name (`yarn.scheduler.capacity.…`).
    #[serde(rename = "global-updates", default)]
    global_updates: Option<OneOrMany<ConfInfo>>,
    /// The same as `global-updates` (YARN's CLI sends both).
    #[serde(default)]
    global: Option<OneOrMany<ConfInfo>>,
    /// YARN Federation's sub-cluster: only empty (one cluster here).
    #[serde(rename = "subClusterId", default)]
    sub_cluster_id: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct QueueConfigInfo {
    /// The queue's full path (`root.a.b`).
    #[serde(rename = "queue-name")]
    queue_name: String,
    /// Its parameters, by their names below the queue (`capacity`).
    #[serde(default)]
    params: Option<ConfInfo>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ConfInfo {
    #[serde(default)]
    entry: Option<OneOrMany<Entry>>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Entry {
    key: String,
    /// Left out (or, for a queue's parameter, empty): the property is unset.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    value: Option<Scalar>,
}

/// A value as Jersey writes it: a string, or a number or boolean it did
/// not quote.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum Scalar {
    Text(String),
    Number(serde_json::Number),
    Flag(bool),
}

impl Scalar {
    fn into_text(self) -> String {
        match self {
            Scalar::Text(text) => text,
            Scalar::Number(number) => number.to_string(),
            Scalar::Flag(flag) => flag.to_string(),
        }
    }
}

/// One item, or an array of them (Jersey's mapped notation writes a list
/// of one as the item alone).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub(super) enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    fn into_vec(this: Option<OneOrMany<T>>) -> Vec<T> {
        match this {
            None => Vec::new(),
            Some(OneOrMany::One(item)) => vec![item],
            Some(OneOrMany::Many(items)) => items,
        }
    }
}

fn entries(infos: Vec<ConfInfo>) -> Vec<(String, Option<String>)> {
    infos
        .into_iter()
        .flat_map(|info| OneOrMany::into_vec(info.entry))
        .map(|entry| (entry.key, entry.value.map(Scalar::into_text)))
        .collect()
}

impl SchedConfUpdateInfo {
    fn into_update(self) -> Result<ConfUpdate, ApiError> {
        if self
            .sub_cluster_id
            .as_deref()
            .is_some_and(|id| !id.is_empty())
        {
            return Err(ApiError::bad_request(
                "subClusterId: this resource manager is not federated; leave it empty",
            ));
        }
        let queues = |infos: Option<OneOrMany<QueueConfigInfo>>| -> Vec<QueueParams> {
            OneOrMany::into_vec(infos)
                .into_iter()
                .map(|info| QueueParams {
                    queue: info.queue_name,
                    params: entries(info.params.into_iter().collect()),
                })
                .collect()
        };
        let updates = entries(OneOrMany::into_vec(self.global_updates));
        let global = entries(OneOrMany::into_vec(self.global));
        if !updates.is_empty() && !global.is_empty() && updates != global {
            return Err(ApiError::bad_request(
                "global and global-updates differ: send the global properties in one of them",
            ));
        }
        Ok(ConfUpdate {
            add: queues(self.add_queue),
            update: queues(self.update_queue),
            remove: OneOrMany::into_vec(self.remove_queue),
            global: if updates.is_empty() { global } else { updates },
        })
    }
}

/// The body as YARN's JSON or, with an XML content type, its `<sched-conf>`.
fn decode_update(headers: &HeaderMap, body: &[u8]) -> Result<ConfUpdate, ApiError> {
    let xml = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let media = v.split(';').next().unwrap_or("").trim();
            media.eq_ignore_ascii_case("application/xml") || media.eq_ignore_ascii_case("text/xml")
        });
    if xml {
        let text = std::str::from_utf8(body)
            .map_err(|_| ApiError::bad_request("invalid request body: not UTF-8"))?;
        parse_xml(text).map_err(|e| ApiError::bad_request(format!("invalid request body: {e}")))
    } else {
        decode_json::<SchedConfUpdateInfo>(body)?.into_update()
    }
}

/// `<sched-conf>` with `<add-queue>`, `<update-queue>` (`<queue-name>`,
/// `<params><entry><key/><value/></entry>…</params>`), `<remove-queue>`
/// and `<global-updates>` (or `<global>`) of entries. A DTD is refused.
fn parse_xml(text: &str) -> Result<ConfUpdate, String> {
    let document =
        roxmltree::Document::parse(text).map_err(|e| format!("not well-formed XML: {e}"))?;
    let root = document.root_element();
    if !root.has_tag_name("sched-conf") {
        return Err(format!(
            "the root element is <{}>, not <sched-conf>",
            root.tag_name().name()
        ));
    }
    let text_of = |node: roxmltree::Node| node.text().unwrap_or("").trim().to_string();
    let entries = |node: roxmltree::Node| -> Result<Vec<(String, Option<String>)>, String> {
        only(node, &["entry"])?;
        node.children()
            .filter(|n| n.has_tag_name("entry"))
            .map(|entry| {
                only(entry, &["key", "value"])?;
                let key = child(entry, "key").map(text_of).ok_or_else(|| {
                    format!("an <entry> in <{}> has no <key>", node.tag_name().name())
                })?;
                let value = child(entry, "value").map(|v| v.text().unwrap_or("").to_string());
                Ok((key, value))
            })
            .collect()
    };
    let queue = |node: roxmltree::Node| -> Result<QueueParams, String> {
        only(node, &["queue-name", "params"])?;
        let name = child(node, "queue-name")
            .map(text_of)
            .ok_or_else(|| format!("an <{}> has no <queue-name>", node.tag_name().name()))?;
        let params = match child(node, "params") {
            Some(params) => entries(params)?,
            None => Vec::new(),
        };
        Ok(QueueParams {
            queue: name,
            params,
        })
    };
    let mut update = ConfUpdate::default();
    for node in root.children().filter(roxmltree::Node::is_element) {
        match node.tag_name().name() {
            "add-queue" => update.add.push(queue(node)?),
            "update-queue" => update.update.push(queue(node)?),
            "remove-queue" => update.remove.push(text_of(node)),
            // As JAXB binds them: the later of the two replaces the earlier.
            "global-updates" | "global" => update.global = entries(node)?,
            "subClusterId" if text_of(node).is_empty() => {}
            other => return Err(format!("<{other}> is not part of <sched-conf>")),
        }
    }
    Ok(update)
}

/// Refuses a child element of `node` other than `allowed`.
fn only(node: roxmltree::Node, allowed: &[&str]) -> Result<(), String> {
    match node
        .children()
        .filter(roxmltree::Node::is_element)
        .find(|n| !allowed.contains(&n.tag_name().name()))
    {
        Some(other) => Err(format!(
            "<{}> is not part of <{}>",
            other.tag_name().name(),
            node.tag_name().name()
        )),
        None => Ok(()),
    }
}

/// The first child element of `node` named `tag`.
fn child<'a, 'input>(
    node: roxmltree::Node<'a, 'input>,
    tag: &str,
) -> Option<roxmltree::Node<'a, 'input>> {
    node.children().find(|n| n.has_tag_name(tag))
}

/// YARN's format: a GET that changes the configuration, so the API's
/// guard against cross-site changes counts it as one (`auth.rs`).
pub(super) const FORMAT_PATH: &str = "/ws/v1/cluster/scheduler-conf/format";

fn refused(error: ConfChangeError) -> ApiError {
    ApiError::refused(error.kind(), error)
}

/// Changes the queues (YARN's mutable scheduler configuration): adds,
/// updates and removes queues (a queue STOPPED first) and sets global
/// `yarn.scheduler.capacity.*` properties, all or nothing, as a refresh of
/// the queues would; the changes are kept on top of the queue file
/// (`yarn.scheduler.configuration.store.class`: not `file`). Administrators
/// only, or with the queue-admin policy the queues' administrators.
#[utoipa::path(put, path = "/ws/v1/cluster/scheduler-conf", tag = "cluster",
    request_body(content = SchedConfUpdateInfo,
        description = "YARN's SchedConfUpdateInfo: JSON, or XML <sched-conf> with an XML content type"),
    responses((status = 200, body = String, content_type = "text/plain",
            description = "Configuration change successfully applied."),
        (status = 400, body = RemoteException), (status = 401, body = RemoteException),
        (status = 403, body = RemoteException)))]
pub(super) async fn change(
    State(state): State<ApiState>,
    caller: Caller,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> Result<&'static str, ApiError> {
    let update = decode_update(&headers, &body)?;
    let user = caller.user.clone();
    let version = state
        .rm
        .with(move |rm: &mut ResourceManager| rm.change_scheduler_conf(&caller, &update))
        .await?
        .map_err(|error| {
            tracing::info!(caller = %user, %error, "scheduler configuration change refused");
            refused(error)
        })?;
    tracing::info!(caller = %user, version, "scheduler configuration changed");
    Ok("Configuration change successfully applied.")
}

/// The queue properties a change would give, checked as a change is but
/// not applied (the apps in the queues are not looked at). Administrators
/// only, as YARN's.
#[utoipa::path(post, path = "/ws/v1/cluster/scheduler-conf/validate", tag = "cluster",
    request_body(content = SchedConfUpdateInfo,
        description = "YARN's SchedConfUpdateInfo: JSON, or XML <sched-conf> with an XML content type"),
    responses((status = 200, body = SchedulerConf), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException)))]
pub(super) async fn validate(
    State(state): State<ApiState>,
    caller: Caller,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> Result<Json<SchedulerConf>, ApiError> {
    check_may_read(&state, &caller)?;
    let update = decode_update(&headers, &body)?;
    let conf = state
        .rm
        .with(move |rm: &mut ResourceManager| {
            rm.validate_scheduler_conf(&caller, &update)
                .map(|tree| shown(tree.properties()))
        })
        .await?
        .map_err(refused)?;
    Ok(Json(conf))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct ConfVersion {
    /// Changes applied through the API (a string, as YARN's JSON has it).
    #[serde(rename = "versionID")]
    version_id: String,
}

/// How many changes were applied through the API (YARN's versionID).
/// Administrators only, as YARN's.
#[utoipa::path(get, path = "/ws/v1/cluster/scheduler-conf/version", tag = "cluster",
    responses((status = 200, body = ConfVersion), (status = 400, body = RemoteException),
        (status = 401, body = RemoteException), (status = 403, body = RemoteException)))]
pub(super) async fn version(
    State(state): State<ApiState>,
    caller: Caller,
) -> Result<Json<ConfVersion>, ApiError> {
    check_may_read(&state, &caller)?;
    let version = state
        .rm
        .with(|rm: &mut ResourceManager| rm.scheduler_conf_version())
        .await?
        .map_err(refused)?;
    Ok(Json(ConfVersion {
        version_id: version.to_string(),
    }))
}

/// Drops every change made through the API: the queue file and settings,
/// read again, are the configuration in force (YARN's format; a GET, as
/// YARN's). Administrators only.
#[utoipa::path(get, path = "/ws/v1/cluster/scheduler-conf/format", tag = "cluster",
    responses((status = 200, body = String, content_type = "text/plain",
            description = "Configuration under store successfully formatted."),
        (status = 400, body = RemoteException), (status = 401, body = RemoteException),
        (status = 403, body = RemoteException)))]
pub(super) async fn format(
    State(state): State<ApiState>,
    caller: Caller,
) -> Result<&'static str, ApiError> {
    // Checked before the files are read: a caller who may not format
    // learns nothing of them.
    state
        .security
        .check_admin(&caller, "format the scheduler configuration")
        .map_err(ApiError::forbidden)?;
    let base = super::admin::reload_queue_properties(&state)
        .await?
        .map_err(|e| {
            ApiError::bad_request(format!("not formatted, the configuration stays: {e}"))
        })?;
    let user = caller.user.clone();
    state
        .rm
        .with(move |rm: &mut ResourceManager| rm.format_scheduler_conf(&caller, base))
        .await?
        .map_err(refused)?;
    tracing::info!(caller = %user, "scheduler configuration formatted");
    Ok("Configuration under store successfully formatted.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yarn_clis_json_is_read_with_single_items_and_arrays() {
        // As `yarn schedulerconf` 3.4.1 sends it (jersey-json's mapped notation).
        let body = br#"{"add-queue":{"queue-name":"root.a","params":{"entry":[{"key":"maximum-capacity","value":"100"},{"key":"capacity","value":"10"}]}},"remove-queue":"root.c","update-queue":{"queue-name":"root.d","params":{"entry":[{"key":"acl_submit_applications"},{"key":"state","value":"STOPPED"}]}},"subClusterId":"","global":{"entry":{"key":"yarn.scheduler.capacity.maximum-applications","value":"10000"}},"global-updates":{"entry":{"key":"yarn.scheduler.capacity.maximum-applications","value":"10000"}}}"#;
        let update = decode_update(&HeaderMap::new(), body).unwrap();
        assert_eq!(update.add[0].queue, "root.a");
        assert_eq!(
            update.add[0].params,
            vec![
                ("maximum-capacity".into(), Some("100".into())),
                ("capacity".into(), Some("10".into()))
            ]
        );
        assert_eq!(update.remove, vec!["root.c".to_string()]);
        assert_eq!(
            update.update[0].params[0],
            ("acl_submit_applications".into(), None)
        );
        assert_eq!(
            update.global,
            vec![(
                "yarn.scheduler.capacity.maximum-applications".into(),
                Some("10000".into())
            )]
        );
        let empty = br#"{"subClusterId":"","global":null,"global-updates":null}"#;
        assert_eq!(
            decode_update(&HeaderMap::new(), empty).unwrap(),
            ConfUpdate::default()
        );
        let arrays = br#"{"remove-queue":["root.x","root.y"],"update-queue":[{"queue-name":"root.a","params":{"entry":{"key":"capacity","value":5}}}]}"#;
        let update = decode_update(&HeaderMap::new(), arrays).unwrap();
        assert_eq!(update.remove.len(), 2);
        assert_eq!(update.update[0].params[0].1.as_deref(), Some("5"));
    }

    #[test]
    fn bad_json_is_refused() {
        let refused = |body: &[u8]| decode_update(&HeaderMap::new(), body).unwrap_err();
        assert_eq!(refused(br#"{"add_queue":{}}"#).status, 400);
        assert_eq!(refused(br#"{"subClusterId":"sc1"}"#).status, 400);
        assert_eq!(
            refused(br#"{"global":{"entry":{"key":"k","value":"1"}},"global-updates":{"entry":{"key":"k","value":"2"}}}"#)
                .status,
            400
        );
        assert_eq!(refused(b"[]").status, 400);
    }

    #[test]
    fn xml_is_read_and_a_dtd_refused() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            "application/xml; charset=utf-8".parse().unwrap(),
        );
        let body = b"<sched-conf><add-queue><queue-name>root.a</queue-name><params><entry><key>capacity</key><value>10</value></entry><entry><key>state</key></entry></params></add-queue><remove-queue>root.b</remove-queue><global-updates><entry><key>yarn.scheduler.capacity.maximum-applications</key><value>5</value></entry></global-updates></sched-conf>";
        let update = decode_update(&headers, body).unwrap();
        assert_eq!(
            update.add[0].params,
            vec![
                ("capacity".into(), Some("10".into())),
                ("state".into(), None)
            ]
        );
        assert_eq!(update.remove, vec!["root.b".to_string()]);
        assert_eq!(update.global.len(), 1);
        let dtd = b"<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY a \"aaaa\">]><sched-conf><remove-queue>&a;</remove-queue></sched-conf>";
        assert_eq!(decode_update(&headers, dtd).unwrap_err().status, 400);
        assert_eq!(
            decode_update(&headers, b"<configuration/>")
                .unwrap_err()
                .status,
            400
        );
        for bad in [
            &b"<sched-conf><drop-queue/></sched-conf>"[..],
            b"<sched-conf><add-queue><queue-name>root.a</queue-name><capacity>5</capacity></add-queue></sched-conf>",
            b"<sched-conf><global-updates><entry><key>k</key><val>1</val></entry></global-updates></sched-conf>",
        ] {
            assert_eq!(decode_update(&headers, bad).unwrap_err().status, 400);
        }
    }
}
