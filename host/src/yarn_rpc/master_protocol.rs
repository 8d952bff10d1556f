//! ApplicationMasterProtocol, YARN's scheduler port
//! (`yarn.resourcemanager.scheduler.address`, 8030): an application master
//! proves which attempt it is with the AMRMToken its container was given
//! (SASL DIGEST-MD5, `sasl.rs`), then registers, asks and unregisters
//! through the resource manager's use cases (`rm/application_masters.rs`).
//! Here: the token's check, YARN's response ids (a repeated allocate gets
//! the same answer), and the records — containers with their container
//! tokens, NMTokens for new nodes, completed containers' statuses.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use prost::Message;

use super::connection::Call;
use super::error::{RpcError, class};
use super::messages::calls::{
    APPLICATION_MASTER_PROTOCOL, APPLICATION_MASTER_PROTOCOL_METHODS, AllocateRequestProto,
    AllocateResponseProto, FinishApplicationMasterRequestProto,
    FinishApplicationMasterResponseProto, NMTokenProto, RegisterApplicationMasterRequestProto,
    RegisterApplicationMasterResponseProto, SchedulerResourceTypes,
};
use super::messages::ipc::TokenProto;
use super::messages::records::{
    ContainerProto, ContainerStateProto, ContainerStatusProto, ExecutionTypeProto,
    FinalApplicationStatusProto, NodeReportProto, PreemptionContainerProto,
    PreemptionContractProto, PreemptionMessageProto, PreemptionResourceRequestProto, PriorityProto,
    ResourceRequestProto,
};
use super::messages::tokens::{
    AMRMTokenIdentifierProto, CONTAINER_TOKEN_KIND, ContainerTokenIdentifierProto, NM_TOKEN_KIND,
    NMTokenIdentifierProto,
};
use super::reports;
use super::sasl::TokenPasswords;
use super::server::Protocols;
use crate::cluster::{
    BlacklistChange, Container, FinalStatus, MAX_BLACKLIST, MasterAsk, MasterAskKey, MasterError,
    MasterFinish, MasterPlaces, attempt_id,
};
use crate::limits::OutOfBounds;
use crate::resources::Resources;
use crate::rm::{ResourceManager, RmHandle};
use crate::security::yarn_tokens::{NodeTokenKey, TokenKeys};

/// The protocol's name, as masters give it in every call.
pub const PROTOCOL: &str = APPLICATION_MASTER_PROTOCOL;

/// The most masters whose last answer is kept (for a repeated allocate).
const MAX_SESSIONS: usize = 10_000;
/// The most asks one allocate may carry.
const MAX_ASKS_PER_CALL: usize = 10_000;
/// The longest tracking URL a master may give.
const MAX_TRACKING_URL_BYTES: usize = 4096;

/// What a master registers, as every client reads it back in the app's
/// report: its host a name (empty allowed), its tracking URL empty, an
/// http(s) URL or one with no scheme (`host:port/…`, which YARN takes as
/// http): never a `javascript:` or other scheme a reader would follow.
fn check_registration(host: &str, tracking_url: &str) -> Result<(), OutOfBounds> {
    if !host.is_empty() {
        crate::limits::name("host", host)?;
    }
    crate::limits::at_most(
        "tracking_url (bytes)",
        tracking_url.len(),
        MAX_TRACKING_URL_BYTES,
    )?;
    let refused = |rule: &str| OutOfBounds {
        field: "tracking_url".into(),
        value: format!("{:?}", crate::limits::cut(tracking_url, 40)),
        rule: rule.into(),
    };
    if tracking_url
        .chars()
        .any(|c| c.is_control() || c.is_whitespace())
    {
        return Err(refused("but must not contain spaces or control characters"));
    }
    let lower = tracking_url.to_ascii_lowercase();
    if tracking_url.is_empty()
        || lower.starts_with("http://")
        || lower.starts_with("https://")
        || is_host_and_port(tracking_url)
    {
        return Ok(());
    }
    Err(refused(
        "but must be an http or https URL, or host:port with no scheme",
    ))
}

