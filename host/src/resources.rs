//! A vector of the resources Weft schedules: memory (MB), vcores and GPUs.

use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};

use serde::{Deserialize, Serialize};

/// An amount of each resource a node offers or a container holds (YARN's
/// Resource): memory, vcores and GPUs.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema,
)]
pub struct Resources {
    /// Memory, in MB.
    pub memory_mb: u64,
    /// Virtual cores.
    pub vcores: u32,
    /// GPUs (YARN's `yarn.io/gpu`); 0 when absent.
    #[serde(default)]
    pub gpus: u32,
}

impl Resources {
    /// No resources at all.
    pub const ZERO: Resources = Resources {
        memory_mb: 0,
        vcores: 0,
        gpus: 0,
    };

    /// `memory_mb` MB, `vcores` vcores and `gpus` GPUs.
    pub fn new(memory_mb: u64, vcores: u32, gpus: u32) -> Resources {
        Resources {
            memory_mb,
            vcores,
            gpus,
        }
    }

    /// True when every dimension of `self` is at most that of `other`.
    pub fn fits_in(&self, other: &Resources) -> bool {
        self.memory_mb <= other.memory_mb && self.vcores <= other.vcores && self.gpus <= other.gpus
    }

    /// Whether every dimension is 0.
    pub fn is_zero(&self) -> bool {
        *self == Resources::ZERO
    }

    /// `self` × `count`, every dimension saturating (a total of demand).
    pub fn saturating_times(&self, count: u32) -> Resources {
        Resources {
            memory_mb: self.memory_mb.saturating_mul(u64::from(count)),
            vcores: self.vcores.saturating_mul(count),
            gpus: self.gpus.saturating_mul(count),
        }
    }

    /// `self` × `count`, or None on overflow.
    pub fn times(&self, count: u32) -> Option<Resources> {
        Some(Resources {
            memory_mb: self.memory_mb.checked_mul(u64::from(count))?,
            vcores: self.vcores.checked_mul(count)?,
            gpus: self.gpus.checked_mul(count)?,
        })
    }

    /// `self` less `other`, each dimension stopping at 0.
    pub fn saturating_sub(&self, other: &Resources) -> Resources {
        Resources {
            memory_mb: self.memory_mb.saturating_sub(other.memory_mb),
            vcores: self.vcores.saturating_sub(other.vcores),
            gpus: self.gpus.saturating_sub(other.gpus),
        }
    }

    /// The smaller of `self` and `other` in each dimension.
    pub fn min(&self, other: &Resources) -> Resources {
        Resources {
            memory_mb: self.memory_mb.min(other.memory_mb),
            vcores: self.vcores.min(other.vcores),
            gpus: self.gpus.min(other.gpus),
        }
    }

    /// Each dimension of `self` as a fraction of `total` (0 where total is 0).
    pub fn fractions_of(&self, total: &Resources) -> (f64, f64, f64) {
        let fraction = |part: f64, whole: f64| if whole > 0.0 { part / whole } else { 0.0 };
        (
            fraction(self.memory_mb as f64, total.memory_mb as f64),
            fraction(f64::from(self.vcores), f64::from(total.vcores)),
            fraction(f64::from(self.gpus), f64::from(total.gpus)),
        )
    }

    /// `self` as a share of `total` by its dominant resource (the one it
    /// uses the most of, as YARN's dominant-resource view of a queue): the
    /// percent, which resource, and its figures for people.
    pub fn dominant_share(&self, total: &Resources) -> DominantShare {
        let (memory, vcores, gpus) = self.fractions_of(total);
        let (fraction, resource, used, of) = if gpus > memory && gpus > vcores {
            (gpus, "GPUs", u64::from(self.gpus), u64::from(total.gpus))
        } else if vcores > memory {
            (
                vcores,
                "vcores",
                u64::from(self.vcores),
                u64::from(total.vcores),
            )
        } else {
            (memory, "memory", self.memory_mb, total.memory_mb)
        };
        DominantShare {
            percent: fraction * 100.0,
            resource,
            used,
            of,
        }
    }
}

/// A use's share of a whole by its dominant resource (see
/// [`Resources::dominant_share`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DominantShare {
    /// The dominant resource's share, in percent (0 to 100, more when over
    /// the whole; 0 against a whole of 0).
    pub percent: f64,
    /// "memory", "vcores" or "GPUs".
    pub resource: &'static str,
    /// How much of it is used, of how much (MB for memory).
    pub used: u64,
    /// The whole it is a share of, in the same unit.
    pub of: u64,
}

