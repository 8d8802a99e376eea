//! A fixed, copyable resource vector: what a pod requests and what a node offers.
//!
//! Deciders add, subtract and compare these in tight loops, so a resource list
//! is a small array of integers (millicores, bytes, counts) indexed by
//! [`ResourceKind`], never a map. Extended resources beyond the well-known
//! ones get one of a few spare slots through [`ResourceNames`].

use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};

use super::quantity::{Quantity, QuantityError};

/// Number of spare slots for extended resources that are not well known.
pub const EXTRA_SLOTS: usize = 4;
const WELL_KNOWN: usize = 11;
/// Total number of slots in a [`Resources`] vector.
pub const SLOTS: usize = WELL_KNOWN + EXTRA_SLOTS;

/// A resource slot. Well-known resources have fixed slots; other extended
/// resources are `Extra(i)`, named by a [`ResourceNames`] table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ResourceKind {
    /// `cpu`, in millicores.
    Cpu,
    /// `memory`, in bytes.
    Memory,
    /// `ephemeral-storage`, in bytes.
    EphemeralStorage,
    /// `pods`, a count.
    Pods,
    /// `nvidia.com/gpu`.
    NvidiaGpu,
    /// `amd.com/gpu`.
    AmdGpu,
    /// `aws.amazon.com/neuron`.
    AwsNeuron,
    /// `aws.amazon.com/neuroncore`.
    AwsNeuronCore,
    /// `habana.ai/gaudi`.
    HabanaGaudi,
    /// `vpc.amazonaws.com/efa`.
    Efa,
    /// `vpc.amazonaws.com/pod-eni`.
    PodEni,
    /// Another extended resource, in a spare slot.
    Extra(u8),
}

impl ResourceKind {
    /// Every well-known kind, in slot order.
    pub const WELL_KNOWN: [ResourceKind; WELL_KNOWN] = [
        ResourceKind::Cpu,
        ResourceKind::Memory,
        ResourceKind::EphemeralStorage,
        ResourceKind::Pods,
        ResourceKind::NvidiaGpu,
        ResourceKind::AmdGpu,
        ResourceKind::AwsNeuron,
        ResourceKind::AwsNeuronCore,
        ResourceKind::HabanaGaudi,
        ResourceKind::Efa,
        ResourceKind::PodEni,
    ];

    /// The slot index of this kind.
    #[inline]
    pub const fn slot(self) -> usize {
        match self {
            ResourceKind::Cpu => 0,
            ResourceKind::Memory => 1,
            ResourceKind::EphemeralStorage => 2,
            ResourceKind::Pods => 3,
            ResourceKind::NvidiaGpu => 4,
            ResourceKind::AmdGpu => 5,
            ResourceKind::AwsNeuron => 6,
            ResourceKind::AwsNeuronCore => 7,
            ResourceKind::HabanaGaudi => 8,
            ResourceKind::Efa => 9,
            ResourceKind::PodEni => 10,
            ResourceKind::Extra(i) => WELL_KNOWN + i as usize,
        }
    }

    /// The Kubernetes name of a well-known kind (`None` for spare slots).
    pub const fn well_known_name(self) -> Option<&'static str> {
        Some(match self {
            ResourceKind::Cpu => "cpu",
            ResourceKind::Memory => "memory",
            ResourceKind::EphemeralStorage => "ephemeral-storage",
            ResourceKind::Pods => "pods",
            ResourceKind::NvidiaGpu => "nvidia.com/gpu",
            ResourceKind::AmdGpu => "amd.com/gpu",
            ResourceKind::AwsNeuron => "aws.amazon.com/neuron",
            ResourceKind::AwsNeuronCore => "aws.amazon.com/neuroncore",
            ResourceKind::HabanaGaudi => "habana.ai/gaudi",
            ResourceKind::Efa => "vpc.amazonaws.com/efa",
            ResourceKind::PodEni => "vpc.amazonaws.com/pod-eni",
            ResourceKind::Extra(_) => return None,
        })
    }

    /// The well-known kind with this Kubernetes name.
    pub fn from_well_known_name(name: &str) -> Option<Self> {
        Self::WELL_KNOWN
            .into_iter()
            .find(|k| k.well_known_name() == Some(name))
    }

    /// Converts a quantity to this kind's integer unit (CPU in millicores,
    /// everything else in whole units), rounding up as Kubernetes does.
    pub fn amount(self, quantity: Quantity) -> i64 {
        match self {
            ResourceKind::Cpu => quantity.millis_ceil(),
            _ => quantity.units_ceil(),
        }
    }
}