/// Whether `url` starts with a host (a name, or an IPv6 address in
/// brackets) and an optional port, then ends or goes on with a path, query
/// or fragment: `worker-1:4040/jobs`, as MapReduce registers it (YARN
/// takes it as http). Anything else before a colon is a scheme.
fn is_host_and_port(url: &str) -> bool {
    let end = url.find(['/', '?', '#']).unwrap_or(url.len());
    let authority = &url[..end];
    let (host, port) = match authority.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((address, port)) => (
                !address.is_empty()
                    && address
                        .chars()
                        .all(|c| c.is_ascii_hexdigit() || ":.".contains(c)),
                port,
            ),
            None => return false,
        },
        None => {
            let (name, port) = authority
                .find(':')
                .map_or((authority, ""), |colon| authority.split_at(colon));
            // `javascript:1` reads as a host and a port too: a name that
            // is a scheme a browser runs or opens locally is not a host.
            let scheme_like = ["javascript", "vbscript", "data", "file", "blob"]
                .iter()
                .any(|scheme| name.eq_ignore_ascii_case(scheme));
            (
                !name.is_empty()
                    && !scheme_like
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || ".-_".contains(c)),
                port,
            )
        }
    };
    let port_ok = port.is_empty()
        || port.strip_prefix(':').is_some_and(|digits| {
            (1..=5).contains(&digits.len()) && digits.chars().all(|c| c.is_ascii_digit())
        });
    host && port_ok
}

/// How long a container token lasts (YARN's
/// `yarn.resourcemanager.rm.container-allocation.expiry-interval-ms`).
const CONTAINER_TOKEN_MS: u64 = 600_000;

/// The AMRMTokens the server issued: checked by the scheduler port's SASL.
#[derive(Debug, Clone)]
pub struct AmrmPasswords {
    keys: Arc<TokenKeys>,
}

impl AmrmPasswords {
    /// Passwords under `keys`.
    pub fn new(keys: Arc<TokenKeys>) -> AmrmPasswords {
        AmrmPasswords { keys }
    }
}

/// The AMRMToken identifier of attempt `attempt` of `app`: its one
/// encoding, which the agent writes and the scheduler port accepts.
pub fn amrm_identifier(app: &str, attempt: u32) -> Vec<u8> {
    AMRMTokenIdentifierProto {
        app_attempt_id: Some(reports::attempt_id(app, attempt)),
        key_id: Some(1),
    }
    .encode_to_vec()
}

/// The app and attempt an AMRMToken's identifier names, if it is one this
/// server issued (exactly its encoding: nothing added, nothing changed).
fn amrm_attempt(identifier: &[u8]) -> Result<(String, u32), String> {
    let token = AMRMTokenIdentifierProto::decode(identifier)
        .map_err(|e| format!("the AMRMToken's identifier cannot be decoded: {e}"))?;
    let (app, attempt) = reports::attempt_id_text(token.app_attempt_id.as_ref())
        .ok_or_else(|| "the AMRMToken names no application attempt".to_string())?;
    if amrm_identifier(&app, attempt) != identifier {
        return Err("the AMRMToken's identifier is not one this server issued".into());
    }
    Ok((app, attempt))
}

impl TokenPasswords for AmrmPasswords {
    fn password(&self, identifier: &[u8]) -> Result<(Vec<u8>, Arc<str>), String> {
        let (app, attempt) = amrm_attempt(identifier)?;
        let attempt = attempt_id(&app, attempt);
        Ok((self.keys.amrm_password(&attempt), Arc::from(attempt)))
    }
}

/// An allocate by its response id: new (its answer's number), or the last
/// one again (that answer).
enum Numbered {
    Next(i32),
    Repeat(Arc<Vec<u8>>),
}

/// The last answer to one master, by number.
struct Session {
    last_id: i32,
    last: Option<Arc<Vec<u8>>>,
    /// An allocate numbered `last_id` is being served: another of that
    /// number waits (it would be applied twice).
    serving: bool,
    /// When it last registered or allocated: the session used least
    /// recently makes room (a killed master's never allocates again).
    used: std::time::Instant,
}

/// ApplicationMasterProtocol over the resource manager.
#[derive(Clone)]
pub struct MasterProtocol {
    rm: RmHandle,
    sessions: Arc<Mutex<HashMap<String, Session>>>,
}

impl MasterProtocol {
    /// The protocol, calling the resource manager `rm`.
    pub fn new(rm: RmHandle) -> MasterProtocol {
        MasterProtocol {
            rm,
            sessions: Arc::new(Mutex::new(HashMap::new())),
        }
    }
}

