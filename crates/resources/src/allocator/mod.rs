//! Service cluster IP and node port allocators. Each range's allocations live in storage as
//! upstream's `RangeAllocation` object (`/ranges/serviceips`, `/ranges/servicenodeports`),
//! changed only by compare-and-swap, so every process on one storage shares them; [`repair`]
//! rebuilds them from the stored Services at start-up and every three minutes.

pub mod bitmap;
mod range;
pub mod repair;

use ipnet::IpNet;
use kapi_storage::DynStorage;
use range::RangeStore;
use std::net::IpAddr;
use std::ops::RangeInclusive;

/// The storage keys (under the storage prefix, `/registry` by default) upstream uses.
pub const SERVICE_IPS_KEY: &str = "/ranges/serviceips";
pub const SERVICE_NODE_PORTS_KEY: &str = "/ranges/servicenodeports";

/// Why an allocation failed, worded as upstream's allocator errors.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AllocationError {
    #[error("provided IP is already allocated")]
    IpAllocated,
    #[error("provided IP is not in the valid range. The range of valid IPs is {0}")]
    IpOutOfRange(String),
    #[error("range is full")]
    Full,
    #[error("provided port is already allocated")]
    PortAllocated,
    #[error("provided port is not in the valid range. The range of valid ports is {0}")]
    PortOutOfRange(String),
    /// The `RangeAllocation` does not exist yet (repair has not run).
    #[error("cannot allocate resources of type {0} at this time")]
    NotReady(String),
    #[error("the provided range does not match the current range")]
    RangeMismatch,
    #[error("{0}")]
    Storage(String),
}

fn ip_to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v) => u32::from(v) as u128,
        IpAddr::V6(v) => u128::from(v),
    }
}

/// Upstream's `calculateRangeOffset`: `min(max(min, size/step), max)`, none for tiny ranges.
fn range_offset(size: u128, min: u128, max: u128, step: u128) -> usize {
    if size <= min {
        return 0;
    }
    size.checked_div(step).unwrap_or(0).clamp(min, max) as usize
}

/// Cluster IPs from one CIDR. Offset `i` is the address `network + 1 + i`: the network
/// address and (IPv4) the broadcast address are never handed out; IPv6 ranges are capped at
/// 65536 addresses, as upstream's bitmap is.
pub struct IpAllocator {
    net: IpNet,
    store: RangeStore,
}

impl IpAllocator {
    pub fn new(net: IpNet, storage: DynStorage) -> Self {
        let size: u128 = match net {
            IpNet::V4(n) => 1u128 << 32u8.saturating_sub(n.prefix_len()),
            IpNet::V6(n) => 1u128
                .checked_shl(128u32.saturating_sub(u32::from(n.prefix_len())))
                .unwrap_or(u128::MAX),
        };
        let max = match net {
            IpNet::V4(_) => size.saturating_sub(2),
            IpNet::V6(_) => size.min(65536).saturating_sub(1),
        };
        let offset = range_offset(size, 16, 256, 16);
        Self {
            net,
            store: RangeStore {
                storage,
                key: SERVICE_IPS_KEY,
                resource: "serviceipallocations",
                spec: net.trunc().to_string(),
                max: max as usize,
                offset,
                lock: Default::default(),
            },
        }
    }

    pub fn range(&self) -> IpNet {
        self.net
    }

    fn base(&self) -> u128 {
        ip_to_u128(self.net.network()).saturating_add(1)
    }

    fn addr(&self, n: u128) -> IpAddr {
        match self.net {
            IpNet::V4(_) => IpAddr::V4(std::net::Ipv4Addr::from(n as u32)),
            IpNet::V6(_) => IpAddr::V6(std::net::Ipv6Addr::from(n)),
        }
    }

    /// The `index`-th address (`1` is `.1`, kept for the `kubernetes` service).
    pub fn nth(&self, index: u128) -> IpAddr {
        self.addr(ip_to_u128(self.net.network()).saturating_add(index))
    }

