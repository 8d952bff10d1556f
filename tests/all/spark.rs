//! Apache Spark from PyPI (pyspark 4.0.1: spark-submit, Spark's YARN client
//! and application master, Hadoop 3.4.1's client) runs its pi example on
//! `weft serve` unchanged, over YARN's own protocols: submitted on the
//! client port, its master asking on the scheduler port and starting its
//! executor on the local agent's ContainerManagementProtocol, charged to
//! the project its tags name, listed and accounted like any app; killed,
//! it leaves no process behind. One server serves the three runs.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::Server;

/// How long one Spark run may take here (JVM starts on 2 cores, twice).
const RUN_LIMIT: Duration = Duration::from_secs(300);

/// A server with its local agent and YARN's ports, and where Spark's
/// staging and configuration go.
struct SparkSite {
    server: Server,
    spark_home: PathBuf,
    conf_dir: PathBuf,
    staging: PathBuf,
    _dir: tempfile::TempDir,
}

impl SparkSite {
    fn start() -> Option<SparkSite> {
        let jars = crate::yarn_rpc::pyspark_jars()?;
        let spark_home = jars.parent().unwrap().to_path_buf();
        // Under the build's directory, not /tmp: a container has a /tmp of
        // its own, and Spark's master reads what the client staged.
        let dir = crate::support::shared_tempdir();
        let server = Server::start_with_local_agent(&dir.path().join("data"), &[], None);
        let conf_dir = dir.path().join("conf");
        std::fs::create_dir_all(&conf_dir).unwrap();
        let staging = dir.path().join("staging");
        Some(SparkSite {
            server,
            spark_home,
            conf_dir,
            staging,
            _dir: dir,
        })
    }

    /// spark-submit of the pi example in `mode` with `slices`, tagged
    /// `project:science`; not waited for.
    fn submit(&self, mode: &str, slices: u32, name: &str) -> std::process::Child {
        self.submit_with(mode, slices, name, &[], Stdio::piped())
    }

    /// As [`SparkSite::submit`], with `extra` confs (later ones win) and
    /// its stderr to `stderr`.
    fn submit_with(
        &self,
        mode: &str,
        slices: u32,
        name: &str,
        extra: &[&str],
        stderr: Stdio,
    ) -> std::process::Child {
        let rpc = self.server.rpc.as_deref().expect("YARN's client port");
        let scheduler = self
            .server
            .scheduler
            .as_deref()
            .expect("YARN's scheduler port");
        let python = which("python3");
        let java_home = java_home();
        let mut command = Command::new(self.spark_home.join("bin").join("spark-submit"));
        command
            .env("SPARK_HOME", &self.spark_home)
            .env("HADOOP_CONF_DIR", &self.conf_dir)
            .env("SPARK_CONF_DIR", &self.conf_dir)
            .env("JAVA_HOME", &java_home)
            .env("PYSPARK_PYTHON", &python)
            .env("SPARK_LOCAL_IP", "127.0.0.1")
            .args(["--master", "yarn", "--deploy-mode", mode, "--name", name]);
        let confs = [
            format!("spark.yarn.jars=local:{}/jars/*", self.spark_home.display()),
            format!("spark.yarn.stagingDir={}", self.staging.display()),
            "spark.hadoop.fs.defaultFS=file:///".into(),
            format!("spark.hadoop.yarn.resourcemanager.address={rpc}"),
            format!("spark.hadoop.yarn.resourcemanager.scheduler.address={scheduler}"),
            "spark.hadoop.yarn.resourcemanager.connect.max-wait.ms=10000".into(),
            "spark.hadoop.ipc.client.connect.max.retries=0".into(),
            "spark.yarn.maxAppAttempts=1".into(),
            "spark.yarn.tags=project:science".into(),
            "spark.driver.memory=512m".into(),
            "spark.yarn.am.memory=512m".into(),
            "spark.executor.memory=512m".into(),
            "spark.executor.cores=1".into(),
            "spark.executor.instances=1".into(),
            "spark.dynamicAllocation.enabled=false".into(),
            "spark.ui.enabled=false".into(),
            "spark.driver.host=127.0.0.1".into(),
            "spark.driver.bindAddress=127.0.0.1".into(),
            "spark.yarn.appMasterEnv.SPARK_LOCAL_IP=127.0.0.1".into(),
            "spark.executorEnv.SPARK_LOCAL_IP=127.0.0.1".into(),
            format!("spark.yarn.appMasterEnv.JAVA_HOME={}", java_home.display()),
            format!("spark.executorEnv.JAVA_HOME={}", java_home.display()),
            format!(
                "spark.yarn.appMasterEnv.PYSPARK_PYTHON={}",
                python.display()
            ),
            format!("spark.executorEnv.PYSPARK_PYTHON={}", python.display()),
            "spark.yarn.report.interval=1s".into(),
        ];
        for conf in confs
            .iter()
            .map(String::as_str)
            .chain(extra.iter().copied())
        {
            command.arg("--conf").arg(conf);
        }
        command
            .arg(self.spark_home.join("examples/src/main/python/pi.py"))
            .arg(slices.to_string())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spark-submit starts")
    }