impl Protocols for MasterProtocol {
    fn serve(&self, call: Call) -> BoxFuture<'static, Result<Vec<u8>, RpcError>> {
        let this = self.clone();
        Box::pin(async move { this.dispatch(call).await })
    }
}

/// A refusal of the cluster's, as a master reads it.
fn refused(error: MasterError) -> RpcError {
    let class = match &error {
        MasterError::NoSuchApp(_) | MasterError::NotCurrentAttempt { .. } => {
            class::APPLICATION_ATTEMPT_NOT_FOUND
        }
        MasterError::NotRegistered(_) => class::APPLICATION_MASTER_NOT_REGISTERED,
        MasterError::BadAsk(_) => class::INVALID_RESOURCE_REQUEST,
        MasterError::Unregistered(_) => class::INVALID_APPLICATION_MASTER_REQUEST,
    };
    RpcError::new(class, error.to_string())
}

/// A node as a master needs it: its NodeId, web address and token key.
struct NodeView {
    id: super::messages::records::NodeIdProto,
    http: String,
    key: Option<NodeTokenKey>,
}

/// What an allocate found on the event loop, to encode off it.
struct Allocated {
    news: crate::cluster::MasterNews,
    nodes: HashMap<String, NodeView>,
    /// Reports of the nodes whose state changed (YARN's updated nodes).
    updated_nodes: Vec<NodeReportProto>,
    available: Resources,
    cluster_nodes: usize,
    submitter: String,
    rm_start: u64,
    now: u64,
}

impl MasterProtocol {
    async fn dispatch(&self, call: Call) -> Result<Vec<u8>, RpcError> {
        if call.protocol != PROTOCOL {
            return Err(RpcError::no_such_protocol(&call.protocol));
        }
        // The token, not the user a connection names, says which master.
        let (app, attempt) = call.token("AMRMToken", amrm_attempt)?;
        let session = attempt_id(&app, attempt);
        let method = call.method.as_str();
        match method {
            "registerApplicationMaster" => {
                let request: RegisterApplicationMasterRequestProto = call.decode()?;
                // Every client reads them back in the app's report.
                let host = request.host.unwrap_or_default();
                let tracking_url = request.tracking_url.unwrap_or_default();
                check_registration(&host, &tracking_url).map_err(|e| {
                    RpcError::new(class::INVALID_APPLICATION_MASTER_REQUEST, e.to_string())
                })?;
                // A registration repeated (its answer lost, and retried)
                // keeps the master's numbering: resetting it mid-allocate
                // would let an old response id through.
                let started = self.start_session(&session)?;
                let registered = self
                    .rm
                    .with(move |rm: &mut ResourceManager| {
                        rm.register_master(
                            &app,
                            attempt,
                            host,
                            request.rpc_port.unwrap_or(-1),
                            tracking_url,
                        )
                    })
                    .await
                    .map_err(RpcError::from)
                    .and_then(|registered| registered.map_err(refused));
                let registered = match registered {
                    Ok(registered) => registered,
                    Err(error) => {
                        if started {
                            self.end_session(&session);
                        }
                        return Err(error);
                    }
                };
                Ok(RegisterApplicationMasterResponseProto {
                    maximum_capability: Some(reports::resource(registered.maximum)),
                    queue: Some(registered.queue),
                    scheduler_resource_types: vec![
                        SchedulerResourceTypes::Memory as i32,
                        SchedulerResourceTypes::Cpu as i32,
                    ],
                    ..Default::default()
                }
                .encode_to_vec())
            }
            "allocate" => {
                let request: AllocateRequestProto = call.decode()?;
                let response_id = request.response_id.unwrap_or(0);
                let next = match self.check_response_id(&session, response_id)? {
                    Numbered::Next(next) => next,
                    Numbered::Repeat(last) => return Ok(last.as_ref().clone()),
                };
                let attempt_record = reports::attempt_id(&app, attempt);
                let allocated = match self.allocate(app, attempt, &request).await {
                    Ok(allocated) => allocated,
                    Err(error) => {
                        self.served(&session, None);
                        return Err(error);
                    }
                };
                let answer =
                    Arc::new(allocate_response(attempt_record, next, allocated).encode_to_vec());
                self.served(&session, Some((next, answer.clone())));
                Ok(answer.as_ref().clone())
            }
            "finishApplicationMaster" => {
                let request: FinishApplicationMasterRequestProto = call.decode()?;
                let finish = MasterFinish {
                    final_status: final_status(request.final_application_status),
                    diagnostics: crate::limits::cut(
                        request.diagnostics.as_deref().unwrap_or_default(),
                        crate::limits::MAX_DIAGNOSTICS_BYTES,
                    ),
                };
                self.rm
                    .with(move |rm: &mut ResourceManager| rm.finish_master(&app, attempt, finish))
                    .await?
                    .map_err(refused)?;
                if let Ok(mut sessions) = self.sessions.lock() {
                    sessions.remove(&session);
                }
                Ok(FinishApplicationMasterResponseProto {
                    is_unregistered: Some(true),
                }
                .encode_to_vec())
            }
            other if APPLICATION_MASTER_PROTOCOL_METHODS.contains(&other) => {
                Err(RpcError::unsupported(PROTOCOL, other))
            }
            other => Err(RpcError::no_such_method(PROTOCOL, other)),
        }
    }

