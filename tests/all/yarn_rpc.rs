//! YARN's own RPC (Hadoop IPC 9) on `weft serve`'s client port: YARN's Java
//! client (pyspark's hadoop-client 3.4.1, unmodified) submits, watches and
//! kills an app over it (tests/yarn_rpc/ClientCheck.java), and a hostile
//! client — garbage, a 2 GB length prefix, deep and huge protobufs, calls
//! out of order, another user's app, ten thousand idle connections, a
//! master or node manager client without its token — gets a
//! clean error or a closed connection while REST and the event loop go on.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use prost::Message;
use serde_json::json;
use weft_host::yarn_rpc::frame::{EncodeDelimited, Encoded, encode_frame};
use weft_host::yarn_rpc::messages::calls::{
    GetApplicationsRequestProto, GetClusterMetricsResponseProto, GetNewApplicationResponseProto,
    KillApplicationRequestProto, SubmitApplicationRequestProto,
};
use weft_host::yarn_rpc::messages::ipc::{
    IpcConnectionContextProto, RequestHeaderProto, RpcRequestHeaderProto, RpcResponseHeaderProto,
    RpcSaslProto, UserInformationProto,
};
use weft_host::yarn_rpc::messages::records::{
    ApplicationSubmissionContextProto, ContainerLaunchContextProto, LocalResourceProto,
    LocalResourceTypeProto, ResourceProto, StringLocalResourceMapProto, StringStringMapProto,
    URLProto as UrlProto,
};
use weft_host::yarn_rpc::reports::application_id;

use crate::support::Server;

const CLIENT_PROTOCOL: &str = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB";
const SIM_NODES: &str = "2x4096mb,4vcores";

/// One Hadoop IPC connection, written by hand as a hostile client would.
struct Raw {
    stream: TcpStream,
}

/// An answer: its header, and the response message's bytes after it.
struct Answer {
    header: RpcResponseHeaderProto,
    body: Vec<u8>,
}

impl Raw {
    fn connect(address: &str) -> Raw {
        let stream = TcpStream::connect(address).expect("the RPC port accepts");
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Raw { stream }
    }

    /// Preamble (auth NONE) and a context naming `user`.
    fn simple(address: &str, user: &str) -> Raw {
        let mut raw = Raw::connect(address);
        raw.send(b"hrpc\x09\x00\x00");
        raw.context(user);
        raw
    }

    fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    fn header(call_id: i32) -> RpcRequestHeaderProto {
        RpcRequestHeaderProto {
            rpc_kind: Some(2),
            rpc_op: Some(0),
            call_id,
            client_id: vec![7; 16],
            retry_count: Some(-1),
            ..Default::default()
        }
    }

    fn context(&mut self, user: &str) {
        let context = IpcConnectionContextProto {
            user_info: Some(UserInformationProto {
                effective_user: Some(user.into()),
                real_user: None,
            }),
            protocol: Some(CLIENT_PROTOCOL.into()),
        };
        self.send(&encode_frame(&[&Raw::header(-3), &context]));
    }

    /// Sends call `id` of `method` with `request`'s bytes.
    fn send_call(&mut self, id: i32, protocol: &str, method: &str, request: Vec<u8>) {
        let method = RequestHeaderProto {
            method_name: method.into(),
            declaring_class_protocol_name: protocol.into(),
            client_protocol_version: 1,
        };
        let parts: [&dyn EncodeDelimited; 3] = [&Raw::header(id), &method, &Encoded(request)];
        self.send(&encode_frame(&parts));
    }

    /// The next answer, or None when the server closed the connection.
    fn answer(&mut self) -> Option<Answer> {
        let mut prefix = [0u8; 4];
        self.stream.read_exact(&mut prefix).ok()?;
        let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
        self.stream.read_exact(&mut body).ok()?;
        let mut rest = &body[..];
        let header = RpcResponseHeaderProto::decode_length_delimited(&mut rest).unwrap();
        Some(Answer {
            header,
            body: rest.to_vec(),
        })
    }

    fn call(&mut self, id: i32, method: &str, request: Vec<u8>) -> Answer {
        self.send_call(id, CLIENT_PROTOCOL, method, request);
        self.answer().expect("an answer")
    }

    /// Whether the server closed the connection (within the read timeout).
    fn is_closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(self.stream.read(&mut byte), Ok(0) | Err(_))
    }
}

impl Answer {
    fn message<M: Message + Default>(&self) -> M {
        assert_eq!(self.header.status, 0, "{:?}", self.header);
        M::decode_length_delimited(&self.body[..]).unwrap()
    }

    fn exception(&self) -> (&str, &str) {
        (
            self.header.exception_class_name.as_deref().unwrap_or(""),
            self.header.error_msg.as_deref().unwrap_or(""),
        )
    }
}

fn rpc_address(server: &Server) -> String {
    server
        .rpc
        .clone()
        .expect("weft serve says where YARN RPC listens")
}

/// The server keeps answering REST and RPC.
fn assert_alive(server: &Server) {
    let (status, body) = server.get("/ws/v1/cluster/metrics");
    assert_eq!(status, 200, "{body}");
    let mut raw = Raw::simple(&rpc_address(server), "alive");
    let metrics: GetClusterMetricsResponseProto =
        raw.call(1, "getClusterMetrics", Vec::new()).message();
    assert_eq!(
        metrics.cluster_metrics.and_then(|m| m.num_node_managers),
        Some(2)
    );
}