    /// The bitmap offset of `ip`.
    pub fn offset_of(&self, ip: IpAddr) -> Result<usize, AllocationError> {
        let n = ip_to_u128(ip);
        let base = self.base();
        match n.checked_sub(base) {
            Some(offset) if self.net.contains(&ip) && offset < self.store.max() as u128 => {
                Ok(offset as usize)
            }
            _ => Err(AllocationError::IpOutOfRange(self.net.to_string())),
        }
    }

    pub fn at(&self, offset: usize) -> IpAddr {
        self.addr(self.base().saturating_add(offset as u128))
    }

    /// Claims a specific address.
    pub async fn allocate(&self, ip: IpAddr) -> Result<(), AllocationError> {
        let i = self.offset_of(ip)?;
        self.store.allocate(i, AllocationError::IpAllocated).await
    }

    /// Picks a random free address, never `.1` (the `kubernetes` service's).
    pub async fn allocate_next(&self) -> Result<IpAddr, AllocationError> {
        let skip = (self.store.max() > 1).then_some(0);
        self.store.allocate_next(skip).await.map(|i| self.at(i))
    }

    pub async fn release(&self, ip: IpAddr) -> Result<(), AllocationError> {
        match self.offset_of(ip) {
            Ok(i) => self.store.release(i).await,
            // Never ours (the range changed): nothing to give back.
            Err(_) => Ok(()),
        }
    }

    pub(crate) fn store(&self) -> &RangeStore {
        &self.store
    }
}

/// Node ports from a range; offset `i` is port `start + i`.
pub struct PortAllocator {
    range: RangeInclusive<u16>,
    store: RangeStore,
}

impl PortAllocator {
    pub fn new(range: RangeInclusive<u16>, storage: DynStorage) -> Self {
        let size = u128::from(*range.end())
            .saturating_add(1)
            .saturating_sub(u128::from(*range.start()));
        let spec = format!("{}-{}", range.start(), range.end());
        Self {
            store: RangeStore {
                storage,
                key: SERVICE_NODE_PORTS_KEY,
                resource: "servicenodeportallocations",
                spec,
                max: size as usize,
                offset: range_offset(size, 16, 128, 32),
                lock: Default::default(),
            },
            range,
        }
    }

    pub fn offset_of(&self, port: u16) -> Result<usize, AllocationError> {
        match port.checked_sub(*self.range.start()) {
            Some(offset) if self.range.contains(&port) => Ok(usize::from(offset)),
            _ => Err(AllocationError::PortOutOfRange(self.store.spec().into())),
        }
    }

    pub fn at(&self, offset: usize) -> u16 {
        self.range.start().saturating_add(offset as u16)
    }

    pub async fn allocate(&self, port: u16) -> Result<(), AllocationError> {
        let i = self.offset_of(port)?;
        self.store.allocate(i, AllocationError::PortAllocated).await
    }

    pub async fn allocate_next(&self) -> Result<u16, AllocationError> {
        self.store.allocate_next(None).await.map(|i| self.at(i))
    }

    pub async fn release(&self, port: u16) -> Result<(), AllocationError> {
        match self.offset_of(port) {
            Ok(i) => self.store.release(i).await,
            Err(_) => Ok(()),
        }
    }

    pub(crate) fn store(&self) -> &RangeStore {
        &self.store
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_follow_upstream() {
        // upstream: /24 → 256/16 = 16; /12 → capped at 256; /28 → none
        assert_eq!(range_offset(256, 16, 256, 16), 16);
        assert_eq!(range_offset(1 << 20, 16, 256, 16), 256);
        assert_eq!(range_offset(16, 16, 256, 16), 0);
        // ports 30000-32767: 2768/32 = 86
        assert_eq!(range_offset(2768, 16, 128, 32), 86);
    }
}
