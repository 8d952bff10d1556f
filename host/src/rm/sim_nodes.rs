//! `--sim-nodes COUNTxMEMmb,VCORESvcores[,GPUSgpus]`: the built-in simulated
//! nodes of `weft serve`, e.g. `20x8192mb,8vcores,1gpus`.

use crate::cluster::Resources;

/// Parses a spec into (count, capacity of each node).
pub fn parse(spec: &str) -> Result<(u32, Resources), String> {
    let bad = |why: &str| {
        format!(
            "--sim-nodes {spec:?}: {why}; expected COUNTxMEMmb,VCORESvcores[,GPUSgpus], e.g. 20x8192mb,8vcores,1gpus"
        )
    };
    let (count, rest) = spec
        .trim()
        .split_once(['x', 'X'])
        .ok_or_else(|| bad("no COUNTx prefix"))?;
    let count: u32 = count
        .trim()
        .parse()
        .map_err(|_| bad("the count is not a whole number"))?;
    if count == 0 {
        return Err(bad("the count must be at least 1"));
    }
    let resources = parse_resources(rest).map_err(|why| bad(&why))?;
    Ok((count, resources))
}

/// `MEMmb,VCORESvcores[,GPUSgpus]`, e.g. `8192mb,8vcores,1gpus` (also what
/// `weft agent --resources` takes); the reason if not.
pub fn parse_resources(text: &str) -> Result<Resources, String> {
    let (mut memory, mut vcores, mut gpus) = (None, None, None);
    for part in text.split(',') {
        let part = part.trim().to_ascii_lowercase();
        let digits_end = part
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(part.len());
        let (number, unit) = part.split_at(digits_end);
        let number: u64 = number
            .parse()
            .map_err(|_| format!("{part:?} does not start with a number"))?;
        let slot = match unit {
            "mb" => &mut memory,
            "vcores" | "vcore" => &mut vcores,
            "gpus" | "gpu" => &mut gpus,
            other => return Err(format!("unknown unit {other:?}")),
        };
        if slot.replace(number).is_some() {
            return Err(format!("{unit} given twice"));
        }
    }
    let memory = memory
        .filter(|m| *m > 0)
        .ok_or("memory (MEMmb) must be given and above 0")?;
    let vcores = vcores
        .filter(|v| *v > 0)
        .ok_or("vcores (VCORESvcores) must be given and above 0")?;
    let too_big = |_| "a figure is too large".to_string();
    Ok(Resources::new(
        memory,
        u32::try_from(vcores).map_err(too_big)?,
        u32::try_from(gpus.unwrap_or(0)).map_err(too_big)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        let good = [
            ("20x8192mb,8vcores,1gpus", (20, Resources::new(8192, 8, 1))),
            ("1x1024mb,1vcore", (1, Resources::new(1024, 1, 0))),
            ("3X2048MB, 2vcores, 1gpu", (3, Resources::new(2048, 2, 1))),
        ];
        for (spec, expected) in good {
            assert_eq!(parse(spec).unwrap(), expected, "{spec}");
        }
        for spec in [
            "",
            "20",
            "0x1mb,1vcores",
            "2x8192mb",
            "2x8192mb,8cores",
            "2x8192mb,8vcores,8vcores",
            "ax1mb,1vcores",
        ] {
            assert!(parse(spec).is_err(), "{spec:?} should be refused");
        }
    }
}