/// Errors from reading a resource list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    /// A value is not a quantity.
    #[error("resource {name}: {source}")]
    Quantity {
        /// The resource name.
        name: String,
        /// The parse error, which quotes the text.
        source: QuantityError,
    },
    /// A request or capacity below zero.
    #[error("resource {name}: negative quantity {text:?}")]
    Negative {
        /// The resource name.
        name: String,
        /// The text as written.
        text: String,
    },
    /// More distinct extended resources than spare slots.
    #[error(
        "resource {name}: more than {EXTRA_SLOTS} distinct extended resources (besides the well-known ones) are not supported"
    )]
    TooManyExtended {
        /// The name that did not fit.
        name: String,
    },
}

/// Names of the extended resources that occupy spare slots, in the order they
/// were first seen. One table serves a whole run, so slots mean the same
/// thing in every pod and node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceNames {
    extra: Vec<String>,
}

impl ResourceNames {
    /// The kind for `name`, assigning a spare slot to a new extended resource.
    pub fn kind_for(&mut self, name: &str) -> Result<ResourceKind, ResourceError> {
        if let Some(kind) = ResourceKind::from_well_known_name(name) {
            return Ok(kind);
        }
        if let Some(i) = self.extra.iter().position(|n| n == name) {
            return Ok(ResourceKind::Extra(i as u8));
        }
        if self.extra.len() == EXTRA_SLOTS {
            return Err(ResourceError::TooManyExtended {
                name: name.to_string(),
            });
        }
        self.extra.push(name.to_string());
        Ok(ResourceKind::Extra((self.extra.len() - 1) as u8))
    }

    /// The kind already assigned to `name`, if any.
    pub fn lookup(&self, name: &str) -> Option<ResourceKind> {
        ResourceKind::from_well_known_name(name).or_else(|| {
            self.extra
                .iter()
                .position(|n| n == name)
                .map(|i| ResourceKind::Extra(i as u8))
        })
    }

    /// The Kubernetes name of a kind.
    pub fn name(&self, kind: ResourceKind) -> &str {
        match kind {
            ResourceKind::Extra(i) => self.extra.get(i as usize).map_or("<unknown>", |s| s),
            k => k.well_known_name().unwrap_or("<unknown>"),
        }
    }

    /// Parses a Kubernetes resource list (`{cpu: 500m, memory: 1Gi}`).
    pub fn parse_list<'a>(
        &mut self,
        entries: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Resources, ResourceError> {
        let mut out = Resources::ZERO;
        for (name, text) in entries {
            let quantity = Quantity::parse(text).map_err(|source| ResourceError::Quantity {
                name: name.to_string(),
                source,
            })?;
            if quantity.is_negative() {
                return Err(ResourceError::Negative {
                    name: name.to_string(),
                    text: text.to_string(),
                });
            }
            let kind = self.kind_for(name)?;
            out.set(kind, kind.amount(quantity));
        }
        Ok(out)
    }
}

/// A vector of resource amounts, one integer per [`ResourceKind`] slot.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Resources {
    amounts: [i64; SLOTS],
}

impl Resources {
    /// No resources at all.
    pub const ZERO: Resources = Resources {
        amounts: [0; SLOTS],
    };

    /// Room no request fits in: every amount negative (see
    /// [`Resources::fits`]).
    pub const NOTHING_FITS: Resources = Resources {
        amounts: [-1; SLOTS],
    };

    /// CPU and memory only, the most common shape.
    #[inline]
    pub const fn cpu_mem(cpu_millis: i64, memory_bytes: i64) -> Self {
        let mut amounts = [0; SLOTS];
        amounts[0] = cpu_millis;
        amounts[1] = memory_bytes;
        Resources { amounts }
    }

    /// Builder-style setter.
    #[inline]
    pub const fn with(mut self, kind: ResourceKind, amount: i64) -> Self {
        self.amounts[kind.slot()] = amount;
        self
    }

    /// The amount of one kind.
    #[inline]
    pub const fn get(&self, kind: ResourceKind) -> i64 {
        self.amounts[kind.slot()]
    }

    /// The amount in a slot ([`ResourceKind::slot`]), for loops that look
    /// the slot up once.
    #[inline]
    pub const fn amount_at(&self, slot: usize) -> i64 {
        self.amounts[slot]
    }

    /// Sets the amount of one kind.
    #[inline]
    pub fn set(&mut self, kind: ResourceKind, amount: i64) {
        self.amounts[kind.slot()] = amount;
    }

    /// CPU in millicores.
    #[inline]
    pub const fn cpu_millis(&self) -> i64 {
        self.amounts[0]
    }

    /// Memory in bytes.
    #[inline]
    pub const fn memory_bytes(&self) -> i64 {
        self.amounts[1]
    }