    /// An allocate's asks and releases applied, and what its answer needs.
    async fn allocate(
        &self,
        app: String,
        attempt: u32,
        request: &AllocateRequestProto,
    ) -> Result<Allocated, RpcError> {
        let (asks, releases) = asks_and_releases(request)?;
        let blacklist = blacklist_change(request)?;
        let progress = request.progress.unwrap_or(0.0);
        self.rm
            .with(move |rm: &mut ResourceManager| {
                let allocated =
                    rm.master_allocate(&app, attempt, &asks, &releases, &blacklist, progress)?;
                Ok::<_, MasterError>(view(rm, &app, allocated))
            })
            .await?
            .map_err(refused)
    }

    /// A first registration starts the master's numbering at 0; one
    /// repeated keeps it. Whether this one started it.
    fn start_session(&self, session: &str) -> Result<bool, RpcError> {
        let mut sessions = self
            .sessions
            .lock()
            .map_err(|_| RpcError::yarn("the scheduler port's sessions are unusable"))?;
        if sessions.contains_key(session) {
            return Ok(false);
        }
        if sessions.len() >= MAX_SESSIONS
            && let Some(least_used) = sessions
                .iter()
                .min_by_key(|(_, known)| known.used)
                .map(|(name, _)| name.clone())
        {
            sessions.remove(&least_used);
        }
        sessions.insert(
            session.to_string(),
            Session {
                last_id: 0,
                last: None,
                serving: false,
                used: std::time::Instant::now(),
            },
        );
        Ok(true)
    }

    /// Forgets a session whose registration failed.
    fn end_session(&self, session: &str) {
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.remove(session);
        }
    }

    /// YARN's rule: an allocate numbered as the last answer is new (its
    /// answer numbered one more); numbered one less, it is the last one
    /// again (answered the same); else it is refused.
    fn check_response_id(&self, session: &str, response_id: i32) -> Result<Numbered, RpcError> {
        let mut sessions = self
            .sessions
            .lock()
            .map_err(|_| RpcError::yarn("the scheduler port's sessions are unusable"))?;
        let Some(known) = sessions.get_mut(session) else {
            return Err(RpcError::new(
                class::APPLICATION_MASTER_NOT_REGISTERED,
                format!("Application Master is trying to allocate before registering: {session}"),
            ));
        };
        if response_id.checked_add(1) == Some(known.last_id)
            && let Some(last) = &known.last
        {
            return Ok(Numbered::Repeat(last.clone()));
        }
        if response_id != known.last_id {
            return Err(RpcError::new(
                class::INVALID_APPLICATION_MASTER_REQUEST,
                format!(
                    "Invalid responseId in AllocateRequest from application attempt {session}, expect responseId to be {} but get {response_id}",
                    known.last_id
                ),
            ));
        }
        if known.serving {
            return Err(RpcError::new(
                class::RETRIABLE,
                format!(
                    "an allocate numbered {response_id} of {session} is being served; try again"
                ),
            ));
        }
        known.serving = true;
        // Wraps as YARN's does.
        Ok(Numbered::Next(if known.last_id == i32::MAX {
            0
        } else {
            known.last_id + 1
        }))
    }

    /// The allocate being served was answered (`Some`: its number and
    /// answer) or failed (`None`: the number stays).
    fn served(&self, session: &str, answered: Option<(i32, Arc<Vec<u8>>)>) {
        if let Ok(mut sessions) = self.sessions.lock()
            && let Some(known) = sessions.get_mut(session)
        {
            known.serving = false;
            known.used = std::time::Instant::now();
            if let Some((id, answer)) = answered {
                known.last_id = id;
                known.last = Some(answer);
            }
        }
    }
}