    /// The app named `name`, once it is listed.
    fn app_named(&self, name: &str) -> Option<Value> {
        let (_, apps) = self.server.get("/ws/v1/cluster/apps");
        apps["apps"]["app"]
            .as_array()?
            .iter()
            .find(|app| app["name"] == name)
            .cloned()
    }
}

/// Waits for `child` within [`RUN_LIMIT`] (killed by its pid past it):
/// its exit success, stdout and stderr.
fn finish(child: std::process::Child) -> (bool, String, String) {
    let pid = child.id();
    let started = Instant::now();
    let (done, waiting) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    loop {
        match waiting.recv_timeout(Duration::from_secs(1)) {
            Ok(output) => {
                let output = output.expect("spark-submit's output");
                return (
                    output.status.success(),
                    String::from_utf8_lossy(&output.stdout).into_owned(),
                    String::from_utf8_lossy(&output.stderr).into_owned(),
                );
            }
            Err(_) if started.elapsed() > RUN_LIMIT => {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
                panic!("spark-submit did not finish within {RUN_LIMIT:?}");
            }
            Err(_) => {}
        }
    }
}

fn which(program: &str) -> PathBuf {
    let output = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .unwrap();
    PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}

/// The JDK of the `java` on PATH (Spark 4 needs 17 or later).
fn java_home() -> PathBuf {
    let java = std::fs::canonicalize(which("java")).unwrap();
    java.parent().unwrap().parent().unwrap().to_path_buf()
}

/// Processes whose command line names `app` (its containers' JVMs and
/// shells all do: their directories are the app's).
fn processes_of(app: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.chars().all(|c| c.is_ascii_digit()) && name != me.as_str()
        })
        .filter_map(|entry| {
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            cmdline
                .contains(app)
                .then(|| format!("{}: {cmdline}", entry.file_name().to_string_lossy()))
        })
        .collect()
}

