//! Reservation definitions in the JSON shapes of YARN's Cluster Reservation
//! API, the reservation id, and the validation that turns a definition into a
//! [`Contract`] the placement agent can work with.
//!
//! Field names follow Hadoop's `ResourceManagerRest.md` ("Cluster Reservation
//! API List / Create / Submit / Update / Delete") and the RM's webapp dao
//! classes (`ReservationDefinitionInfo`, `ReservationRequestsInfo`,
//! `ReservationRequestInfo`, `ResourceInfo`, `ReservationSubmissionRequestInfo`,
//! `ReservationUpdateRequestInfo`, `ReservationDeleteRequestInfo`,
//! `ReservationListInfo`, `ReservationInfo`, `ResourceAllocationInfo`).
//!
//! Reading is lenient where YARN's own JSON is loose: numbers may come as
//! strings (`"memory": "1024"`, as the RM's list example prints them), a
//! single `reservation-request` may be an object rather than a list, and the
//! interpreter may be its number (0 = R_ANY, 1 = R_ALL, 2 = R_ORDER,
//! 3 = R_ORDER_NO_GAP), the number as a string, or its name (`R_ORDER` or
//! `ORDER`). Writing is strict: numbers as numbers, the interpreter as its
//! number, lists as lists.
//!
//! Weft's extensions: a capability may carry `gpus` (a count, default 0; the
//! name Weft's scheduler API already uses beside `memory` and `vCores`), and
//! `min-concurrency` defaults to 1 when absent, as `ReservationRequest` does
//! in YARN's Java API (the REST dao would read 0 and refuse it).

use crate::limits::MAX_RESERVATION_AHEAD_MS;
use crate::limits::MAX_RESERVATION_GANGS;
use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::resources::Resources;

/// YARN's `yarn.resourcemanager.reservation-system.max-periodicity` default:
/// one day. Every recurrence period must divide it.
pub const DEFAULT_MAX_PERIODICITY_MS: i64 = 86_400_000;

/// How the requests of a definition combine (YARN's ReservationRequestInterpreter).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Interpreter {
    /// R_ANY (0): the first request, in order, that can be placed.
    /// The default, as the REST dao reads an absent int as 0.
    #[default]
    Any,
    /// R_ALL (1): every request, each anywhere in [arrival, deadline).
    All,
    /// R_ORDER (2): every request, each after the one before it ends.
    Order,
    /// R_ORDER_NO_GAP (3): every request, each starting when the one before it ends.
    OrderNoGap,
}

impl Interpreter {
    /// Every interpreter, in the order of its number (0 to 3).
    pub const ALL: [Interpreter; 4] = [
        Interpreter::Any,
        Interpreter::All,
        Interpreter::Order,
        Interpreter::OrderNoGap,
    ];

    /// The number YARN's REST API uses.
    pub fn code(self) -> u8 {
        match self {
            Interpreter::Any => 0,
            Interpreter::All => 1,
            Interpreter::Order => 2,
            Interpreter::OrderNoGap => 3,
        }
    }

    /// YARN's enum name.
    pub fn name(self) -> &'static str {
        match self {
            Interpreter::Any => "R_ANY",
            Interpreter::All => "R_ALL",
            Interpreter::Order => "R_ORDER",
            Interpreter::OrderNoGap => "R_ORDER_NO_GAP",
        }
    }

    /// True for the interpreters whose requests run one after another.
    pub fn is_ordered(self) -> bool {
        matches!(self, Interpreter::Order | Interpreter::OrderNoGap)
    }

    fn from_code(code: i64) -> Option<Interpreter> {
        Interpreter::ALL
            .into_iter()
            .find(|i| i64::from(i.code()) == code)
    }

    fn from_text(text: &str) -> Option<Interpreter> {
        let text = text.trim();
        if let Ok(code) = text.parse::<i64>() {
            return Interpreter::from_code(code);
        }
        let upper = text.to_ascii_uppercase();
        let name = upper.strip_prefix("R_").unwrap_or(&upper);
        Interpreter::ALL
            .into_iter()
            .find(|i| &i.name()[2..] == name)
    }
}

impl fmt::Display for Interpreter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Interpreter {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u8(self.code())
    }
}

impl<'de> Deserialize<'de> for Interpreter {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Interpreter, D::Error> {
        struct InterpreterVisitor;
        impl Visitor<'_> for InterpreterVisitor {
            type Value = Interpreter;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a reservation-request-interpreter: 0 (R_ANY), 1 (R_ALL), 2 (R_ORDER) or 3 (R_ORDER_NO_GAP)")
            }
            fn visit_i64<E: de::Error>(self, code: i64) -> Result<Interpreter, E> {
                Interpreter::from_code(code)
                    .ok_or_else(|| E::invalid_value(de::Unexpected::Signed(code), &self))
            }
            fn visit_u64<E: de::Error>(self, code: u64) -> Result<Interpreter, E> {
                i64::try_from(code)
                    .ok()
                    .and_then(Interpreter::from_code)
                    .ok_or_else(|| E::invalid_value(de::Unexpected::Unsigned(code), &self))
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Interpreter, E> {
                Interpreter::from_text(text)
                    .ok_or_else(|| E::invalid_value(de::Unexpected::Str(text), &self))
            }
        }
        deserializer.deserialize_any(InterpreterVisitor)
    }
}

/// Lenient readers for YARN's JSON, which sometimes prints numbers as strings.
mod lenient {
    use super::*;

    struct IntegerVisitor;