/// A master's asks — per key (priority, allocation request id,
/// capability), YARN's `*` entry gives the count and relaxLocality, its
/// host and rack entries with containers wanted the places — and its
/// releases, checked.
fn asks_and_releases(
    request: &AllocateRequestProto,
) -> Result<(Vec<MasterAsk>, Vec<String>), RpcError> {
    if request.ask.len() > MAX_ASKS_PER_CALL || request.release.len() > MAX_ASKS_PER_CALL {
        return Err(RpcError::new(
            class::INVALID_RESOURCE_REQUEST,
            format!(
                "an allocate carries at most {MAX_ASKS_PER_CALL} asks and {MAX_ASKS_PER_CALL} releases"
            ),
        ));
    }
    let mut asks: Vec<MasterAsk> = Vec::new();
    let mut places: std::collections::BTreeMap<MasterAskKey, MasterPlaces> =
        std::collections::BTreeMap::new();
    for ask in &request.ask {
        let capability = ask.capability.clone().unwrap_or_default();
        let negative = |what: &str, value: i64| {
            RpcError::new(
                class::INVALID_RESOURCE_REQUEST,
                format!("Invalid resource request: {what} {value} is negative"),
            )
        };
        let memory = capability.memory.unwrap_or(0);
        let memory = u64::try_from(memory).map_err(|_| negative("memory", memory))?;
        let vcores = capability.virtual_cores.unwrap_or(0);
        let vcores = u32::try_from(vcores).map_err(|_| negative("vcores", i64::from(vcores)))?;
        let key = MasterAskKey {
            priority: ask.priority.as_ref().and_then(|p| p.priority).unwrap_or(0),
            allocation_request_id: ask.allocation_request_id.unwrap_or(-1),
            size: (memory, vcores, 0),
        };
        let count = u32::try_from(ask.num_containers.unwrap_or(0)).unwrap_or(0);
        let name = ask.resource_name.as_deref().unwrap_or("*");
        let wanted = places.entry(key).or_insert_with(|| MasterPlaces {
            relax_locality: true,
            ..MasterPlaces::default()
        });
        match name {
            "*" => {
                wanted.relax_locality = ask.relax_locality.unwrap_or(true);
                asks.push(MasterAsk {
                    key,
                    count,
                    places: MasterPlaces::default(),
                });
            }
            // A place with nothing wanted there any more is no preference.
            _ if count == 0 => {}
            rack if rack.starts_with('/') => push_place(&mut wanted.racks, rack),
            host => push_place(&mut wanted.hosts, host),
        }
    }
    for ask in &mut asks {
        if let Some(wanted) = places.remove(&ask.key) {
            ask.places = wanted;
        }
    }
    let releases = request
        .release
        .iter()
        .filter_map(reports::container_id_text)
        .collect();
    Ok((asks, releases))
}

/// An allocate's blacklist additions and removals, at most
/// [`MAX_BLACKLIST`] of each (the cluster checks each name and the whole).
fn blacklist_change(request: &AllocateRequestProto) -> Result<BlacklistChange, RpcError> {
    let Some(change) = &request.blacklist_request else {
        return Ok(BlacklistChange::default());
    };
    if change.blacklist_additions.len() > MAX_BLACKLIST
        || change.blacklist_removals.len() > MAX_BLACKLIST
    {
        return Err(RpcError::new(
            class::INVALID_RESOURCE_REQUEST,
            format!(
                "a blacklist request adds and removes at most {MAX_BLACKLIST} hosts and racks each"
            ),
        ));
    }
    Ok(BlacklistChange {
        additions: change.blacklist_additions.clone(),
        removals: change.blacklist_removals.clone(),
    })
}

/// Adds a place a master names, within bounds (a name as long as a node id
/// may be, at most as many as an ask may name; the rest are hints dropped).
fn push_place(places: &mut Vec<String>, name: &str) {
    if name.len() <= crate::limits::MAX_NAME_BYTES
        && places.len() < crate::cluster::MAX_PLACES
        && !places.iter().any(|p| p == name)
    {
        places.push(name.to_string());
    }
}

