//! In-memory allocators for service cluster IPs and node ports. They are rebuilt from the
//! stored services at start-up; a write that fails gives back what it took.

use ipnet::IpNet;
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::ops::RangeInclusive;
use std::sync::Mutex;

/// Why an allocation failed, worded as upstream's field errors.
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
}

/// Cluster IPs from one CIDR; the network and broadcast addresses are never handed out.
pub struct IpAllocator {
    net: IpNet,
    used: Mutex<BTreeSet<IpAddr>>,
}

fn ip_to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v) => u32::from(v) as u128,
        IpAddr::V6(v) => u128::from(v),
    }
}

impl IpAllocator {
    pub fn new(net: IpNet) -> Self {
        Self {
            net,
            used: Mutex::new(BTreeSet::new()),
        }
    }

    pub fn range(&self) -> IpNet {
        self.net
    }

    fn bounds(&self) -> (u128, u128) {
        (
            ip_to_u128(self.net.network()) + 1,
            ip_to_u128(self.net.broadcast()).saturating_sub(1),
        )
    }

    fn addr(&self, n: u128) -> IpAddr {
        match self.net {
            IpNet::V4(_) => IpAddr::V4(std::net::Ipv4Addr::from(n as u32)),
            IpNet::V6(_) => IpAddr::V6(std::net::Ipv6Addr::from(n)),
        }
    }

    /// The `index`-th usable address (`1` is `.1`, kept for the `kubernetes` service).
    pub fn nth(&self, index: u128) -> IpAddr {
        self.addr(ip_to_u128(self.net.network()) + index)
    }

    /// Claims a specific address.
    pub fn allocate(&self, ip: IpAddr) -> Result<(), AllocationError> {
        let (lo, hi) = self.bounds();
        let n = ip_to_u128(ip);
        if !self.net.contains(&ip) || n < lo || n > hi {
            return Err(AllocationError::IpOutOfRange(self.net.to_string()));
        }
        let mut used = self.used.lock().map_err(|_| AllocationError::Full)?;
        if !used.insert(ip) {
            return Err(AllocationError::IpAllocated);
        }
        Ok(())
    }

    /// Picks a free address, avoiding `.1` (the `kubernetes` service's).
    pub fn allocate_next(&self) -> Result<IpAddr, AllocationError> {
        let (lo, hi) = self.bounds();
        let mut used = self.used.lock().map_err(|_| AllocationError::Full)?;
        let size = hi.saturating_sub(lo) + 1;
        let start = lo + (rand::random::<u64>() as u128 % size.max(1));
        let candidates = (start..=hi).chain(lo..start);
        for n in candidates {
            if n == lo && size > 1 {
                continue;
            }
            let ip = self.addr(n);
            if used.insert(ip) {
                return Ok(ip);
            }
        }
        Err(AllocationError::Full)
    }

    pub fn release(&self, ip: IpAddr) {
        if let Ok(mut used) = self.used.lock() {
            used.remove(&ip);
        }
    }

    pub fn is_allocated(&self, ip: IpAddr) -> bool {
        self.used.lock().map(|u| u.contains(&ip)).unwrap_or(false)
    }
}

/// Node ports from a range.
pub struct PortAllocator {
    range: RangeInclusive<u16>,
    used: Mutex<BTreeSet<u16>>,
}

impl PortAllocator {
    pub fn new(range: RangeInclusive<u16>) -> Self {
        Self {
            range,
            used: Mutex::new(BTreeSet::new()),
        }
    }

    fn range_text(&self) -> String {
        format!("{}-{}", self.range.start(), self.range.end())
    }

    pub fn allocate(&self, port: u16) -> Result<(), AllocationError> {
        if !self.range.contains(&port) {
            return Err(AllocationError::PortOutOfRange(self.range_text()));
        }
        let mut used = self.used.lock().map_err(|_| AllocationError::Full)?;
        if !used.insert(port) {
            return Err(AllocationError::PortAllocated);
        }
        Ok(())
    }

    pub fn allocate_next(&self) -> Result<u16, AllocationError> {
        let (lo, hi) = (*self.range.start(), *self.range.end());
        let size = (hi - lo) as u32 + 1;
        let start = lo + (rand::random::<u32>() % size) as u16;
        let mut used = self.used.lock().map_err(|_| AllocationError::Full)?;
        for p in (start..=hi).chain(lo..start) {
            if used.insert(p) {
                return Ok(p);
            }
        }
        Err(AllocationError::Full)
    }

    pub fn release(&self, port: u16) {
        if let Ok(mut used) = self.used.lock() {
            used.remove(&port);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ips_come_from_the_range_and_are_unique() {
        let a = IpAllocator::new("10.0.0.0/29".parse().unwrap());
        a.allocate(a.nth(1)).unwrap();
        assert_eq!(
            a.allocate("10.0.0.1".parse().unwrap()),
            Err(AllocationError::IpAllocated)
        );
        assert!(matches!(
            a.allocate("10.1.0.1".parse().unwrap()),
            Err(AllocationError::IpOutOfRange(_))
        ));
        let mut got = BTreeSet::new();
        for _ in 0..5 {
            got.insert(a.allocate_next().unwrap());
        }
        assert_eq!(got.len(), 5);
        assert_eq!(a.allocate_next(), Err(AllocationError::Full));
        a.release("10.0.0.3".parse().unwrap());
        assert_eq!(
            a.allocate_next().unwrap(),
            "10.0.0.3".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn ports() {
        let p = PortAllocator::new(30000..=30001);
        p.allocate(30000).unwrap();
        assert_eq!(p.allocate(30000), Err(AllocationError::PortAllocated));
        assert_eq!(p.allocate_next().unwrap(), 30001);
        assert_eq!(p.allocate_next(), Err(AllocationError::Full));
        assert!(matches!(
            p.allocate(80),
            Err(AllocationError::PortOutOfRange(_))
        ));
    }
}