#[test]
fn calls_answer_and_a_failed_call_leaves_the_connection_open() {
    let server = Server::start(&["--sim-nodes", SIM_NODES]);
    let address = rpc_address(&server);
    let mut raw = Raw::simple(&address, "alice");
    let metrics: GetClusterMetricsResponseProto =
        raw.call(1, "getClusterMetrics", Vec::new()).message();
    assert_eq!(metrics.cluster_metrics.unwrap().num_node_managers, Some(2));

    let unknown = raw.call(2, "noSuchCall", Vec::new());
    assert_eq!(unknown.header.status, 1, "ERROR, not FATAL");
    assert_eq!(unknown.header.call_id, 2);
    assert_eq!(unknown.header.client_id.as_deref(), Some(&[7u8; 16][..]));
    let (class, message) = unknown.exception();
    assert_eq!(class, "org.apache.hadoop.ipc.RpcNoSuchMethodException");
    assert!(message.contains("noSuchCall"), "{message}");

    let unsupported = raw.call(3, "getNewReservation", Vec::new());
    let (class, message) = unsupported.exception();
    assert_eq!(class, "org.apache.hadoop.ipc.RpcNoSuchMethodException");
    assert!(
        message.contains("getNewReservation") && message.contains("not supported"),
        "{message}"
    );

    // Bytes that are no GetApplicationsRequestProto (a truncated varint).
    let garbage = raw.call(4, "getApplications", vec![0x0a, 0xff]);
    let (class, _) = garbage.exception();
    assert_eq!(class, "org.apache.hadoop.ipc.RpcServerException");

    raw.send_call(5, "org.example.NoSuchProtocolPB", "anything", Vec::new());
    let answer = raw.answer().unwrap();
    assert_eq!(
        answer.exception().0,
        "org.apache.hadoop.ipc.RpcNoSuchProtocolException"
    );

    // The same connection still serves: a new application for alice.
    let fresh: GetNewApplicationResponseProto =
        raw.call(6, "getNewApplication", Vec::new()).message();
    let id = fresh.application_id.unwrap();
    assert!(id.id.unwrap() >= 1, "{id:?}");
    assert_eq!(
        fresh.maximum_capability.unwrap().memory,
        Some(4096),
        "the largest node"
    );
}

#[test]
fn sasl_negotiation_falls_back_to_simple_as_a_security_off_server_does() {
    let server = Server::start(&["--sim-nodes", SIM_NODES]);
    let mut raw = Raw::connect(&rpc_address(&server));
    raw.send(b"hrpc\x09\x00\xdf");
    let negotiate = RpcSaslProto {
        state: 1,
        ..Default::default()
    };
    raw.send(&encode_frame(&[&Raw::header(-33), &negotiate]));
    let answer = raw.answer().expect("an answer to NEGOTIATE");
    assert_eq!(answer.header.call_id as i32, -33);
    let sasl: RpcSaslProto = answer.message();
    assert_eq!(sasl.state, 0, "SUCCESS: go on with SIMPLE");
    raw.context("carol");
    let metrics: GetClusterMetricsResponseProto =
        raw.call(1, "getClusterMetrics", Vec::new()).message();
    assert!(metrics.cluster_metrics.is_some());
}

#[test]
fn hostile_bytes_get_a_clean_refusal_and_the_server_goes_on() {
    let server = Server::start(&["--sim-nodes", SIM_NODES]);
    let address = rpc_address(&server);

    // Not Hadoop at all: closed without an answer.
    let mut raw = Raw::connect(&address);
    raw.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(raw.is_closed());

    // Another IPC version: FATAL VersionMismatch, then closed.
    let mut raw = Raw::connect(&address);
    raw.send(b"hrpc\x07\x00\x00");
    let answer = raw.answer().expect("a FATAL answer");
    assert_eq!(answer.header.status, 2);
    assert_eq!(
        answer.exception().0,
        "org.apache.hadoop.ipc.RPC$VersionMismatch"
    );
    assert!(raw.is_closed());

    // A length prefix of 2 GB: refused at once, nothing of it read.
    let mut raw = Raw::simple(&address, "mallory");
    let started = Instant::now();
    raw.send(&[0x7f, 0xff, 0xff, 0xff, 1, 2, 3]);
    let answer = raw.answer().expect("a FATAL answer");
    assert_eq!(answer.header.status, 2);
    assert!(
        answer.exception().1.contains("2147483647"),
        "{:?}",
        answer.exception()
    );
    assert!(raw.is_closed());
    assert!(started.elapsed() < Duration::from_secs(10));

    // One byte above the frame limit (8 MiB): refused the same way.
    let mut raw = Raw::simple(&address, "mallory");
    raw.send(&((8u32 << 20) + 1).to_be_bytes());
    assert_eq!(raw.answer().expect("a FATAL answer").header.status, 2);

    // A call before the connection context.
    let mut raw = Raw::connect(&address);
    raw.send(b"hrpc\x09\x00\x00");
    raw.send_call(1, CLIENT_PROTOCOL, "getClusterMetrics", Vec::new());
    let answer = raw.answer().expect("a FATAL answer");
    assert_eq!(answer.header.status, 2);
    assert!(answer.exception().1.contains("Connection context"));
    assert!(raw.is_closed());

    // A header without rpcKind.
    let mut raw = Raw::simple(&address, "mallory");
    let mut header = Raw::header(1);
    header.rpc_kind = None;
    raw.send(&encode_frame(&[&header]));
    assert_eq!(raw.answer().expect("a FATAL answer").header.status, 2);
    assert!(raw.is_closed());

    // A header that is not a protobuf.
    let mut raw = Raw::simple(&address, "mallory");
    raw.send(&[0, 0, 0, 3, 2, 0xff, 0xff]);
    assert_eq!(raw.answer().expect("a FATAL answer").header.status, 2);

    // A deep protobuf: 100,000 nested length-delimited fields in an
    // unknown field, then in a known one (the submission context).
    let mut deep = Vec::new();
    for _ in 0..100_000 {
        let mut outer = vec![0x7a]; // field 15, length-delimited
        prost::encoding::encode_varint(deep.len() as u64, &mut outer);
        outer.extend_from_slice(&deep);
        deep = outer;
        if deep.len() > 4 << 20 {
            break;
        }
    }
    let mut raw = Raw::simple(&address, "mallory");
    let answer = raw.call(1, "getApplications", deep.clone());
    assert!(answer.header.status <= 1, "{:?}", answer.header);
    let mut nested = vec![0x0a]; // field 1: the submission context
    prost::encoding::encode_varint(deep.len() as u64, &mut nested);
    nested.extend_from_slice(&deep);
    let answer = raw.call(2, "submitApplication", nested);
    assert_eq!(answer.header.status, 1, "{:?}", answer.header);

    // A huge one within the frame limit: 400,000 user filters in 6 MB,
    // refused naming the limit.
    let huge = GetApplicationsRequestProto {
        users: (0..400_000).map(|i| format!("user{i:08}")).collect(),
        ..Default::default()
    };
    let answer = raw.call(3, "getApplications", huge.encode_to_vec());
    assert_eq!(answer.header.status, 1, "{:?}", answer.header);
    assert!(
        answer.exception().1.contains("at most 1000"),
        "{:?}",
        answer.exception()
    );

    // A negative call id other than ping after the context: FATAL.
    raw.send_call(-7, CLIENT_PROTOCOL, "getClusterMetrics", Vec::new());
    assert_eq!(raw.answer().expect("a FATAL answer").header.status, 2);

    assert_alive(&server);
}