    impl Visitor<'_> for IntegerVisitor {
        type Value = i64;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an integer, or a string holding one")
        }
        fn visit_i64<E: de::Error>(self, value: i64) -> Result<i64, E> {
            Ok(value)
        }
        fn visit_u64<E: de::Error>(self, value: u64) -> Result<i64, E> {
            i64::try_from(value)
                .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(value), &self))
        }
        fn visit_str<E: de::Error>(self, text: &str) -> Result<i64, E> {
            text.trim()
                .parse()
                .map_err(|_| E::invalid_value(de::Unexpected::Str(text), &self))
        }
    }

    pub(super) fn integer<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
        deserializer.deserialize_any(IntegerVisitor)
    }

    pub(super) fn small_integer<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<i32, D::Error> {
        let value = integer(deserializer)?;
        i32::try_from(value).map_err(|_| {
            de::Error::invalid_value(de::Unexpected::Signed(value), &"a 32-bit integer")
        })
    }

    /// A string, or a number kept as its text (`recurrence-expression`).
    pub(super) fn text<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<String>, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Option<String>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a number")
            }
            fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
                Ok(Some(value.to_string()))
            }
            fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
                Ok(Some(value.to_string()))
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Some(text.to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
        }
        deserializer.deserialize_any(TextVisitor)
    }

    /// A list, or one object standing for a list of one (as Jersey prints it).
    pub(super) fn one_or_many<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        struct OneOrMany<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for OneOrMany<T> {
            type Value = Vec<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of objects, or one object")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(items)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Vec<T>, A::Error> {
                Ok(vec![T::deserialize(
                    de::value::MapAccessDeserializer::new(map),
                )?])
            }
        }
        deserializer.deserialize_any(OneOrMany(std::marker::PhantomData))
    }
}

fn one() -> i64 {
    1
}

/// A container size (YARN's ResourceInfo): `memory` in MB, `vCores`, and
/// Weft's `gpus`. Signed, so that a negative figure is refused by validation
/// with its value rather than by the JSON reader.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ResourceInfo {
    /// `memory`, in MB.
    #[serde(deserialize_with = "lenient::integer")]
    pub memory: i64,
    /// `vCores`: virtual cores.
    #[serde(rename = "vCores", deserialize_with = "lenient::integer")]
    pub vcores: i64,
    /// `gpus` (Weft's extension): a count; 0 when absent.
    #[serde(default, deserialize_with = "lenient::integer")]
    pub gpus: i64,
}

impl From<Resources> for ResourceInfo {
    fn from(resources: Resources) -> ResourceInfo {
        ResourceInfo {
            memory: i64::try_from(resources.memory_mb).unwrap_or(i64::MAX),
            vcores: i64::from(resources.vcores),
            gpus: i64::from(resources.gpus),
        }
    }
}

/// One stage of a reservation (YARN's ReservationRequestInfo).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct ReservationRequest {
    /// The size of each container.
    pub capability: ResourceInfo,
    /// How many containers, each running `duration`.
    #[serde(deserialize_with = "lenient::integer")]
    pub num_containers: i64,
    /// The fewest containers that must run at once (gang size).
    #[serde(default = "one", deserialize_with = "lenient::integer")]
    pub min_concurrency: i64,
    /// How long each container runs, in ms.
    #[serde(deserialize_with = "lenient::integer")]
    pub duration: i64,
}

/// The stages and how they combine (YARN's ReservationRequestsInfo).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct ReservationRequests {
    /// 0 (R_ANY, the default), 1 (R_ALL), 2 (R_ORDER) or 3
    /// (R_ORDER_NO_GAP); the names are accepted too.
    #[serde(default)]
    #[schema(value_type = u8, minimum = 0, maximum = 3)]
    pub reservation_request_interpreter: Interpreter,
    /// The stages, in the order given; one object stands for a list of one.
    #[serde(deserialize_with = "lenient::one_or_many")]
    pub reservation_request: Vec<ReservationRequest>,
}

/// What a user asks for (YARN's ReservationDefinitionInfo).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct ReservationDefinition {
    /// The earliest time (ms since the epoch) the reservation may start.
    #[serde(deserialize_with = "lenient::integer")]
    pub arrival: i64,
    /// The time (ms) by which it must have ended.
    #[serde(deserialize_with = "lenient::integer")]
    pub deadline: i64,
    /// A mnemonic, not an identifier.
    #[serde(default)]
    pub reservation_name: String,
    /// Lower is more important. The greedy agent keeps it but does not use it
    /// (YARN uses it only in its priority agent, which preempts reservations).
    #[serde(default, deserialize_with = "lenient::small_integer")]
    pub priority: i32,
    /// The stages and how they combine.
    pub reservation_requests: ReservationRequests,
    /// The period in ms, as a string; "0" or absent means not recurring.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::text"
    )]
    pub recurrence_expression: Option<String>,
}

impl ReservationDefinition {
    /// The same definition with the spellings that mean the same thing made
    /// one: an empty or zero recurrence is none, the expression is trimmed.
    /// Resubmissions are compared in this form.
    pub fn normalized(&self) -> ReservationDefinition {
        let mut definition = self.clone();
        definition.recurrence_expression = self
            .recurrence_expression
            .as_deref()
            .map(str::trim)
            .filter(|text| !text.is_empty() && text.parse::<i64>().ok() != Some(0))
            .map(str::to_string);
        definition
    }

    /// Checks the definition and returns it as a [`Contract`]: each refusal
    /// names what was wrong, with the figures.
    pub fn validate(&self, limits: &DefinitionLimits) -> Result<Contract, DefinitionError> {
        let requests = &self.reservation_requests.reservation_request;
        let interpreter = self.reservation_requests.reservation_request_interpreter;
        if requests.is_empty() {
            return Err(DefinitionError::NoRequests);
        }
        let (arrival_ms, deadline_ms) = (self.arrival, self.deadline);
        if arrival_ms < 0 || deadline_ms > MAX_TIME_MS {
            return Err(DefinitionError::TimeOutOfRange {
                arrival_ms,
                deadline_ms,
            });
        }
        if arrival_ms >= deadline_ms {
            return Err(DefinitionError::ArrivalNotBeforeDeadline {
                arrival_ms,
                deadline_ms,
            });
        }
        if deadline_ms <= limits.now_ms {
            return Err(DefinitionError::DeadlinePassed {
                deadline_ms,
                now_ms: limits.now_ms,
            });
        }
        // A plan reaches no further ahead than this: the agent's and a
        // recurring reservation's work grow with how far plans reach.
        let latest = limits
            .now_ms
            .saturating_add(MAX_RESERVATION_AHEAD_MS as i64);
        if deadline_ms > latest {
            return Err(DefinitionError::TooFarAhead {
                deadline_ms,
                latest_ms: latest,
            });
        }
        if requests.len() > crate::limits::MAX_ASKS_PER_APP {
            return Err(DefinitionError::TooManyRequests {
                count: requests.len(),
            });
        }
        let window_ms = deadline_ms - arrival_ms;
        let mut stages = Vec::with_capacity(requests.len());
        let mut gangs: u64 = 0;
        for (index, request) in requests.iter().enumerate() {
            let stage = validate_request(index, request, window_ms)?;
            // The agent places one gang (min-concurrency containers) at a
            // time: its work is the number of gangs.
            gangs = gangs.saturating_add(u64::from(
                stage.num_containers.div_ceil(stage.min_concurrency),
            ));
            stages.push(stage);
        }
        if gangs > MAX_RESERVATION_GANGS {
            return Err(DefinitionError::TooManyGangs { gangs });
        }
        if interpreter.is_ordered() {
            let total_ms = stages
                .iter()
                .fold(0i64, |sum, stage| sum.saturating_add(stage.duration_ms));
            if total_ms > window_ms {
                return Err(DefinitionError::StagesLongerThanWindow {
                    interpreter,
                    total_ms,
                    window_ms,
                });
            }
        }
        let period_ms = self.period(limits.max_periodicity_ms, window_ms)?;
        Ok(Contract {
            arrival_ms,
            deadline_ms,
            interpreter,
            stages,
            period_ms,
        })
    }

