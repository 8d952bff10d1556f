//! What one submission costs the cluster model as the number of active apps
//! grows: `Cluster::submit` into a queue already holding N active apps of
//! 100 users (N = 100, 10,000 and 55,000, seed 002's scale), each new app
//! then killed so N stays put. The checks against `maximum-applications`
//! and its per-user share must not grow with N.
//!
//! ```text
//! cargo bench -p weft-host --bench submit
//! ```

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use weft_host::cluster::{AskSpec, Cluster, SubmitApp};
use weft_host::queues::{QueueProperties, QueueTree};

const USERS: usize = 100;

fn request(user: usize) -> SubmitApp {
    SubmitApp {
        name: "bench".into(),
        ..SubmitApp::new(
            &format!("u{user}"),
            "default",
            "demo",
            vec![AskSpec::sized(1, 1024, 1, 0, 1000)],
        )
    }
}

/// A cluster whose one queue holds `active` active apps.
fn cluster_with(active: usize) -> Cluster {
    let mut properties = QueueProperties::defaults();
    properties.set(
        "yarn.scheduler.capacity.root.default.maximum-applications",
        "1000000",
    );
    let mut cluster = Cluster::new(1, QueueTree::from_properties(&properties).unwrap());
    for i in 0..active {
        cluster.submit(request(i % USERS), "bench", 0).unwrap();
    }
    cluster
}

fn submit(c: &mut Criterion) {
    let mut group = c.benchmark_group("submit");
    for active in [100, 10_000, 55_000] {
        let mut cluster = cluster_with(active);
        let mut n = 0usize;
        group.bench_function(BenchmarkId::new("active_apps", active), |b| {
            b.iter(|| {
                n += 1;
                let id = cluster
                    .submit(request(n % USERS), "bench", 0)
                    .unwrap()
                    .id
                    .clone();
                let index = cluster.app_index(&id).unwrap();
                cluster.kill_app(index, "bench", 0);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, submit);
criterion_main!(benches);