#[test]
fn announced_frames_that_never_arrive_hold_no_one_else_up() {
    let server = Server::start(&["--sim-nodes", SIM_NODES]);
    let address = rpc_address(&server);
    // Before the context only small frames are taken.
    let mut raw = Raw::connect(&address);
    raw.send(b"hrpc\x09\x00\x00");
    raw.send(&(1u32 << 20).to_be_bytes());
    assert_eq!(raw.answer().expect("a FATAL answer").header.status, 2);
    // After it, 40 connections announce 8 MiB each (320 MiB, above what
    // the server holds at once) and send nothing more.
    let mut stalled = Vec::new();
    for _ in 0..40 {
        let mut raw = Raw::simple(&address, "mallory");
        raw.send(&(8u32 << 20).to_be_bytes());
        stalled.push(raw);
    }
    std::thread::sleep(Duration::from_millis(500));
    // Others are served meanwhile.
    let mut raw = Raw::simple(&address, "alice");
    let metrics: GetClusterMetricsResponseProto =
        raw.call(1, "getClusterMetrics", Vec::new()).message();
    assert_eq!(metrics.cluster_metrics.unwrap().num_node_managers, Some(2));
    drop(stalled);
    assert_alive(&server);
}

#[test]
fn another_users_app_is_neither_killed_nor_submitted_under_by_a_stranger() {
    let server = Server::start(&[
        "--sim-nodes",
        SIM_NODES,
        "--set",
        "yarn.scheduler.capacity.root.acl_administer_queue= ",
        "--set",
        "yarn.admin.acl=ops",
    ]);
    let address = rpc_address(&server);
    let (status, body) = server.post_json_as(
        "/ws/v1/cluster/apps",
        &json!({"queue": "default", "project": "p",
            "asks": [{"count": 1, "memory_mb": 512, "vcores": 1, "duration_ms": 600_000}]}),
        Some("alice"),
    );
    assert_eq!(status, 202, "{body}");
    let id = body["app"]["id"].as_str().unwrap().to_string();

    let mut bob = Raw::simple(&address, "bob");
    let kill = KillApplicationRequestProto {
        application_id: Some(application_id(&id)),
        diagnostics: None,
    };
    let answer = bob.call(1, "forceKillApplication", kill.encode_to_vec());
    assert_eq!(
        answer.exception().0,
        "org.apache.hadoop.security.AccessControlException"
    );
    let (_, app) = server.get(&format!("/ws/v1/cluster/apps/{id}"));
    assert_ne!(app["app"]["state"], "KILLED", "{app}");

    // An id alice got from getNewApplication is hers alone.
    let mut alice = Raw::simple(&address, "alice");
    let fresh: GetNewApplicationResponseProto =
        alice.call(1, "getNewApplication", Vec::new()).message();
    let submission = SubmitApplicationRequestProto {
        application_submission_context: Some(ApplicationSubmissionContextProto {
            application_id: fresh.application_id.clone(),
            am_container_spec: Some(ContainerLaunchContextProto {
                command: vec!["true".into()],
                ..Default::default()
            }),
            resource: Some(ResourceProto {
                memory: Some(256),
                virtual_cores: Some(1),
                resource_value_map: Vec::new(),
            }),
            ..Default::default()
        }),
    };
    let answer = bob.call(2, "submitApplication", submission.encode_to_vec());
    assert_eq!(
        answer.exception().0,
        "org.apache.hadoop.security.AccessControlException"
    );
    assert!(
        answer.exception().1.contains("alice"),
        "{:?}",
        answer.exception()
    );

    // Alice kills her own.
    let answer = alice.call(2, "forceKillApplication", kill.encode_to_vec());
    let killed: weft_host::yarn_rpc::messages::calls::KillApplicationResponseProto =
        answer.message();
    assert_eq!(killed.is_kill_completed, Some(true));
}