fn assert_charged_and_accounted(site: &SparkSite, name: &str) -> Value {
    // In client mode spark-submit ends with its driver, which tells the
    // master to unregister: the app ends a moment later.
    let deadline = Instant::now() + Duration::from_secs(30);
    let app = loop {
        let app = site
            .app_named(name)
            .unwrap_or_else(|| panic!("{name} is listed"));
        if app["state"] != "RUNNING" || Instant::now() >= deadline {
            break app;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(app["state"], "FINISHED", "{app}");
    assert_eq!(app["finalStatus"], "SUCCEEDED", "{app}");
    assert_eq!(app["applicationType"], "SPARK", "{app}");
    assert_eq!(app["project"], "science", "{app}");
    assert!(app["credits"].as_f64().unwrap() > 0.0, "charged: {app}");
    let id = app["id"].as_str().unwrap().to_string();
    // Its accounting record is final once its charges are in.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, records) = site.server.get("/ws/v1/accounting?format=json");
        let record = records["records"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["appId"] == id.as_str()).cloned());
        if let Some(record) = record {
            assert_eq!(record["project"], "science", "{record}");
            assert_eq!(record["finalStatus"], "SUCCEEDED", "{record}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no accounting record for {id}: {records}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    app
}

#[test]
fn spark_pi_runs_on_weft_in_cluster_and_client_mode_and_a_killed_run_leaves_nothing() {
    let Some(site) = SparkSite::start() else {
        return;
    };

    // Cluster mode: the driver is the master, in a container.
    let (ok, stdout, stderr) = finish(site.submit("cluster", 2, "pi-cluster"));
    assert!(ok, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("final status: SUCCEEDED"),
        "the client saw it succeed: {stderr}"
    );
    let app = assert_charged_and_accounted(&site, "pi-cluster");
    let (_, containers) = site.server.get(&format!(
        "/ws/v1/cluster/apps/{}/containers",
        app["id"].as_str().unwrap()
    ));
    let listed = containers.to_string();
    assert!(
        listed.matches("container_").count() >= 2,
        "its master and at least one executor ran: {containers}"
    );

    // Client mode: the driver is here, the master only asks.
    let (ok, stdout, stderr) = finish(site.submit("client", 2, "pi-client"));
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("Pi is roughly 3.1"), "{stdout}\n{stderr}");
    // Here the driver names the app itself (pi.py's appName).
    assert_charged_and_accounted(&site, "PythonPi");

    // Killed while its executor computes: nothing of it runs on.
    let child = site.submit("cluster", 100_000, "pi-killed");
    let deadline = Instant::now() + RUN_LIMIT;
    let id = loop {
        if let Some(app) = site.app_named("pi-killed")
            && app["runningContainers"].as_u64().unwrap_or(0) >= 2
        {
            break app["id"].as_str().unwrap().to_string();
        }
        assert!(
            Instant::now() < deadline,
            "pi-killed never ran its executor"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(!processes_of(&id).is_empty(), "its JVMs run");
    let (status, body) = site.server.put(
        &format!("/ws/v1/cluster/apps/{id}/state"),
        br#"{"state":"KILLED"}"#,
    );
    assert_eq!(status, 200, "{body}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !processes_of(&id).is_empty() {
        assert!(
            Instant::now() < deadline,
            "processes of the killed app run on: {:?}",
            processes_of(&id)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let (ok, _, stderr) = finish(child);
    assert!(!ok, "spark-submit says its app was killed: {stderr}");
    let app = site.app_named("pi-killed").unwrap();
    assert_eq!(app["state"], "KILLED", "{app}");
    decommission_run(&site);
}

/// A client-mode run with Spark's executor decommissioning on: the local
/// node is decommissioned while the executor computes (with a deadline
/// far off), Spark's master hears NODE_DECOMMISSIONING among the updated
/// nodes of its allocate and its driver decommissions the executor; the
/// replacement it asks for waits until the node is recommissioned, then
/// the job ends. The master, still running, keeps the node DECOMMISSIONING.
fn decommission_run(site: &SparkSite) {
    let log = site.conf_dir.join("decommission-run.stderr");
    let stderr = std::fs::File::create(&log).unwrap();
    let child = site.submit_with(
        "client",
        // Enough tasks (about 0.2 s each here) that the job still runs
        // when the decommission reaches Spark, a few seconds on.
        200,
        "pi-decommission",
        &["spark.decommission.enabled=true"],
        Stdio::from(stderr),
    );
    let said = |what: &str| {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains(what)
    };
    let wait_until = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + RUN_LIMIT;
        while !done() {
            assert!(
                Instant::now() < deadline,
                "{what}: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    // Its executor registered with the driver and computing.
    wait_until("the executor never ran a task", &|| {
        said("Registered executor") && said("Finished task")
    });
    let (_, nodes) = site.server.get("/ws/v1/cluster/nodes");
    let node = nodes["nodes"]["node"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, body) = site.server.post(&format!(
        "/ws/v1/cluster/nodes/{node}/decommission?timeout=600"
    ));
    assert_eq!(status, 200, "{body}");
    wait_until("Spark's driver never decommissioned its executor", &|| {
        said("Decommission executors") && said("is decommissioned")
    });
    // The executor gone, the master holds the node up.
    wait_until(
        "the decommissioned executor's container never ended",
        &|| site.server.get("/ws/v1/cluster/nodes").1["nodes"]["node"][0]["numContainers"] == 1,
    );
    let (_, info) = site.server.get(&format!("/ws/v1/cluster/nodes/{node}"));
    assert_eq!(info["node"]["state"], "DECOMMISSIONING", "{info}");
    let (status, body) = site
        .server
        .post(&format!("/ws/v1/cluster/nodes/{node}/recommission"));
    assert_eq!(status, 200, "{body}");
    let (ok, stdout, _) = finish(child);
    let stderr = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("Pi is roughly 3.1"), "{stdout}\n{stderr}");
}