    /// Ephemeral storage in bytes.
    #[inline]
    pub const fn ephemeral_bytes(&self) -> i64 {
        self.amounts[2]
    }

    /// Pod slots.
    #[inline]
    pub const fn pods(&self) -> i64 {
        self.amounts[3]
    }

    /// Whether every amount is zero.
    #[inline]
    pub fn is_zero(&self) -> bool {
        self.amounts.iter().all(|&a| a == 0)
    }

    /// Whether a request of `self` fits in `available`, with Karpenter's
    /// semantics (core: `resources.Fits`): it fails if any available amount is
    /// negative, or if any requested amount exceeds what is available (a
    /// resource missing from `available` counts as zero; zero requests fit).
    #[inline]
    pub fn fits(&self, available: &Resources) -> bool {
        self.amounts
            .iter()
            .zip(&available.amounts)
            .all(|(&want, &have)| have >= 0 && (want <= 0 || want <= have))
    }

    /// Whether every request that fits this room also fits `other` (this
    /// room is no larger): true when nothing fits this one, or when
    /// neither holds a negative amount and each amount is at most
    /// `other`'s.
    #[inline]
    pub fn admits_no_more_than(&self, other: &Resources) -> bool {
        self.any_negative()
            || (!other.any_negative()
                && self
                    .amounts
                    .iter()
                    .zip(&other.amounts)
                    .all(|(&mine, &theirs)| mine <= theirs))
    }

    /// This amount as a room searched many times: [`Resources::NOTHING_FITS`]
    /// when any amount is negative, since no request fits such a room;
    /// unchanged otherwise.
    #[inline]
    pub fn as_room(&self) -> Resources {
        if self.amounts.iter().any(|&a| a < 0) {
            Resources::NOTHING_FITS
        } else {
            *self
        }
    }

    /// Element-wise maximum.
    #[inline]
    pub fn max(&self, other: &Resources) -> Resources {
        let mut out = *self;
        for (a, b) in out.amounts.iter_mut().zip(&other.amounts) {
            *a = (*a).max(*b);
        }
        out
    }

    /// Element-wise minimum.
    #[inline]
    pub fn min(&self, other: &Resources) -> Resources {
        let mut out = *self;
        for (a, b) in out.amounts.iter_mut().zip(&other.amounts) {
            *a = (*a).min(*b);
        }
        out
    }

    /// Subtraction that stops at zero for every kind.
    #[inline]
    pub fn saturating_sub(&self, other: &Resources) -> Resources {
        let mut out = *self;
        for (a, b) in out.amounts.iter_mut().zip(&other.amounts) {
            *a = (*a - *b).max(0);
        }
        out
    }

    /// Whether any amount is below zero.
    #[inline]
    pub fn any_negative(&self) -> bool {
        self.amounts.iter().any(|&a| a < 0)
    }

    /// The non-zero entries, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (ResourceKind, i64)> + '_ {
        (0..SLOTS).filter_map(move |slot| {
            let kind = if slot < WELL_KNOWN {
                ResourceKind::WELL_KNOWN[slot]
            } else {
                ResourceKind::Extra((slot - WELL_KNOWN) as u8)
            };
            let amount = self.amounts[slot];
            (amount != 0).then_some((kind, amount))
        })
    }
}

impl Add for Resources {
    type Output = Resources;
    #[inline]
    fn add(mut self, rhs: Resources) -> Resources {
        self += rhs;
        self
    }
}

impl AddAssign for Resources {
    #[inline]
    fn add_assign(&mut self, rhs: Resources) {
        for (a, b) in self.amounts.iter_mut().zip(&rhs.amounts) {
            *a += *b;
        }
    }
}

impl Sub for Resources {
    type Output = Resources;
    #[inline]
    fn sub(mut self, rhs: Resources) -> Resources {
        self -= rhs;
        self
    }
}

impl SubAssign for Resources {
    #[inline]
    fn sub_assign(&mut self, rhs: Resources) {
        for (a, b) in self.amounts.iter_mut().zip(&rhs.amounts) {
            *a -= *b;
        }
    }
}

impl std::iter::Sum for Resources {
    fn sum<I: Iterator<Item = Resources>>(iter: I) -> Resources {
        iter.fold(Resources::ZERO, |acc, r| acc + r)
    }
}

impl fmt::Debug for Resources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (kind, amount) in self.iter() {
            match kind.well_known_name() {
                Some(name) => map.entry(&name, &amount),
                None => map.entry(&kind, &amount),
            };
        }
        map.finish()
    }
}