#[test]
fn ten_thousand_idle_connections_leave_rest_and_the_event_loop_going() {
    let server = Server::start(&["--sim-nodes", SIM_NODES]);
    let address = rpc_address(&server);
    let mut idle = Vec::new();
    for _ in 0..10_000 {
        match TcpStream::connect(&address) {
            Ok(stream) => idle.push(stream),
            // The backlog may refuse some: that is a clean refusal too.
            Err(_) => continue,
        }
    }
    assert!(idle.len() >= 5_000, "only {} connected", idle.len());
    // REST and the event loop go on: a submission is accepted.
    let (status, body) = server.post_json(
        "/ws/v1/cluster/apps",
        &json!({"queue": "default", "project": "p",
            "asks": [{"count": 1, "memory_mb": 512, "vcores": 1, "duration_ms": 1000}]}),
    );
    assert_eq!(status, 202, "{body}");
    // A new RPC client now is either served or closed (the limits per
    // address and in all), never left hanging.
    let mut late = Raw::connect(&address);
    late.stream
        .set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    let method = RequestHeaderProto {
        method_name: "getClusterMetrics".into(),
        declaring_class_protocol_name: CLIENT_PROTOCOL.into(),
        client_protocol_version: 1,
    };
    let context = IpcConnectionContextProto {
        user_info: None,
        protocol: Some(CLIENT_PROTOCOL.into()),
    };
    let mut bytes = b"hrpc\x09\x00\x00".to_vec();
    bytes.extend(encode_frame(&[&Raw::header(-3), &context]));
    bytes.extend(encode_frame(&[
        &Raw::header(1),
        &method,
        &Encoded(Vec::new()),
    ]));
    if late.stream.write_all(&bytes).is_ok()
        && let Some(answer) = late.answer()
    {
        assert_eq!(answer.header.status, 0);
    }
    drop(idle);
    // Once they are gone, RPC serves again.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut raw = Raw::simple(&address, "after");
        raw.send_call(1, CLIENT_PROTOCOL, "getClusterMetrics", Vec::new());
        if raw.answer().is_some_and(|a| a.header.status == 0) {
            break;
        }
        assert!(Instant::now() < deadline, "RPC did not serve again");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_alive(&server);
}

/// pyspark 4.0.1 from PyPI (Spark's YARN client and Hadoop 3.4.1's client
/// jars), installed once into the build's directory; None (a skip) where
/// Java is missing, except under CI.
pub(crate) fn pyspark_jars() -> Option<PathBuf> {
    let java = Command::new("java")
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !java.is_ok_and(|s| s.success()) {
        assert!(
            std::env::var_os("CI").is_none(),
            "java is missing (install openjdk-17-jdk-headless)"
        );
        let test = std::thread::current().name().unwrap_or("?").to_string();
        let _ = writeln!(
            std::io::stderr(),
            "******** skipped {test}: no java ********"
        );
        return None;
    }
    let dir = crate::support::pip_installed(
        "pyspark==4.0.1",
        "pyspark-4.0.1",
        "pyspark/jars/hadoop-client-api-3.4.1.jar",
    );
    let jars = dir.join("pyspark").join("jars");
    Some(jars)
}

/// YARN's own client (tests/yarn_rpc/ClientCheck.java) against the client
/// port at `address`, its master `sleep 300`, with `env` added (and no
/// HADOOP_TOKEN_FILE_LOCATION but `env`'s).
fn client_check(
    jars: &Path,
    address: &str,
    env: &[(&str, &std::ffi::OsStr)],
) -> std::process::Output {
    let mut java = Command::new("java");
    java.arg("-cp")
        .arg(jars.join("*"))
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/yarn_rpc/ClientCheck.java"))
        .arg(address)
        .arg("sleep 300")
        .env_remove("HADOOP_TOKEN_FILE_LOCATION")
        .envs(env.iter().copied());
    java.output().expect("java runs")
}