    /// The recurrence period the expression states, without checking it
    /// against any limit: None for absent, empty or "0".
    pub fn recurrence_period_ms(&self) -> Result<Option<i64>, DefinitionError> {
        let Some(expression) = self.recurrence_expression.as_deref().map(str::trim) else {
            return Ok(None);
        };
        match expression.parse::<i64>() {
            _ if expression.is_empty() => Ok(None),
            Ok(0) => Ok(None),
            Ok(period_ms) if period_ms > 0 => Ok(Some(period_ms)),
            _ => Err(DefinitionError::BadRecurrence {
                expression: expression.to_string(),
            }),
        }
    }

    fn period(
        &self,
        max_periodicity_ms: i64,
        window_ms: i64,
    ) -> Result<Option<i64>, DefinitionError> {
        let Some(period_ms) = self.recurrence_period_ms()? else {
            return Ok(None);
        };
        if max_periodicity_ms % period_ms != 0 {
            return Err(DefinitionError::PeriodDoesNotDivideMaxPeriodicity {
                period_ms,
                max_periodicity_ms,
            });
        }
        if period_ms < window_ms {
            return Err(DefinitionError::PeriodShorterThanWindow {
                period_ms,
                window_ms,
            });
        }
        Ok(Some(period_ms))
    }
}

fn validate_request(
    index: usize,
    request: &ReservationRequest,
    window_ms: i64,
) -> Result<Stage, DefinitionError> {
    let capability = &request.capability;
    // Every container needs memory and a core; GPUs are optional.
    let minimums = [
        ("memory", capability.memory, 1),
        ("vCores", capability.vcores, 1),
        ("gpus", capability.gpus, 0),
    ];
    for (dimension, value, minimum) in minimums {
        if value < minimum {
            return Err(DefinitionError::CapabilityTooSmall {
                index,
                dimension,
                value,
                minimum,
            });
        }
    }
    // The documented maxima of an ask (limits.rs) bound a reservation too.
    let at_most = |what: &'static str, value: i64, max: u64| {
        if value > max as i64 {
            Err(DefinitionError::TooLarge {
                index,
                what,
                value,
                max: max as i64,
            })
        } else {
            Ok(value)
        }
    };
    at_most("memory", capability.memory, crate::limits::MAX_MEMORY_MB)?;
    let vcores = at_most(
        "vCores",
        capability.vcores,
        u64::from(crate::limits::MAX_VCORES),
    )? as u32;
    let gpus = at_most("gpus", capability.gpus, u64::from(crate::limits::MAX_GPUS))? as u32;
    at_most(
        "num-containers",
        request.num_containers,
        u64::from(crate::limits::MAX_CONTAINERS_PER_ASK),
    )?;
    at_most("duration", request.duration, crate::limits::MAX_DURATION_MS)?;
    if request.num_containers <= 0 {
        return Err(DefinitionError::NonPositiveContainers {
            index,
            num_containers: request.num_containers,
        });
    }
    // In 1..=MAX_CONTAINERS_PER_ASK, checked above.
    let num_containers = request.num_containers as u32;
    if request.duration <= 0 {
        return Err(DefinitionError::NonPositiveDuration {
            index,
            duration_ms: request.duration,
        });
    }
    if request.min_concurrency < 1 || request.min_concurrency > request.num_containers {
        return Err(DefinitionError::MinConcurrencyOutOfRange {
            index,
            min_concurrency: request.min_concurrency,
            num_containers: request.num_containers,
        });
    }
    if request.duration > window_ms {
        return Err(DefinitionError::DurationLongerThanWindow {
            index,
            duration_ms: request.duration,
            window_ms,
        });
    }
    Ok(Stage {
        capability: Resources {
            // Positive, checked above.
            memory_mb: capability.memory as u64,
            vcores,
            gpus,
        },
        num_containers,
        // In 1..=num_containers, checked above.
        min_concurrency: request.min_concurrency as u32,
        duration_ms: request.duration,
    })
}

/// What validation needs besides the definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefinitionLimits {
    /// Now, in ms: a deadline must lie after it.
    pub now_ms: i64,
    /// `yarn.resourcemanager.reservation-system.max-periodicity`.
    pub max_periodicity_ms: i64,
}

/// A validated definition, in the units the agent places.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contract {
    /// The definition's `arrival`, in ms since the epoch.
    pub arrival_ms: i64,
    /// The definition's `deadline`, in ms since the epoch, after `arrival_ms`.
    pub deadline_ms: i64,
    /// How the stages combine.
    pub interpreter: Interpreter,
    /// The requests, checked, in the order given (at least one).
    pub stages: Vec<Stage>,
    /// The recurrence period, if the reservation repeats.
    pub period_ms: Option<i64>,
}

/// One validated request: `num_containers` containers of `capability`, each
/// running `duration_ms`, at least `min_concurrency` of them at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage {
    /// The size of each container (at least 1 MB and 1 vcore).
    pub capability: Resources,
    /// How many containers, at least 1.
    pub num_containers: u32,
    /// The gang size, in 1..=`num_containers`.
    pub min_concurrency: u32,
    /// How long each container runs, in ms; within the window from arrival
    /// to deadline.
    pub duration_ms: i64,
}

