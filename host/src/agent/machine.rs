//! What this machine offers an agent: its memory less a reserve for the
//! system, its logical CPUs, and its name.

use anyhow::{Context, bail};

use crate::resources::Resources;

/// The machine's memory (MemTotal of /proc/meminfo) less `reserved_mb`
/// (at most half of it), and its logical CPUs as vcores.
pub fn resources(reserved_mb: u64) -> anyhow::Result<Resources> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").context("cannot read /proc/meminfo")?;
    let total_kb: u64 = meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .context("/proc/meminfo has no MemTotal line")?;
    let total_mb = total_kb / 1024;
    let memory_mb = total_mb - reserved_mb.min(total_mb / 2);
    let vcores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    if memory_mb == 0 {
        bail!("this machine reports no memory to offer");
    }
    Ok(Resources::new(memory_mb, vcores, 0))
}

/// The machine's host name, for the node id.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// `16384mb,8vcores[,2gpus]`, as `--resources` takes it.
pub fn parse_resources(spec: &str) -> Result<Resources, String> {
    crate::resources::parse_spec(spec).map_err(|why| {
        format!(
            "--resources {spec:?}: {why}; expected MEMmb,VCORESvcores[,GPUSgpus], e.g. 8192mb,8vcores,1gpus"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_offers_something() {
        let r = resources(1024).unwrap();
        assert!(r.memory_mb > 0 && r.vcores > 0);
    }

    #[test]
    fn resource_specs() {
        assert_eq!(
            parse_resources("2048mb,2vcores").unwrap(),
            Resources::new(2048, 2, 0)
        );
        assert!(parse_resources("2048mb").is_err());
    }
}