/// The `key=value` lines a client check printed; it must have succeeded.
fn read_check(output: &std::process::Output) -> std::collections::BTreeMap<String, String> {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn yarns_own_client_submits_watches_and_kills_over_rpc() {
    let Some(jars) = pyspark_jars() else { return };
    let dir = crate::support::shared_tempdir();
    // The client asks priority 3, which the cluster's highest (0 by
    // default, as YARN's) would cut.
    // And it moves its app to queue b and back.
    let server = Server::start_with_local_agent(
        &dir.path().join("data"),
        &[
            "--set",
            "yarn.cluster.max-application-priority=10",
            "--set",
            "yarn.scheduler.capacity.root.queues=default,b",
            "--set",
            "yarn.scheduler.capacity.root.default.capacity=99",
            "--set",
            "yarn.scheduler.capacity.root.b.capacity=1",
        ],
        None,
    );
    let output = client_check(
        &jars,
        &rpc_address(&server),
        &[
            ("CHECK_CONTAINERS", "1".as_ref()),
            ("CHECK_MOVE_TO", "b".as_ref()),
        ],
    );
    let read = read_check(&output);
    let (_, metrics) = server.get("/ws/v1/cluster/metrics");
    assert_eq!(
        read["nodemanagers"],
        metrics["clusterMetrics"]["activeNodes"].to_string()
    );
    assert_eq!(read["queue.name"], "default");
    assert_eq!(read["queue.capacity"], "0.99");
    // Its master never registers (it is `sleep`): YARN says ACCEPTED
    // until a master does, whatever runs.
    assert_eq!(read["report.state"], "ACCEPTED");
    assert_eq!(read["report.name"], "rpc-check");
    assert_eq!(read["report.type"], "RPC-CHECK");
    assert_eq!(read["report.tags"], "check,project:rpcproj");
    assert_eq!(read["report.priority"], "3");
    assert_eq!(read["listed"], "true");
    assert_eq!(read["updated.priority"], "10");
    assert_eq!(read["updated.report.priority"], "10");
    assert_eq!(read["moved.queue"], "b");
    assert_eq!(read["moved.back"], "default");
    assert_eq!(read["move.unknown"], "refused");
    assert_eq!(read["killed.state"], "KILLED");
    assert_eq!(read["unknown"], "ApplicationNotFoundException");
    // Its attempt, and its master's container as the attempt names it.
    assert_eq!(read["attempts"], "1");
    assert_eq!(read["attempt.id"], read["report.attempt"]);
    assert_eq!(read["containers"], "1");
    assert_eq!(read["container.state"], "RUNNING");
    assert_eq!(read["container.is.am"], "true");
    // What the client read is what REST says; the tag named the project.
    let id = &read["app.id"];
    let (_, app) = server.get(&format!("/ws/v1/cluster/apps/{id}"));
    assert_eq!(app["app"]["project"], "rpcproj", "{app}");
    assert_eq!(app["app"]["state"], "KILLED", "{app}");
    assert_eq!(app["app"]["user"], read["report.user"], "{app}");
    assert_eq!(
        read["max.memory"],
        metrics["clusterMetrics"]["totalMB"].to_string()
    );
}

/// Token mode: YARN's own client, given a delegation token from `weft
/// token yarn`, submits, watches and kills as the token's owner; without a
/// token, or once its owner's bearer tokens are revoked, it is refused.
#[test]
fn in_token_mode_yarns_client_authenticates_with_a_delegation_token() {
    let Some(jars) = pyspark_jars() else { return };
    let dir = crate::support::shared_tempdir();
    let data = dir.path().join("data");
    let tokens = dir.path().join("tokens.toml");
    let alice = crate::hostile_tenant::token(&tokens, "alice");
    let bob = crate::hostile_tenant::token(&tokens, "bob");
    let tokens_setting = format!("weft.security.tokens-file={}", tokens.display());
    // No agent: the app is ACCEPTED until its master registers anyway.
    let server = Server::start_in(
        &data,
        &[
            "--set",
            "weft.security.authentication=token",
            "--set",
            &tokens_setting,
        ],
    );
    let address = rpc_address(&server);
    let credentials = |bearer: &str, file: &str| {
        let file = dir.path().join(file);
        let output = crate::support::weft_command()
            .args([
                "token",
                "yarn",
                "--server",
                &server.base,
                "--rm-address",
                &address,
            ])
            .arg("--out")
            .arg(&file)
            .env("WEFT_TOKEN", bearer)
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        file
    };
    let (alice_file, bob_file) = (
        credentials(&alice, "alice.creds"),
        credentials(&bob, "bob.creds"),
    );
    let check = |token_file: Option<&Path>| match token_file {
        Some(file) => client_check(
            &jars,
            &address,
            &[("HADOOP_TOKEN_FILE_LOCATION", file.as_os_str())],
        ),
        None => client_check(&jars, &address, &[]),
    };
    let read = read_check(&check(Some(&alice_file)));
    assert_eq!(read["report.user"], "alice", "{read:?}");
    assert_eq!(read["killed.state"], "KILLED", "{read:?}");
    let (status, app) = server.request(
        "GET",
        &format!("/ws/v1/cluster/apps/{}", read["app.id"]),
        &[("authorization", &format!("Bearer {alice}"))],
        None,
    );
    assert_eq!(
        (status, &app["app"]["user"]),
        (200, &json!("alice")),
        "{app}"
    );

    let refused = |output: std::process::Output, why: &str| {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success() && stderr.contains(why), "{stderr}");
    };
    refused(check(None), "weft token yarn");
    // Cancelled by its owner: refused from then on.
    let cancelled = crate::support::weft_command()
        .args(["token", "cancel", "--server", &server.base])
        .arg(&alice_file)
        .env("WEFT_TOKEN", &alice)
        .output()
        .unwrap();
    assert!(cancelled.status.success(), "{cancelled:?}");
    refused(check(Some(&alice_file)), "lapsed or was cancelled");
    let revoked = crate::support::weft(&[
        "token",
        "revoke",
        "bob",
        "--tokens-file",
        tokens.to_str().unwrap(),
    ]);
    assert!(revoked.status.success(), "{revoked:?}");
    std::thread::sleep(Duration::from_millis(1500));
    refused(check(Some(&bob_file)), "were revoked");
    // Simple mode issues none: its clients need none.
    let simple = Server::start(&[]);
    let (status, body) = simple.post_json("/ws/v1/cluster/delegation-token", &json!({}));
    assert_eq!(status, 403, "{body}");
}