impl Stage {
    /// The smallest group that must run at once: capability × min-concurrency.
    pub fn gang(&self) -> Option<Resources> {
        self.capability.times(self.min_concurrency)
    }
}

impl Contract {
    /// Refuses a gang larger than the queue's whole capacity, which could
    /// never be placed (skipped for R_ANY, where another request may fit, as
    /// YARN skips it).
    pub fn check_gangs_fit(&self, capacity: &Resources) -> Result<(), DefinitionError> {
        if self.interpreter == Interpreter::Any {
            return Ok(());
        }
        for (index, stage) in self.stages.iter().enumerate() {
            let fits = stage.gang().is_some_and(|gang| gang.fits_in(capacity));
            if !fits {
                return Err(DefinitionError::GangExceedsCapacity {
                    index,
                    capability: stage.capability,
                    min_concurrency: stage.min_concurrency,
                    capacity: *capacity,
                });
            }
        }
        Ok(())
    }
}

/// Why a definition was refused. Request numbers count from 0, in the order given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefinitionError {
    /// The definition has no request.
    #[error("the reservation has no reservation-request: give at least one")]
    NoRequests,
    /// The arrival is at or after the deadline.
    #[error("arrival {arrival_ms} is not before deadline {deadline_ms}")]
    ArrivalNotBeforeDeadline {
        /// The definition's arrival, in ms since the epoch.
        arrival_ms: i64,
        /// The definition's deadline, in ms since the epoch.
        deadline_ms: i64,
    },
    /// The arrival is before 1970 or the deadline after [`MAX_TIME_MS`].
    #[error(
        "arrival {arrival_ms} and deadline {deadline_ms} must be times from 0 (1970) to {MAX_TIME_MS} (the year 9999), in ms"
    )]
    TimeOutOfRange {
        /// The definition's arrival, in ms since the epoch.
        arrival_ms: i64,
        /// The definition's deadline, in ms since the epoch.
        deadline_ms: i64,
    },
    /// The deadline is not after now.
    #[error("deadline {deadline_ms} has passed (now is {now_ms})")]
    DeadlinePassed {
        /// The definition's deadline, in ms since the epoch.
        deadline_ms: i64,
        /// Now, in ms since the epoch.
        now_ms: i64,
    },
    /// A request's capability has less than 1 MB or 1 vcore, or negative
    /// GPUs.
    #[error(
        "reservation-request {index}: capability {dimension} must be at least {minimum}, got {value}"
    )]
    CapabilityTooSmall {
        /// The request's index in the definition.
        index: usize,
        /// The dimension, as the JSON names it: `memory`, `vCores` or `gpus`.
        dimension: &'static str,
        /// The figure given.
        value: i64,
        /// The least the dimension takes.
        minimum: i64,
    },
    /// The deadline is more than [`MAX_RESERVATION_AHEAD_MS`] after now.
    #[error(
        "deadline {deadline_ms} is more than 31 days ahead (the latest now is {latest_ms}): plans reach no further"
    )]
    TooFarAhead {
        /// The definition's deadline, in ms since the epoch.
        deadline_ms: i64,
        /// The latest deadline accepted now, in ms since the epoch.
        latest_ms: i64,
    },
    /// The definition has more requests than an app may ask for
    /// (`limits::MAX_ASKS_PER_APP`).
    #[error("{count} reservation-requests; a reservation may have at most 100")]
    TooManyRequests {
        /// How many requests the definition has.
        count: usize,
    },
    /// The requests make more than [`MAX_RESERVATION_GANGS`] gangs.
    #[error(
        "the requests make {gangs} gangs (num-containers ÷ min-concurrency, summed); at most 100000: raise min-concurrency"
    )]
    TooManyGangs {
        /// num-containers ÷ min-concurrency (rounded up), summed over the
        /// requests.
        gangs: u64,
    },
    /// A request's figure is above the most an ask may have (`limits.rs`).
    #[error("reservation-request {index}: {what} {value} is above the most Weft handles ({max})")]
    TooLarge {
        /// The request's index in the definition.
        index: usize,
        /// The figure, as the JSON names it: `memory`, `vCores`, `gpus`,
        /// `num-containers` or `duration`.
        what: &'static str,
        /// The figure given.
        value: i64,
        /// The most it may be.
        max: i64,
    },
    /// A request's num-containers is 0 or negative.
    #[error(
        "reservation-request {index}: num-containers must be greater than 0, got {num_containers}"
    )]
    NonPositiveContainers {
        /// The request's index in the definition.
        index: usize,
        /// The num-containers given.
        num_containers: i64,
    },
    /// A request's duration is 0 or negative.
    #[error("reservation-request {index}: duration must be greater than 0 ms, got {duration_ms}")]
    NonPositiveDuration {
        /// The request's index in the definition.
        index: usize,
        /// The duration given, in ms.
        duration_ms: i64,
    },
    /// A request's min-concurrency is below 1 or above its num-containers.
    #[error(
        "reservation-request {index}: min-concurrency {min_concurrency} is outside 1..={num_containers} (num-containers)"
    )]
    MinConcurrencyOutOfRange {
        /// The request's index in the definition.
        index: usize,
        /// The min-concurrency given.
        min_concurrency: i64,
        /// The request's num-containers.
        num_containers: i64,
    },
    /// A request's duration does not fit between arrival and deadline.
    #[error(
        "reservation-request {index}: duration {duration_ms} ms is longer than the {window_ms} ms from arrival to deadline"
    )]
    DurationLongerThanWindow {
        /// The request's index in the definition.
        index: usize,
        /// The request's duration, in ms.
        duration_ms: i64,
        /// Deadline − arrival, in ms.
        window_ms: i64,
    },
    /// R_ORDER or R_ORDER_NO_GAP: the durations, one after another, do not
    /// fit between arrival and deadline.
    #[error(
        "{interpreter} runs the requests one after another, {total_ms} ms in all, longer than the {window_ms} ms from arrival to deadline"
    )]
    StagesLongerThanWindow {
        /// The definition's interpreter.
        interpreter: Interpreter,
        /// The requests' durations summed, in ms.
        total_ms: i64,
        /// Deadline − arrival, in ms.
        window_ms: i64,
    },
    /// The recurrence-expression is not a whole number of ms ≥ 0.
    #[error("recurrence-expression {expression:?} is not a period in ms (a whole number ≥ 0)")]
    BadRecurrence {
        /// The expression given, trimmed.
        expression: String,
    },
    /// The recurrence period does not divide
    /// `yarn.resourcemanager.reservation-system.max-periodicity`.
    #[error(
        "recurrence period {period_ms} ms does not divide the maximum periodicity {max_periodicity_ms} ms (yarn.resourcemanager.reservation-system.max-periodicity)"
    )]
    PeriodDoesNotDivideMaxPeriodicity {
        /// The recurrence period, in ms.
        period_ms: i64,
        /// The configured maximum periodicity, in ms.
        max_periodicity_ms: i64,
    },
    /// The recurrence period is shorter than the window from arrival to
    /// deadline, so occurrences could overlap.
    #[error(
        "recurrence period {period_ms} ms is shorter than the {window_ms} ms from arrival to deadline: occurrences would overlap"
    )]
    PeriodShorterThanWindow {
        /// The recurrence period, in ms.
        period_ms: i64,
        /// Deadline − arrival, in ms.
        window_ms: i64,
    },
    /// A request's gang (capability × min-concurrency) exceeds the queue's
    /// whole capacity, so it could never be placed.
    #[error(
        "reservation-request {index}: a gang of {min_concurrency} × {capability} is larger than the queue's capacity {capacity}"
    )]
    GangExceedsCapacity {
        /// The request's index in the definition.
        index: usize,
        /// The size of one of its containers.
        capability: Resources,
        /// Its min-concurrency.
        min_concurrency: u32,
        /// The queue's guaranteed capacity, the plan's.
        capacity: Resources,
    },
}

