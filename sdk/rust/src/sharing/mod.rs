//! Reservation sharing policies (`sharing-policy` world): [`SharingPolicy`],
//! the checked [`PlanSettings`] and [`Admission`] a decision sees, the
//! timeline helpers ([`Walk`], [`TimelineBuilder`], [`Integrals`]), the
//! over-commit rule every sharing policy keeps ([`check_over_commit`]), and
//! [`export_sharing!`](crate::export_sharing).

mod admission;
mod over_commit;
mod timeline;

pub use admission::{Admission, PlanSettings};
pub use over_commit::check_over_commit;
pub use timeline::{
    Integral, IntegralCursor, Integrals, MAX_AMOUNT, MAX_TIME_MS, Stretch, TimelineBuilder, Walk,
};

use crate::Policy;

/// The WIT records of `weft:policy/sharing`, as the host sends them. Tests
/// build these and check them with `Admission::new`.
pub mod wit {
    pub use crate::bindings::sharing::exports::weft::policy::sharing::{
        Admission, PlanContext, PlanSettings, Rejection, Timeline,
    };
}

/// A step function of resources over time, as columns: from `at_ms[i]`
/// until `at_ms[i + 1]` the amount is `amount(i)`; zero before the first
/// point. The WIT record, with methods added.
pub type Timeline = wit::Timeline;

/// Why a reservation was refused: the WIT variant, with `message()` and
/// `kind()` added.
pub type Rejection = wit::Rejection;

/// A reservation sharing policy (YARN's SharingPolicy).
pub trait SharingPolicy: Policy {
    /// How far before and after a reservation the policy looks, in ms (at
    /// least 0): the host cuts timelines to that range around it.
    fn window(&mut self, settings: &PlanSettings) -> i64;

    /// Accepts the candidate, or refuses it with the reason. Equal
    /// admissions must get equal answers.
    fn validate(&mut self, admission: &Admission) -> Result<(), Rejection>;

    /// What the user could still be given at each instant of [from, to)
    /// (the candidate is empty): a timeline whose times strictly increase.
    /// `validate` must accept a candidate within what this offers.
    fn available(&mut self, admission: &Admission) -> Timeline;
}

/// Exports a type implementing [`SharingPolicy`] as the component's
/// `sharing-policy` world: `weft_policy::export_sharing!(MySharing);` at the
/// top level of the crate (a `cdylib`). It does nothing outside
/// WebAssembly, so the same crate builds and tests natively.
#[macro_export]
macro_rules! export_sharing {
    ($policy:ty) => {
        #[cfg(target_arch = "wasm32")]
        #[allow(unsafe_code, reason = "the exports wit-bindgen generates")]
        const _: () = {
            static POLICY: $crate::glue::Slot<$policy> = $crate::glue::Slot::new();

            struct Component;

            impl $crate::bindings::sharing::Guest for Component {
                fn describe() -> $crate::types::PolicyInfo {
                    $crate::glue::describe::<$policy>($crate::types::PolicyKind::Sharing)
                }

                fn configure(
                    params: $crate::types::Params,
                ) -> ::core::result::Result<(), ::std::string::String> {
                    $crate::glue::configure(&POLICY, $crate::types::PolicyKind::Sharing, params)
                }
            }

            impl $crate::bindings::sharing::exports::weft::policy::sharing::Guest for Component {
                fn window(settings: $crate::sharing::wit::PlanSettings) -> i64 {
                    $crate::glue::window(&POLICY, settings)
                }

                fn validate(
                    admission: $crate::sharing::wit::Admission,
                ) -> ::core::result::Result<(), $crate::sharing::wit::Rejection> {
                    $crate::glue::validate(&POLICY, admission)
                }

                fn available(
                    admission: $crate::sharing::wit::Admission,
                ) -> $crate::sharing::wit::Timeline {
                    $crate::glue::available(&POLICY, admission)
                }
            }

            $crate::bindings::sharing::export_sharing_world!(
                Component with_types_in $crate::bindings::sharing
            );
        };
    };
}