/// Token mode, through the binary: `weft token renew` renews a token for
/// its renewer only, `weft token cancel` cancels it for its owner or
/// renewer only, after which it renews no more; the REST calls name a bad
/// or missing header; simple mode has none of it.
#[test]
fn delegation_tokens_are_renewed_by_their_renewer_and_cancelled_by_owner_or_renewer() {
    let dir = crate::support::shared_tempdir();
    let tokens = dir.path().join("tokens.toml");
    let alice = crate::hostile_tenant::token(&tokens, "alice");
    let bob = crate::hostile_tenant::token(&tokens, "bob");
    let carol = crate::hostile_tenant::token(&tokens, "carol");
    let tokens_setting = format!("weft.security.tokens-file={}", tokens.display());
    let server = Server::start_in(
        &dir.path().join("data"),
        &[
            "--set",
            "weft.security.authentication=token",
            "--set",
            &tokens_setting,
        ],
    );
    let weft_as = |bearer: &str, args: &[&str]| {
        crate::support::weft_command()
            .args(args)
            .args(["--server", &server.base])
            .env("WEFT_TOKEN", bearer)
            .output()
            .unwrap()
    };
    let file = dir.path().join("alice.creds");
    let file_arg = file.to_str().unwrap();
    // Alice's token, which bob may renew.
    let made = weft_as(
        &alice,
        &[
            "token",
            "yarn",
            "--renewer",
            "bob",
            "--rm-address",
            "127.0.0.1:8032",
            "--out",
            file_arg,
        ],
    );
    assert!(made.status.success(), "{made:?}");
    let said = |output: &std::process::Output, ok: bool, words: &str| {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.success(), ok, "{stderr}");
        assert!(stderr.contains(words), "wanted {words:?}: {stderr}");
    };
    said(
        &weft_as(&alice, &["token", "renew", file_arg]),
        false,
        "alice may not renew the RM delegation token of alice",
    );
    said(
        &weft_as(&bob, &["token", "renew", file_arg]),
        true,
        "is valid until",
    );
    said(
        &weft_as(&carol, &["token", "cancel", file_arg]),
        false,
        "only its owner or renewer may",
    );
    said(
        &weft_as(&alice, &["token", "cancel", file_arg]),
        true,
        "is cancelled",
    );
    said(
        &weft_as(&bob, &["token", "renew", file_arg]),
        false,
        "lapsed or was cancelled",
    );
    // A file without one is named as such.
    std::fs::write(dir.path().join("empty.creds"), b"").unwrap();
    said(
        &weft_as(
            &bob,
            &[
                "token",
                "renew",
                dir.path().join("empty.creds").to_str().unwrap(),
            ],
        ),
        false,
        "holds no RM delegation token",
    );

    // REST: the header missing, too long, not a token.
    let bearer = format!("Bearer {bob}");
    for (header, status, words) in [
        (
            None,
            400,
            "the Hadoop-YARN-RM-Delegation-Token header is missing",
        ),
        (Some("A".repeat(5000)), 400, "more than 4096"),
        (Some("not!base64".to_string()), 400, "not URL-safe base64"),
        (Some(String::new()), 400, "header is empty"),
        (
            Some("AAAA".to_string()),
            400,
            "Hadoop-YARN-RM-Delegation-Token header",
        ),
    ] {
        for (method, path) in [
            ("POST", "/ws/v1/cluster/delegation-token/expiration"),
            ("DELETE", "/ws/v1/cluster/delegation-token"),
        ] {
            let mut headers = vec![("authorization", bearer.as_str())];
            if let Some(value) = &header {
                headers.push(("Hadoop-YARN-RM-Delegation-Token", value));
            }
            let (got, body) = server.request(method, path, &headers, None);
            assert_eq!(got, status, "{method} {path}: {body}");
            assert!(body.to_string().contains(words), "{method} {path}: {body}");
        }
    }
    // No caller, no renewal.
    let (status, body) = server.request(
        "POST",
        "/ws/v1/cluster/delegation-token/expiration",
        &[("Hadoop-YARN-RM-Delegation-Token", "AAAA")],
        None,
    );
    assert_eq!(status, 401, "{body}");

    // Simple mode issues, renews and cancels none.
    let simple = Server::start(&[]);
    for (method, path) in [
        ("POST", "/ws/v1/cluster/delegation-token/expiration"),
        ("DELETE", "/ws/v1/cluster/delegation-token"),
    ] {
        let (status, body) = simple.request(
            method,
            path,
            &[("Hadoop-YARN-RM-Delegation-Token", "AAAA")],
            None,
        );
        assert_eq!(status, 403, "{method} {path}: {body}");
    }
}

/// A local resource of `path` for a launch context.
fn local_resource(
    key: &str,
    path: &Path,
    kind: LocalResourceTypeProto,
) -> StringLocalResourceMapProto {
    let metadata = std::fs::metadata(path).unwrap();
    let mtime = metadata
        .modified()
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    StringLocalResourceMapProto {
        key: Some(key.into()),
        value: Some(LocalResourceProto {
            resource: Some(UrlProto {
                scheme: Some("file".into()),
                port: Some(-1),
                file: Some(path.to_string_lossy().into()),
                ..Default::default()
            }),
            size: Some(metadata.len() as i64),
            timestamp: Some(mtime),
            r#type: Some(kind as i32),
            visibility: Some(2),
            ..Default::default()
        }),
    }
}

/// Submits an app over RPC as `user` whose AM runs `commands` with `env`
/// and `resources`; its id.
fn submit_launch(
    address: &str,
    user: &str,
    commands: Vec<String>,
    env: &[(&str, &str)],
    resources: Vec<StringLocalResourceMapProto>,
    tokens: Option<Vec<u8>>,
) -> String {
    let mut raw = Raw::simple(address, user);
    let fresh: GetNewApplicationResponseProto =
        raw.call(1, "getNewApplication", Vec::new()).message();
    let id = fresh.application_id.unwrap();
    let submission = SubmitApplicationRequestProto {
        application_submission_context: Some(ApplicationSubmissionContextProto {
            application_id: Some(id.clone()),
            application_name: Some("launch-check".into()),
            am_container_spec: Some(ContainerLaunchContextProto {
                command: commands,
                environment: env
                    .iter()
                    .map(|(k, v)| StringStringMapProto {
                        key: Some(k.to_string()),
                        value: Some(v.to_string()),
                    })
                    .collect(),
                local_resources: resources,
                tokens,
                ..Default::default()
            }),
            resource: Some(ResourceProto {
                memory: Some(128),
                virtual_cores: Some(1),
                resource_value_map: Vec::new(),
            }),
            max_app_attempts: Some(1),
            ..Default::default()
        }),
    };
    let answer = raw.call(2, "submitApplication", submission.encode_to_vec());
    assert_eq!(answer.header.status, 0, "{:?}", answer.exception());
    weft_host::yarn_rpc::reports::application_id_text(Some(&id)).unwrap()
}