/// A reservation's id, as YARN prints it: `reservation_{cluster start ms}_{sequence}`,
/// the sequence at least four digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReservationId {
    /// When the cluster started, in ms since the epoch
    /// ([`SystemConfig::cluster_start_ms`](super::SystemConfig::cluster_start_ms)).
    pub cluster_timestamp: i64,
    /// The number new-reservation handed out, from 1 on.
    pub sequence: u64,
}

impl fmt::Display for ReservationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "reservation_{}_{:04}",
            self.cluster_timestamp, self.sequence
        )
    }
}

/// A reservation id that is not of the form `reservation_<ms>_<sequence>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a reservation id (reservation_<cluster start ms>_<sequence>, e.g. reservation_1700000000000_0001)"
)]
pub struct MalformedReservationId(pub String);

impl FromStr for ReservationId {
    type Err = MalformedReservationId;
    fn from_str(text: &str) -> Result<ReservationId, MalformedReservationId> {
        let malformed = || MalformedReservationId(text.to_string());
        let rest = text.strip_prefix("reservation_").ok_or_else(malformed)?;
        let (timestamp, sequence) = rest.split_once('_').ok_or_else(malformed)?;
        let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
        if !digits(timestamp) || !digits(sequence) {
            return Err(malformed());
        }
        Ok(ReservationId {
            cluster_timestamp: timestamp.parse().map_err(|_| malformed())?,
            sequence: sequence.parse().map_err(|_| malformed())?,
        })
    }
}

impl Serialize for ReservationId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ReservationId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ReservationId, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(de::Error::custom)
    }
}

/// POST /ws/v1/cluster/reservation/new-reservation answers this.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct NewReservation {
    /// `reservation-id`: a fresh id, to submit with.
    pub reservation_id: String,
}

/// The latest deadline Weft accepts: the end of the year 9999, in ms since
/// 1970. Far beyond any plan, and far enough from `i64::MAX` that a deadline
/// plus a window or a period cannot overflow.
pub const MAX_TIME_MS: i64 = crate::limits::MAX_TIME_MS as i64;

/// The body of POST …/reservation/submit (YARN's ReservationSubmissionRequestInfo).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct ReservationSubmissionRequest {
    /// `queue`: the reservable queue, by path or by a leaf name that names
    /// one.
    pub queue: String,
    /// `reservation-id`: an id new-reservation handed out.
    pub reservation_id: String,
    /// `reservation-definition`: what is asked for.
    pub reservation_definition: ReservationDefinition,
}

/// The body of POST …/reservation/update (YARN's ReservationUpdateRequestInfo).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct ReservationUpdateRequest {
    /// `reservation-id`: the reservation to update.
    pub reservation_id: String,
    /// `reservation-definition`: the new definition, placed anew.
    pub reservation_definition: ReservationDefinition,
}

/// The body of POST …/reservation/delete (YARN's ReservationDeleteRequestInfo).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct ReservationDeleteRequest {
    /// `reservation-id`: the reservation to delete.
    pub reservation_id: String,
}

/// One interval of a reservation's allocation (YARN's ResourceAllocationInfo;
/// its times are camelCase, unlike the rest).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceAllocationInfo {
    /// `resource`: what is held over the interval.
    pub resource: ResourceInfo,
    /// `startTime`: when the interval starts, in ms since the epoch.
    #[serde(deserialize_with = "lenient::integer")]
    pub start_time: i64,
    /// `endTime`: when it ends (exclusive), in ms since the epoch.
    #[serde(deserialize_with = "lenient::integer")]
    pub end_time: i64,
}

/// One listed reservation (YARN's ReservationInfo).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct ReservationInfo {
    /// `acceptance-time`: when the reservation was last accepted (submitted
    /// or updated), in ms since the epoch.
    #[serde(deserialize_with = "lenient::integer")]
    pub acceptance_time: i64,
    /// `user`: who owns the reservation.
    pub user: String,
    /// `resource-allocations`: the allocation as intervals (a recurring
    /// reservation's first occurrence); empty unless the list asked for
    /// `include-resource-allocations`.
    #[serde(default, deserialize_with = "lenient::one_or_many")]
    pub resource_allocations: Vec<ResourceAllocationInfo>,
    /// `reservation-id`.
    pub reservation_id: String,
    /// `reservation-definition`: the definition as accepted (normalized).
    pub reservation_definition: ReservationDefinition,
}