/// What the master's answer needs of the cluster, read on the event loop.
fn view(
    rm: &ResourceManager,
    app: &str,
    allocated: crate::rm::application_masters::MasterAllocated,
) -> Allocated {
    let cluster = rm.cluster();
    let keys = cluster.token_keys();
    let mut nodes = HashMap::new();
    for (container, _) in &allocated.news.allocated {
        if nodes.contains_key(&container.node) {
            continue;
        }
        if let Some(node) = cluster.node(&container.node) {
            nodes.insert(
                container.node.clone(),
                NodeView {
                    id: reports::node_id(node),
                    http: node.http_host_port(),
                    key: keys.map(|k| k.node_key(&node.id)),
                },
            );
        }
    }
    let now = rm.now();
    let updated_nodes = allocated
        .news
        .updated_nodes
        .iter()
        .filter_map(|id| reports::updated_node_report(cluster, id, now))
        .collect();
    Allocated {
        news: allocated.news,
        nodes,
        updated_nodes,
        available: allocated.available,
        cluster_nodes: allocated.nodes,
        submitter: cluster.app(app).map(|a| a.user.clone()).unwrap_or_default(),
        rm_start: rm.started_ms(),
        now,
    }
}

fn final_status(status: Option<i32>) -> FinalStatus {
    match status.and_then(|s| FinalApplicationStatusProto::try_from(s).ok()) {
        Some(FinalApplicationStatusProto::AppSucceeded) => FinalStatus::Succeeded,
        Some(FinalApplicationStatusProto::AppFailed) => FinalStatus::Failed,
        Some(FinalApplicationStatusProto::AppKilled) => FinalStatus::Killed,
        _ => FinalStatus::Undefined,
    }
}