/// `weft app logs ID [--stderr]` of a server.
fn logs(server: &Server, id: &str, stderr: bool) -> String {
    let mut args = vec!["app", "logs", "--server", &server.base, id];
    if stderr {
        args.push("--stderr");
    }
    let output = crate::support::weft_within(&args, Duration::from_secs(60));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_launch_context_is_localized_expanded_and_run_as_a_node_manager_runs_it() {
    let dir = crate::support::shared_tempdir();
    let staging = dir.path().join("staging");
    std::fs::create_dir(&staging).unwrap();
    std::fs::write(staging.join("app.txt"), "from a file\n").unwrap();
    let zip_path = staging.join("__conf__.zip");
    {
        use std::io::Write as _;
        let mut writer = zip::ZipWriter::new(std::fs::File::create(&zip_path).unwrap());
        let options = zip::write::SimpleFileOptions::default();
        writer.start_file("conf/app.properties", options).unwrap();
        writer.write_all(b"answer=42\n").unwrap();
        writer.finish().unwrap();
    }
    let jar_path = staging.join("job.jar");
    {
        use std::io::Write as _;
        let mut writer = zip::ZipWriter::new(std::fs::File::create(&jar_path).unwrap());
        let options = zip::write::SimpleFileOptions::default();
        writer.start_file("lib/x.txt", options).unwrap();
        writer.write_all(b"from-a-pattern\n").unwrap();
        writer.start_file("other.txt", options).unwrap();
        writer.finish().unwrap();
    }
    let mut pattern = local_resource("job.jar", &jar_path, LocalResourceTypeProto::Pattern);
    pattern.value.as_mut().unwrap().pattern = Some("lib/.*".into());
    let server = Server::start_with_local_agent(
        &dir.path().join("data"),
        &[
            "--set",
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms=100",
        ],
        None,
    );
    let address = rpc_address(&server);
    let tokens = b"HDTS\x00\x00\x00".to_vec();
    let id = submit_launch(
        &address,
        "root",
        vec![
            "{ cat app.txt __conf__/conf/app.properties;".into(),
            "echo \\\"cp=$CLASSPATH\\\" amrm=$(grep -ao YARN_AM_RM_TOKEN $HADOOP_TOKEN_FILE_LOCATION | wc -l) proxy=$APPLICATION_WEB_PROXY_BASE;".into(),
            "test -d tmp && test -n \\\"$LOCAL_DIRS\\\" && echo dirs-ok;".into(),
            "cat job.jar/lib/x.txt; test -f job.jar/job.jar && test ! -e job.jar/other.txt && echo pattern-kept;".into(),
            "echo to-stderr >&2; }".into(),
            "1><LOG_DIR>/stdout 2><LOG_DIR>/stderr".into(),
        ],
        &[("CLASSPATH", "{{PWD}}<CPS>{{PWD}}/__conf__")],
        vec![
            local_resource("app.txt", &staging.join("app.txt"), LocalResourceTypeProto::File),
            local_resource("__conf__", &zip_path, LocalResourceTypeProto::Archive),
            pattern,
        ],
        Some(tokens),
    );
    let app = server.wait_for(
        &format!("/ws/v1/cluster/apps/{id}"),
        "the app to end",
        |b| b["app"]["state"] == "FINISHED" || b["app"]["state"] == "FAILED",
    );
    let stdout = logs(&server, &id, false);
    assert_eq!(
        app["app"]["state"],
        "FINISHED",
        "{app}\n{stdout}\n{}",
        logs(&server, &id, true)
    );
    assert!(stdout.contains("from a file"), "{stdout}");
    assert!(stdout.contains("answer=42"), "{stdout}");
    assert!(stdout.contains("dirs-ok"), "{stdout}");
    assert!(stdout.contains("from-a-pattern"), "{stdout}");
    assert!(stdout.contains("pattern-kept"), "{stdout}");
    assert!(stdout.contains(&format!("proxy=/proxy/{id}")), "{stdout}");
    // The client's (empty) credentials, with the master's AMRMToken added
    // (its alias and its kind name it).
    assert!(stdout.contains("amrm=2"), "{stdout}");
    // {{PWD}} expanded by bash to the container's directory, <CPS> to ':'.
    let classpath = stdout
        .split("cp=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_default()
        .to_string();
    assert!(
        classpath.starts_with('/') && classpath.contains(":/") && classpath.ends_with("/__conf__"),
        "{stdout}"
    );
    assert!(logs(&server, &id, true).contains("to-stderr"));

    // A resource that changed since the client saw it fails the container
    // with YARN's diagnostic.
    let mut stale = local_resource(
        "app.txt",
        &staging.join("app.txt"),
        LocalResourceTypeProto::File,
    );
    if let Some(value) = stale.value.as_mut() {
        value.timestamp = Some(1);
    }
    let id = submit_launch(
        &address,
        "root",
        vec!["true".into()],
        &[],
        vec![stale],
        None,
    );
    let app = server.wait_for(
        &format!("/ws/v1/cluster/apps/{id}"),
        "the app to fail",
        |b| b["app"]["state"] == "FAILED" || b["app"]["state"] == "FINISHED",
    );
    assert_eq!(app["app"]["state"], "FAILED", "{app}");
    assert!(
        app["app"]["diagnostics"]
            .as_str()
            .is_some_and(|d| d.contains("changed on src filesystem")),
        "{app}"
    );

    // A scheme other than file: is refused at submission, naming it.
    let mut raw = Raw::simple(&address, "root");
    let fresh: GetNewApplicationResponseProto =
        raw.call(1, "getNewApplication", Vec::new()).message();
    let mut remote = local_resource("x", &staging.join("app.txt"), LocalResourceTypeProto::File);
    if let Some(url) = remote.value.as_mut().and_then(|v| v.resource.as_mut()) {
        url.scheme = Some("hdfs".into());
        url.host = Some("namenode".into());
    }
    let submission = SubmitApplicationRequestProto {
        application_submission_context: Some(ApplicationSubmissionContextProto {
            application_id: fresh.application_id,
            am_container_spec: Some(ContainerLaunchContextProto {
                command: vec!["true".into()],
                local_resources: vec![remote],
                ..Default::default()
            }),
            resource: Some(ResourceProto {
                memory: Some(128),
                virtual_cores: Some(1),
                resource_value_map: Vec::new(),
            }),
            ..Default::default()
        }),
    };
    let answer = raw.call(2, "submitApplication", submission.encode_to_vec());
    assert!(
        answer.exception().1.contains("hdfs://namenode"),
        "{:?}",
        answer.exception()
    );
}

const MASTER_PROTOCOL: &str = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB";
const NODE_MANAGER_PROTOCOL: &str = "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB";

/// The scheduler port and an agent's ContainerManagementProtocol take only
/// their tokens: a master or node manager client without one (SIMPLE,
/// whoever it says it is) gets AccessControlException on every call and
/// changes nothing; a forged DIGEST-MD5 answer is FATAL; the server goes on.
#[test]
fn masters_and_node_managers_without_their_tokens_are_refused() {
    use weft_host::yarn_rpc::messages::calls::GetClusterNodesResponseProto;
    let dir = crate::support::shared_tempdir();
    let server = Server::start_with_local_agent(&dir.path().join("data"), &[], None);
    let scheduler = server.scheduler.clone().expect("the scheduler port");
    // The local agent's NodeId is where it serves ContainerManagementProtocol.
    let mut client = Raw::simple(&rpc_address(&server), "alice");
    let deadline = Instant::now() + Duration::from_secs(20);
    let node_manager = loop {
        let nodes: GetClusterNodesResponseProto =
            client.call(1, "getClusterNodes", Vec::new()).message();
        if let Some(node) = nodes.node_reports.first() {
            let id = node.node_id.clone().unwrap();
            break format!("{}:{}", id.host.unwrap(), id.port.unwrap());
        }
        assert!(
            Instant::now() < deadline,
            "the local agent never registered"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(!node_manager.ends_with(":0"), "{node_manager}");

    for (address, protocol, methods, token) in [
        (
            &scheduler,
            MASTER_PROTOCOL,
            &[
                "registerApplicationMaster",
                "allocate",
                "finishApplicationMaster",
            ][..],
            "AMRMToken",
        ),
        (
            &node_manager,
            NODE_MANAGER_PROTOCOL,
            &["startContainers", "stopContainers", "getContainerStatuses"][..],
            "NMToken",
        ),
    ] {
        let mut raw = Raw::connect(address);
        raw.send(b"hrpc\x09\x00\x00");
        raw.context("appattempt_1_0001_000001");
        for (id, method) in methods.iter().enumerate() {
            raw.send_call(id as i32, protocol, method, Vec::new());
            let answer = raw.answer().expect("an answer");
            assert_eq!(answer.header.status, 1, "ERROR: {:?}", answer.header);
            let (class, message) = answer.exception();
            assert_eq!(class, "org.apache.hadoop.security.AccessControlException");
            assert!(message.contains(token), "{message}");
        }

        // Asked for SASL, the port offers its token first, then SIMPLE.
        let mut raw = Raw::connect(address);
        raw.send(b"hrpc\x09\x00\xdf");
        let negotiate = RpcSaslProto {
            state: 1,
            ..Default::default()
        };
        raw.send(&encode_frame(&[&Raw::header(-33), &negotiate]));
        let offered: RpcSaslProto = raw.answer().expect("NEGOTIATE's answer").message();
        assert_eq!(offered.state, 1, "NEGOTIATE with the methods");
        assert_eq!(offered.auths[0].method, "TOKEN");
        assert_eq!(offered.auths[0].mechanism, "DIGEST-MD5");
        // A made-up token: refused, FATAL, closed.
        let forged = format!(
            "charset=utf-8,username=\"{}\",realm=\"default\",nonce=\"made-up\",nc=00000001,cnonce=\"x\",digest-uri=\"/default\",maxbuf=65536,response=00112233445566778899aabbccddeeff,qop=auth",
            "AAAA"
        );
        let initiate = RpcSaslProto {
            state: 2,
            token: Some(forged.into_bytes()),
            auths: vec![offered.auths[0].clone()],
            ..Default::default()
        };
        raw.send(&encode_frame(&[&Raw::header(-33), &initiate]));
        let refused = raw.answer().expect("a FATAL answer");
        assert_eq!(refused.header.status, 2, "{:?}", refused.header);
        assert!(raw.is_closed());
    }
    let (status, _) = server.get("/ws/v1/cluster/metrics");
    assert_eq!(status, 200);
    let (_, apps) = server.get("/ws/v1/cluster/apps");
    assert!(apps["apps"].is_null() || apps["apps"]["app"].as_array().is_none_or(|a| a.is_empty()));
}