/// "vcores 2 of 2", "memory 1024 MB of 23040 MB".
impl std::fmt::Display for DominantShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.resource {
            "memory" => write!(f, "memory {} MB of {} MB", self.used, self.of),
            resource => write!(f, "{resource} {} of {}", self.used, self.of),
        }
    }
}

/// Saturating: the bounds on nodes (`limits`) keep sums over a cluster far
/// from the types' maxima, but sums of demand (pending containers across
/// apps) are not bounded by the cluster; a saturated total reads as "more
/// than any cluster has", which is what it is.
impl Add for Resources {
    type Output = Resources;
    fn add(self, other: Resources) -> Resources {
        Resources {
            memory_mb: self.memory_mb.saturating_add(other.memory_mb),
            vcores: self.vcores.saturating_add(other.vcores),
            gpus: self.gpus.saturating_add(other.gpus),
        }
    }
}

impl AddAssign for Resources {
    fn add_assign(&mut self, other: Resources) {
        *self = *self + other;
    }
}

/// Callers subtract what they added, so an underflow is a bookkeeping bug:
/// debug builds stop on it (the event loop survives a panicking command),
/// release builds stay at zero rather than wrap to an absurd figure.
impl Sub for Resources {
    type Output = Resources;
    fn sub(self, other: Resources) -> Resources {
        debug_assert!(other.fits_in(&self), "{self} - {other} underflows");
        self.saturating_sub(&other)
    }
}

impl SubAssign for Resources {
    fn sub_assign(&mut self, other: Resources) {
        *self = *self - other;
    }
}

impl fmt::Display for Resources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "<memory:{} MB, vcores:{}, gpus:{}>",
            self.memory_mb, self.vcores, self.gpus
        )
    }
}

/// Resources held over time, as YARN reports an app's use: MB-seconds,
/// vcore-seconds and GPU-seconds. Floating point, so no cluster's size or
/// age can overflow it; YARN's reports round it to whole numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceSeconds {
    /// MB held × seconds (YARN's memorySeconds).
    pub memory_mb_seconds: f64,
    /// Vcores held × seconds (YARN's vcoreSeconds).
    pub vcore_seconds: f64,
    /// GPUs held × seconds.
    pub gpu_seconds: f64,
}

impl ResourceSeconds {
    /// This use plus `resources` held for `ms` milliseconds.
    pub fn plus(self, resources: Resources, ms: u64) -> ResourceSeconds {
        self.add(resources, ms as f64 / 1000.0)
    }

    /// This use less `resources` for `ms` milliseconds (counted in error),
    /// never below 0.
    pub fn minus(self, resources: Resources, ms: u64) -> ResourceSeconds {
        let less = self.add(resources, -(ms as f64) / 1000.0);
        ResourceSeconds {
            memory_mb_seconds: less.memory_mb_seconds.max(0.0),
            vcore_seconds: less.vcore_seconds.max(0.0),
            gpu_seconds: less.gpu_seconds.max(0.0),
        }
    }

    /// As YARN reports it: whole MB-, vcore- and GPU-seconds, rounded.
    pub fn whole(self) -> [u64; 3] {
        // `as` saturates: a negative or NaN figure (never counted) is 0.
        [
            self.memory_mb_seconds.round() as u64,
            self.vcore_seconds.round() as u64,
            self.gpu_seconds.round() as u64,
        ]
    }

    fn add(self, resources: Resources, seconds: f64) -> ResourceSeconds {
        ResourceSeconds {
            memory_mb_seconds: self.memory_mb_seconds + resources.memory_mb as f64 * seconds,
            vcore_seconds: self.vcore_seconds + f64::from(resources.vcores) * seconds,
            gpu_seconds: self.gpu_seconds + f64::from(resources.gpus) * seconds,
        }
    }
}
impl std::ops::Add for ResourceSeconds {
    type Output = ResourceSeconds;
    fn add(self, other: ResourceSeconds) -> ResourceSeconds {
        ResourceSeconds {
            memory_mb_seconds: self.memory_mb_seconds + other.memory_mb_seconds,
            vcore_seconds: self.vcore_seconds + other.vcore_seconds,
            gpu_seconds: self.gpu_seconds + other.gpu_seconds,
        }
    }
}

/// The one resource spec: `MEMmb,VCORESvcores[,GPUSgpus]`, e.g.
/// `8192mb,8vcores,1gpus`, as `weft agent --resources` and each node of
/// `--sim-nodes` take it; the reason if not.
pub fn parse_spec(text: &str) -> Result<Resources, String> {
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