/// One MiB in bytes.
pub const MIB: i64 = 1 << 20;
/// One GiB in bytes.
pub const GIB: i64 = 1 << 30;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_list_uses_kubernetes_units() {
        let mut names = ResourceNames::default();
        let r = names
            .parse_list([
                ("cpu", "250m"),
                ("memory", "1Gi"),
                ("nvidia.com/gpu", "1"),
                ("example.com/fpga", "2"),
            ])
            .unwrap();
        assert_eq!(r.cpu_millis(), 250);
        assert_eq!(r.memory_bytes(), GIB);
        assert_eq!(r.get(ResourceKind::NvidiaGpu), 1);
        assert_eq!(
            names.lookup("example.com/fpga"),
            Some(ResourceKind::Extra(0))
        );
        assert_eq!(r.get(ResourceKind::Extra(0)), 2);
        assert_eq!(names.name(ResourceKind::Extra(0)), "example.com/fpga");
    }

    #[test]
    fn parse_list_errors_name_the_resource() {
        let mut names = ResourceNames::default();
        let e = names.parse_list([("memory", "1GB")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "resource memory: invalid quantity \"1GB\": unknown suffix"
        );
        let e = names.parse_list([("cpu", "-1")]).unwrap_err();
        assert!(matches!(e, ResourceError::Negative { .. }));
        for i in 0..EXTRA_SLOTS {
            names.kind_for(&format!("x.io/r{i}")).unwrap();
        }
        assert!(matches!(
            names.kind_for("x.io/one-too-many"),
            Err(ResourceError::TooManyExtended { .. })
        ));
    }

    /// Mirrors core `resources.Fits`: missing resources count as zero, zero
    /// requests always fit, negative availability never fits.
    #[test]
    fn fits_follows_karpenter_semantics() {
        let alloc = Resources::cpu_mem(1930, 6903 * MIB).with(ResourceKind::Pods, 29);
        assert!(Resources::cpu_mem(1930, 6903 * MIB).fits(&alloc));
        assert!(!Resources::cpu_mem(1931, 0).fits(&alloc));
        assert!(
            !Resources::ZERO
                .with(ResourceKind::NvidiaGpu, 1)
                .fits(&alloc)
        );
        assert!(Resources::ZERO.fits(&alloc));
        let negative = alloc.with(ResourceKind::Memory, -1);
        assert!(!Resources::cpu_mem(1, 0).fits(&negative));
    }

    /// `admits_no_more_than` is what it promises for `fits`: every
    /// request of a small grid that fits the smaller room fits the larger.
    #[test]
    fn a_room_that_admits_no_more_fits_no_request_the_other_refuses() {
        let rooms = [
            Resources::cpu_mem(1000, 2000),
            Resources::cpu_mem(500, 2000),
            Resources::cpu_mem(1000, 0),
            Resources::cpu_mem(1500, 1000),
            Resources::cpu_mem(1000, -1),
            Resources::NOTHING_FITS,
        ];
        let requests: Vec<Resources> = [0, 400, 500, 1000, 1500]
            .iter()
            .flat_map(|&c| [0, 1000, 2000].map(|m| Resources::cpu_mem(c, m)))
            .collect();
        for small in &rooms {
            for large in &rooms {
                let claimed = small.admits_no_more_than(large);
                let holds = requests.iter().all(|r| !r.fits(small) || r.fits(large));
                if claimed {
                    assert!(holds, "{small:?} admits more than {large:?}");
                }
            }
        }
        assert!(Resources::cpu_mem(500, 2000).admits_no_more_than(&Resources::cpu_mem(1000, 2000)));
        assert!(
            !Resources::cpu_mem(1500, 1000).admits_no_more_than(&Resources::cpu_mem(1000, 2000))
        );
        assert!(Resources::cpu_mem(1000, -1).admits_no_more_than(&Resources::cpu_mem(1, 1)));
        assert!(!Resources::cpu_mem(1, 1).admits_no_more_than(&Resources::NOTHING_FITS));
    }

    #[test]
    fn arithmetic() {
        let a = Resources::cpu_mem(100, 200);
        let b = Resources::cpu_mem(50, 300);
        assert_eq!(a + b, Resources::cpu_mem(150, 500));
        assert_eq!(a - b, Resources::cpu_mem(50, -100));
        assert_eq!(a.saturating_sub(&b), Resources::cpu_mem(50, 0));
        assert_eq!(a.max(&b), Resources::cpu_mem(100, 300));
        assert_eq!(a.min(&b), Resources::cpu_mem(50, 200));
        assert_eq!([a, b].into_iter().sum::<Resources>(), a + b);
        assert!((a - b).any_negative());
    }
}