/// GET …/reservation/list answers this (YARN's ReservationListInfo).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReservationListInfo {
    /// `reservations`: the reservations listed, in id order.
    #[serde(default, deserialize_with = "lenient::one_or_many")]
    pub reservations: Vec<ReservationInfo>,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const LIMITS: DefinitionLimits = DefinitionLimits {
        now_ms: 0,
        max_periodicity_ms: DEFAULT_MAX_PERIODICITY_MS,
    };

    /// Hadoop's submit example (two alternatives under R_ANY).
    const SUBMIT_EXAMPLE: &str = r#"{
      "queue" : "dedicated",
      "reservation-id":"reservation_1404198295326_0003",
      "reservation-definition" : {
         "arrival" : 1765541532000,
         "deadline" : 1765542252000,
         "reservation-name" : "res_1",
         "reservation-requests" : {
            "reservation-request-interpreter" : 0,
            "reservation-request" : [
               { "duration" : 60000, "num-containers" : 220, "min-concurrency" : 220,
                 "capability" : { "memory" : 1024, "vCores" : 1 } },
               { "duration" : 120000, "num-containers" : 110, "min-concurrency" : 1,
                 "capability" : { "memory" : 1024, "vCores" : 1 } }
            ]
         }
       }
    }"#;

    /// Hadoop's list example: numbers as strings, one request as an object.
    const LIST_EXAMPLE: &str = r#"{
      "reservations": {
        "acceptance-time": "1455160008442",
        "user": "submitter",
        "resource-allocations": [
          { "resource": { "memory": "0", "vCores": "0" }, "startTime": "1465541532000", "endTime": "1465542250000" },
          { "resource": { "memory": "1024", "vCores": "1" }, "startTime": "1465542250000", "endTime": "1465542251000" }
        ],
        "reservation-id": "reservation_1458852875788_0002",
        "reservation-definition": {
          "arrival": "1465541532000",
          "deadline": "1465542252000",
          "reservation-requests": {
            "reservation-request-interpreter": "0",
            "reservation-request": {
              "capability": { "memory": "1024", "vCores": "1" },
              "min-concurrency": "1",
              "num-containers": "1",
              "duration": "60"
            }
          },
          "reservation-name": "res_1"
        }
      }
    }"#;

    pub(crate) fn request(
        memory: i64,
        vcores: i64,
        num_containers: i64,
        min_concurrency: i64,
        duration: i64,
    ) -> ReservationRequest {
        ReservationRequest {
            capability: ResourceInfo {
                memory,
                vcores,
                gpus: 0,
            },
            num_containers,
            min_concurrency,
            duration,
        }
    }

    pub(crate) fn definition(
        arrival: i64,
        deadline: i64,
        interpreter: Interpreter,
        requests: Vec<ReservationRequest>,
    ) -> ReservationDefinition {
        ReservationDefinition {
            arrival,
            deadline,
            reservation_name: "test".into(),
            priority: 0,
            reservation_requests: ReservationRequests {
                reservation_request_interpreter: interpreter,
                reservation_request: requests,
            },
            recurrence_expression: None,
        }
    }

    fn valid() -> ReservationDefinition {
        definition(
            1_000,
            11_000,
            Interpreter::Order,
            vec![request(1024, 1, 4, 2, 3_000), request(2048, 2, 2, 1, 2_000)],
        )
    }

    #[test]
    fn reads_hadoops_submit_example() {
        let body: ReservationSubmissionRequest = serde_json::from_str(SUBMIT_EXAMPLE).unwrap();
        assert_eq!(body.queue, "dedicated");
        assert_eq!(body.reservation_id, "reservation_1404198295326_0003");
        let definition = &body.reservation_definition;
        assert_eq!(definition.arrival, 1_765_541_532_000);
        assert_eq!(definition.reservation_name, "res_1");
        let requests = &definition.reservation_requests;
        assert_eq!(requests.reservation_request_interpreter, Interpreter::Any);
        assert_eq!(requests.reservation_request.len(), 2);
        assert_eq!(
            requests.reservation_request[0],
            request(1024, 1, 220, 220, 60_000)
        );
        assert_eq!(definition.recurrence_expression, None);
        let contract = definition
            .validate(&DefinitionLimits {
                now_ms: 1_765_541_000_000,
                ..LIMITS
            })
            .unwrap();
        assert_eq!(contract.stages[1].num_containers, 110);
        assert_eq!(contract.period_ms, None);
    }

    #[test]
    fn reads_hadoops_list_example_with_strings_and_a_single_request() {
        let list: ReservationListInfo = serde_json::from_str(LIST_EXAMPLE).unwrap();
        let info = &list.reservations[0];
        assert_eq!(info.acceptance_time, 1_455_160_008_442);
        assert_eq!(info.resource_allocations[1].resource.memory, 1024);
        assert_eq!(info.resource_allocations[1].start_time, 1_465_542_250_000);
        let requests = &info.reservation_definition.reservation_requests;
        assert_eq!(
            requests.reservation_request,
            vec![request(1024, 1, 1, 1, 60)]
        );
    }

    #[test]
    fn writes_yarns_field_names() {
        let mut definition = valid();
        definition.recurrence_expression = Some("86400000".into());
        definition.reservation_requests.reservation_request[0]
            .capability
            .gpus = 1;
        let json = serde_json::to_value(&definition).unwrap();
        assert_eq!(json["arrival"], 1_000);
        assert_eq!(json["reservation-name"], "test");
        assert_eq!(json["priority"], 0);
        assert_eq!(json["recurrence-expression"], "86400000");
        let requests = &json["reservation-requests"];
        assert_eq!(requests["reservation-request-interpreter"], 2);
        let first = &requests["reservation-request"][0];
        assert_eq!(first["num-containers"], 4);
        assert_eq!(first["min-concurrency"], 2);
        assert_eq!(first["duration"], 3_000);
        assert_eq!(first["capability"]["memory"], 1024);
        assert_eq!(first["capability"]["vCores"], 1);
        assert_eq!(first["capability"]["gpus"], 1);
        let allocation = ResourceAllocationInfo {
            resource: ResourceInfo::default(),
            start_time: 1,
            end_time: 2,
        };
        let json = serde_json::to_value(allocation).unwrap();
        assert_eq!(json["startTime"], 1);
        assert_eq!(json["endTime"], 2);
        // And back again.
        let text = serde_json::to_string(&definition).unwrap();
        assert_eq!(
            serde_json::from_str::<ReservationDefinition>(&text).unwrap(),
            definition
        );
    }

    #[test]
    fn interpreter_reads_numbers_strings_and_names() {
        let read = |json: &str| serde_json::from_str::<Interpreter>(json);
        for interpreter in Interpreter::ALL {
            let code = interpreter.code();
            assert_eq!(read(&code.to_string()).unwrap(), interpreter);
            assert_eq!(read(&format!("\"{code}\"")).unwrap(), interpreter);
            assert_eq!(
                read(&format!("\"{}\"", interpreter.name())).unwrap(),
                interpreter
            );
            assert_eq!(
                read(&format!("\"{}\"", &interpreter.name()[2..].to_lowercase())).unwrap(),
                interpreter
            );
        }
        let error = read("4").unwrap_err().to_string();
        assert!(error.contains("R_ORDER_NO_GAP"), "{error}");
        assert!(read("\"R_SOME\"").is_err());
    }

    #[test]
    fn min_concurrency_defaults_to_one_and_gpus_to_zero() {
        let json = r#"{"capability":{"memory":512,"vCores":1},"num-containers":3,"duration":10}"#;
        let read: ReservationRequest = serde_json::from_str(json).unwrap();
        assert_eq!(read, request(512, 1, 3, 1, 10));
    }

    #[test]
    fn normalized_treats_zero_and_absent_recurrence_alike() {
        let mut zero = valid();
        zero.recurrence_expression = Some(" 0 ".into());
        assert_eq!(zero.normalized(), valid());
        let mut daily = valid();
        daily.recurrence_expression = Some(" 86400000".into());
        assert_eq!(
            daily.normalized().recurrence_expression.as_deref(),
            Some("86400000")
        );
    }

    #[test]
    fn a_valid_definition_becomes_a_contract() {
        let contract = valid().validate(&LIMITS).unwrap();
        assert_eq!(contract.interpreter, Interpreter::Order);
        assert_eq!(
            contract.stages[0],
            Stage {
                capability: Resources::new(1024, 1, 0),
                num_containers: 4,
                min_concurrency: 2,
                duration_ms: 3_000
            }
        );
        assert_eq!(contract.stages[0].gang(), Some(Resources::new(2048, 2, 0)));
    }

    /// Every bad input, each refused with its own error and figures.
    #[test]
    fn each_bad_definition_is_refused_with_its_figures() {
        type Change = fn(&mut ReservationDefinition);
        let cases: Vec<(&str, Change, DefinitionError, &str)> = vec![
            (
                "arrival after deadline",
                |d| d.arrival = 20_000,
                DefinitionError::ArrivalNotBeforeDeadline {
                    arrival_ms: 20_000,
                    deadline_ms: 11_000,
                },
                "arrival 20000 is not before deadline 11000",
            ),
            (
                "arrival equal to deadline",
                |d| d.arrival = 11_000,
                DefinitionError::ArrivalNotBeforeDeadline {
                    arrival_ms: 11_000,
                    deadline_ms: 11_000,
                },
                "not before",
            ),
            (
                "deadline in the past",
                |d| {
                    d.arrival = 0;
                    d.deadline = 0;
                },
                DefinitionError::ArrivalNotBeforeDeadline {
                    arrival_ms: 0,
                    deadline_ms: 0,
                },
                "not before",
            ),
            (
                "a negative arrival",
                |d| {
                    d.arrival = i64::MIN;
                    d.deadline = 1;
                },
                DefinitionError::TimeOutOfRange {
                    arrival_ms: i64::MIN,
                    deadline_ms: 1,
                },
                "from 0",
            ),
            (
                "a deadline past the year 9999",
                |d| d.deadline = i64::MAX,
                DefinitionError::TimeOutOfRange {
                    arrival_ms: 1_000,
                    deadline_ms: i64::MAX,
                },
                "9999",
            ),
            (
                "no requests",
                |d| d.reservation_requests.reservation_request.clear(),
                DefinitionError::NoRequests,
                "at least one",
            ),
            (
                "duration longer than the window",
                |d| d.reservation_requests.reservation_request[1].duration = 10_001,
                DefinitionError::DurationLongerThanWindow {
                    index: 1,
                    duration_ms: 10_001,
                    window_ms: 10_000,
                },
                "duration 10001 ms is longer than the 10000 ms",
            ),
            (
                "ordered stages longer than the window",
                |d| d.reservation_requests.reservation_request[1].duration = 8_000,
                DefinitionError::StagesLongerThanWindow {
                    interpreter: Interpreter::Order,
                    total_ms: 11_000,
                    window_ms: 10_000,
                },
                "11000 ms in all",
            ),
            (
                "zero memory",
                |d| {
                    d.reservation_requests.reservation_request[0]
                        .capability
                        .memory = 0
                },
                DefinitionError::CapabilityTooSmall {
                    index: 0,
                    dimension: "memory",
                    value: 0,
                    minimum: 1,
                },
                "memory must be at least 1, got 0",
            ),
            (
                "negative vcores",
                |d| {
                    d.reservation_requests.reservation_request[1]
                        .capability
                        .vcores = -2
                },
                DefinitionError::CapabilityTooSmall {
                    index: 1,
                    dimension: "vCores",
                    value: -2,
                    minimum: 1,
                },
                "vCores must be at least 1, got -2",
            ),
            (
                "negative gpus",
                |d| {
                    d.reservation_requests.reservation_request[0]
                        .capability
                        .gpus = -1
                },
                DefinitionError::CapabilityTooSmall {
                    index: 0,
                    dimension: "gpus",
                    value: -1,
                    minimum: 0,
                },
                "gpus must be at least 0, got -1",
            ),
            (
                "zero containers",
                |d| d.reservation_requests.reservation_request[0].num_containers = 0,
                DefinitionError::NonPositiveContainers {
                    index: 0,
                    num_containers: 0,
                },
                "num-containers must be greater than 0, got 0",
            ),
            (
                "negative containers",
                |d| d.reservation_requests.reservation_request[1].num_containers = -3,
                DefinitionError::NonPositiveContainers {
                    index: 1,
                    num_containers: -3,
                },
                "got -3",
            ),
            (
                "zero duration",
                |d| d.reservation_requests.reservation_request[0].duration = 0,
                DefinitionError::NonPositiveDuration {
                    index: 0,
                    duration_ms: 0,
                },
                "duration must be greater than 0 ms, got 0",
            ),
            (
                "min-concurrency zero",
                |d| d.reservation_requests.reservation_request[0].min_concurrency = 0,
                DefinitionError::MinConcurrencyOutOfRange {
                    index: 0,
                    min_concurrency: 0,
                    num_containers: 4,
                },
                "min-concurrency 0 is outside 1..=4",
            ),
            (
                "min-concurrency above num-containers",
                |d| d.reservation_requests.reservation_request[0].min_concurrency = 5,
                DefinitionError::MinConcurrencyOutOfRange {
                    index: 0,
                    min_concurrency: 5,
                    num_containers: 4,
                },
                "min-concurrency 5 is outside 1..=4",
            ),
            (
                "a deadline more than 31 days ahead",
                |d| d.deadline = 32 * 86_400_000,
                DefinitionError::TooFarAhead {
                    deadline_ms: 32 * 86_400_000,
                    latest_ms: 31 * 86_400_000,
                },
                "more than 31 days ahead",
            ),
            (
                "memory above the maximum",
                |d| {
                    d.reservation_requests.reservation_request[0]
                        .capability
                        .memory = 1 << 31
                },
                DefinitionError::TooLarge {
                    index: 0,
                    what: "memory",
                    value: 1 << 31,
                    max: 1 << 30,
                },
                "memory 2147483648 is above the most Weft handles (1073741824)",
            ),
            (
                "too many gangs",
                |d| {
                    let requests = &mut d.reservation_requests.reservation_request;
                    for request in requests.iter_mut() {
                        request.num_containers = 100_000;
                        request.min_concurrency = 1;
                    }
                },
                DefinitionError::TooManyGangs { gangs: 200_000 },
                "200000 gangs",
            ),
            (
                "too many requests",
                |d| {
                    let first = d.reservation_requests.reservation_request[0].clone();
                    d.reservation_requests.reservation_request = vec![first; 101];
                },
                DefinitionError::TooManyRequests { count: 101 },
                "at most 100",
            ),
            (
                "too many containers",
                |d| d.reservation_requests.reservation_request[0].num_containers = 1 << 40,
                DefinitionError::TooLarge {
                    index: 0,
                    what: "num-containers",
                    value: 1 << 40,
                    max: 100_000,
                },
                "num-containers",
            ),
            (
                "period not dividing the maximum periodicity",
                |d| d.recurrence_expression = Some("7000000".into()),
                DefinitionError::PeriodDoesNotDivideMaxPeriodicity {
                    period_ms: 7_000_000,
                    max_periodicity_ms: DEFAULT_MAX_PERIODICITY_MS,
                },
                "period 7000000 ms does not divide the maximum periodicity 86400000 ms",
            ),
            (
                "period shorter than the window",
                |d| d.recurrence_expression = Some("5000".into()),
                DefinitionError::PeriodShorterThanWindow {
                    period_ms: 5_000,
                    window_ms: 10_000,
                },
                "period 5000 ms is shorter than the 10000 ms",
            ),
            (
                "recurrence not a number",
                |d| d.recurrence_expression = Some("daily".into()),
                DefinitionError::BadRecurrence {
                    expression: "daily".into(),
                },
                "\"daily\"",
            ),
            (
                "negative recurrence",
                |d| d.recurrence_expression = Some("-60000".into()),
                DefinitionError::BadRecurrence {
                    expression: "-60000".into(),
                },
                "-60000",
            ),
        ];
        for (name, change, expected, words) in cases {
            let mut definition = valid();
            change(&mut definition);
            let error = definition.validate(&LIMITS).unwrap_err();
            assert_eq!(error, expected, "{name}");
            let message = error.to_string();
            assert!(
                message.contains(words),
                "{name}: {message:?} lacks {words:?}"
            );
        }
    }

    #[test]
    fn recurrence_zero_is_one_off_and_a_divisor_is_a_period() {
        let mut definition = valid();
        definition.recurrence_expression = Some("0".into());
        assert_eq!(definition.validate(&LIMITS).unwrap().period_ms, None);
        definition.recurrence_expression = Some("3600000".into());
        assert_eq!(
            definition.validate(&LIMITS).unwrap().period_ms,
            Some(3_600_000)
        );
        // A period equal to the window is allowed: occurrences touch.
        definition.recurrence_expression = Some("10000".into());
        assert_eq!(
            definition.validate(&LIMITS).unwrap().period_ms,
            Some(10_000)
        );
    }

    #[test]
    fn a_gang_larger_than_capacity_is_refused_except_for_any() {
        let contract = valid().validate(&LIMITS).unwrap();
        let small = Resources::new(2047, 8, 0);
        assert_eq!(
            contract.check_gangs_fit(&small).unwrap_err(),
            DefinitionError::GangExceedsCapacity {
                index: 0,
                capability: Resources::new(1024, 1, 0),
                min_concurrency: 2,
                capacity: small,
            }
        );
        assert!(
            contract
                .check_gangs_fit(&Resources::new(2048, 8, 0))
                .is_ok()
        );
        let mut any = valid();
        any.reservation_requests.reservation_request_interpreter = Interpreter::Any;
        assert!(
            any.validate(&LIMITS)
                .unwrap()
                .check_gangs_fit(&small)
                .is_ok()
        );
    }

    #[test]
    fn reservation_ids_print_and_parse_like_yarns() {
        let id = ReservationId {
            cluster_timestamp: 1_700_000_000_000,
            sequence: 7,
        };
        assert_eq!(id.to_string(), "reservation_1700000000000_0007");
        assert_eq!(
            "reservation_1700000000000_0007"
                .parse::<ReservationId>()
                .unwrap(),
            id
        );
        assert_eq!(
            "reservation_1700000000000_7"
                .parse::<ReservationId>()
                .unwrap(),
            id
        );
        let long = ReservationId {
            cluster_timestamp: 1,
            sequence: 123_456,
        };
        assert_eq!(long.to_string(), "reservation_1_123456");
        for bad in [
            "",
            "reservation_",
            "reservation_1",
            "reservation_a_1",
            "application_1_0001",
            "reservation_1_-1",
        ] {
            let error = bad.parse::<ReservationId>().unwrap_err();
            assert!(
                error.to_string().contains("is not a reservation id"),
                "{bad}"
            );
        }
        assert_eq!(
            serde_json::to_string(&id).unwrap(),
            "\"reservation_1700000000000_0007\""
        );
    }
}