fn ms(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// The answer to an allocate numbered `id`.
fn allocate_response(
    attempt: super::messages::records::ApplicationAttemptIdProto,
    id: i32,
    allocated: Allocated,
) -> AllocateResponseProto {
    let mut response = AllocateResponseProto {
        response_id: Some(id),
        limit: Some(reports::resource(allocated.available)),
        num_cluster_nodes: Some(i32::try_from(allocated.cluster_nodes).unwrap_or(i32::MAX)),
        ..Default::default()
    };
    for (container, key) in &allocated.news.allocated {
        let Some(node) = allocated.nodes.get(&container.node) else {
            continue;
        };
        response
            .allocated_containers
            .push(container_record(container, key, node, &allocated));
    }
    for node_name in &allocated.news.new_nodes {
        let Some(node) = allocated.nodes.get(node_name) else {
            continue;
        };
        let Some(key) = &node.key else { continue };
        let identifier = NMTokenIdentifierProto {
            app_attempt_id: Some(attempt.clone()),
            node_id: Some(node.id.clone()),
            app_submitter: Some(allocated.submitter.clone()),
            key_id: Some(1),
        }
        .encode_to_vec();
        response.nm_tokens.push(NMTokenProto {
            node_id: Some(node.id.clone()),
            token: Some(TokenProto {
                password: key.nm_password(&identifier),
                identifier,
                kind: NM_TOKEN_KIND.into(),
                service: node_address(&node.id),
            }),
        });
    }
    response.updated_nodes = allocated.updated_nodes.clone();
    response.preempt = preemption_message(&allocated.news.marked_for_preemption);
    for completed in &allocated.news.completed {
        response
            .completed_container_statuses
            .push(ContainerStatusProto {
                container_id: reports::container_id(&completed.id),
                state: Some(ContainerStateProto::CComplete as i32),
                diagnostics: Some(completed.diagnostics.clone()),
                exit_status: Some(completed.exit_status),
                ..Default::default()
            });
    }
    response
}

/// YARN's Capacity Scheduler's notice of containers marked for preemption:
/// no strict contract, a contract naming the containers and what they
/// hold together (YARN asks for it in minimum-allocation pieces; Weft has
/// no minimum, so one piece of the whole, at any place and priority).
fn preemption_message(marked: &[(String, Resources)]) -> Option<PreemptionMessageProto> {
    if marked.is_empty() {
        return None;
    }
    let total = marked
        .iter()
        .fold(Resources::ZERO, |sum, (_, resources)| sum + *resources);
    Some(PreemptionMessageProto {
        strict_contract: None,
        contract: Some(PreemptionContractProto {
            resource: vec![PreemptionResourceRequestProto {
                resource: Some(ResourceRequestProto {
                    priority: Some(PriorityProto { priority: Some(-1) }),
                    resource_name: Some("*".into()),
                    capability: Some(reports::resource(total)),
                    num_containers: Some(1),
                    ..Default::default()
                }),
            }],
            container: marked
                .iter()
                .map(|(id, _)| PreemptionContainerProto {
                    id: reports::container_id(id),
                })
                .collect(),
        }),
    })
}

fn node_address(id: &super::messages::records::NodeIdProto) -> String {
    format!(
        "{}:{}",
        id.host.as_deref().unwrap_or_default(),
        id.port.unwrap_or(0)
    )
}

/// A container as its master is given it: where, what, and the token that
/// lets it start there.
fn container_record(
    container: &Container,
    key: &MasterAskKey,
    node: &NodeView,
    allocated: &Allocated,
) -> ContainerProto {
    let id = reports::container_id(&container.id);
    let priority = PriorityProto {
        priority: Some(key.priority),
    };
    let resource = reports::resource(container.resources);
    let container_token = node.key.as_ref().map(|node_key| {
        let identifier = ContainerTokenIdentifierProto {
            container_id: id.clone(),
            nm_host_addr: Some(node_address(&node.id)),
            app_submitter: Some(allocated.submitter.clone()),
            resource: Some(resource.clone()),
            expiry_time_stamp: Some(ms(allocated.now.saturating_add(CONTAINER_TOKEN_MS))),
            master_key_id: Some(1),
            rm_identifier: Some(ms(allocated.rm_start)),
            priority: Some(priority.clone()),
            creation_time: Some(ms(container.start_time_ms)),
            allocation_request_id: Some(key.allocation_request_id),
            ..Default::default()
        }
        .encode_to_vec();
        TokenProto {
            password: node_key.container_password(&identifier),
            identifier,
            kind: CONTAINER_TOKEN_KIND.into(),
            service: node_address(&node.id),
        }
    });
    ContainerProto {
        id,
        node_id: Some(node.id.clone()),
        node_http_address: Some(node.http.clone()),
        resource: Some(resource),
        priority: Some(priority),
        container_token,
        execution_type: Some(ExecutionTypeProto::Guaranteed as i32),
        allocation_request_id: Some(key.allocation_request_id),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yarn_rpc::messages::records::{ResourceProto, ResourceRequestProto};

    fn entry(name: &str, count: i32, relax: bool) -> ResourceRequestProto {
        ResourceRequestProto {
            priority: Some(PriorityProto { priority: Some(1) }),
            resource_name: Some(name.into()),
            capability: Some(ResourceProto {
                memory: Some(1024),
                virtual_cores: Some(1),
                ..Default::default()
            }),
            num_containers: Some(count),
            relax_locality: Some(relax),
            allocation_request_id: Some(0),
            ..Default::default()
        }
    }

    /// What every client reads back is a name and a web address: no
    /// control characters, no scheme but http(s).
    #[test]
    fn marked_containers_reach_the_master_as_yarns_capacity_scheduler_sends_them() {
        assert_eq!(preemption_message(&[]), None);
        let marked = [
            (
                "container_1_0001_01_000002".to_string(),
                Resources::new(1024, 1, 0),
            ),
            (
                "container_1_0001_01_000003".to_string(),
                Resources::new(2048, 2, 1),
            ),
        ];
        let message = preemption_message(&marked).unwrap();
        assert_eq!(message.strict_contract, None);
        let contract = message.contract.unwrap();
        let ids: Vec<String> = contract
            .container
            .iter()
            .filter_map(|c| reports::container_id_text(c.id.as_ref()?))
            .collect();
        assert_eq!(ids, [marked[0].0.clone(), marked[1].0.clone()]);
        let [wanted] = &contract.resource[..] else {
            panic!("one resource request: {contract:?}");
        };
        let ask = wanted.resource.as_ref().unwrap();
        assert_eq!(ask.resource_name.as_deref(), Some("*"));
        assert_eq!(ask.num_containers, Some(1));
        assert_eq!(
            ask.capability,
            Some(reports::resource(Resources::new(3072, 3, 1)))
        );
    }

    #[test]
    fn a_registration_names_a_host_and_an_http_tracking_url() {
        for (host, url) in [
            ("", ""),
            ("worker-1.example.com", "http://worker-1:4040"),
            ("10.0.0.7", "https://10.0.0.7:8443/proxy/app"),
            ("h", "worker-1:4040/jobs"),
            ("h", "HTTP://w:4040"),
            ("h", "http://[::1]:4040"),
            ("h", "[::1]:4040"),
            ("h", "localhost"),
            ("h", "w:4040?x=1#y"),
        ] {
            check_registration(host, url).unwrap_or_else(|e| panic!("{host} {url}: {e}"));
        }
        for (host, url, says) in [
            ("h\nforged: 1", "", "host"),
            ("h", "javascript:alert(1)", "http or https"),
            ("h", "data:text/html,<script>", "http or https"),
            ("h", "http://w:4040/\r\nX-Evil: 1", "control characters"),
            ("h", "http://w /x", "spaces"),
            ("h", "javascript:0,alert(document.cookie)", "http or https"),
            ("h", "JavaScript:1;fetch('//evil')", "http or https"),
            ("h", "vbscript:1", "http or https"),
            ("h", "data:0,x", "http or https"),
            ("h", "w:123456", "http or https"),
            ("h", "[::1", "http or https"),
            ("h", "javascript:1", "http or https"),
        ] {
            let refused = check_registration(host, url).unwrap_err().to_string();
            assert!(refused.contains(says), "{host:?} {url:?}: {refused}");
        }
        let long = format!("http://w/{}", "x".repeat(MAX_TRACKING_URL_BYTES));
        assert!(check_registration("h", &long).is_err());
    }

    /// A registration repeated keeps the master's numbering (an allocate
    /// answered before it is still the last one); one that failed leaves
    /// no session behind.
    #[test]
    fn a_repeated_registration_keeps_the_numbering() {
        let protocol = MasterProtocol::new(RmHandle::standby(None));
        let session = attempt_id("application_1_0001", 1);
        assert!(protocol.start_session(&session).unwrap());
        let Numbered::Next(next) = protocol.check_response_id(&session, 0).unwrap() else {
            panic!("a first allocate is new");
        };
        protocol.served(&session, Some((next, Arc::new(vec![1]))));
        assert!(!protocol.start_session(&session).unwrap(), "kept");
        assert!(matches!(
            protocol.check_response_id(&session, 0),
            Ok(Numbered::Repeat(_))
        ));
        assert!(matches!(
            protocol.check_response_id(&session, 1),
            Ok(Numbered::Next(2))
        ));
        protocol.end_session(&session);
        assert!(protocol.start_session(&session).unwrap());
    }

    /// When the sessions are full, the one used least recently makes room
    /// (a killed master's, say), not a master still allocating.
    #[test]
    fn the_session_used_least_recently_makes_room() {
        let protocol = MasterProtocol::new(RmHandle::standby(None));
        let name = |n: usize| attempt_id(&format!("application_1_{n:05}"), 1);
        for n in 0..MAX_SESSIONS {
            assert!(protocol.start_session(&name(n)).unwrap());
            if n == 1 {
                // The first two strictly before the rest.
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
        // The first master goes on allocating; the second is gone.
        protocol.served(&name(0), None);
        assert!(protocol.start_session(&name(MAX_SESSIONS)).unwrap());
        let sessions = protocol.sessions.lock().unwrap();
        assert_eq!(sessions.len(), MAX_SESSIONS);
        assert!(sessions.contains_key(&name(0)), "the one allocating stays");
        assert!(!sessions.contains_key(&name(1)), "the least used went");
    }

    #[test]
    fn a_keys_star_entry_counts_and_its_host_and_rack_entries_place() {
        let allocate = AllocateRequestProto {
            ask: vec![
                entry("h1", 1, true),
                entry("/r1", 1, true),
                entry("h0", 0, true),
                entry("*", 2, false),
            ],
            ..Default::default()
        };
        let (asks, _) = asks_and_releases(&allocate).unwrap();
        assert_eq!(asks.len(), 1);
        assert_eq!(asks[0].count, 2);
        assert_eq!(asks[0].places.hosts, ["h1"]);
        assert_eq!(asks[0].places.racks, ["/r1"]);
        assert!(!asks[0].places.relax_locality);
        let negative = AllocateRequestProto {
            ask: vec![ResourceRequestProto {
                capability: Some(ResourceProto {
                    memory: Some(-1),
                    ..Default::default()
                }),
                ..entry("*", 1, true)
            }],
            ..Default::default()
        };
        assert!(asks_and_releases(&negative).is_err());
    }
}
