//! The allocation bitmap of a range, as upstream's `allocator/bitmap.go` keeps it: bit `i` set
//! means offset `i` is taken, and the snapshot is the bytes of that number as Go's
//! `big.Int.Bytes()` writes them (big-endian, no leading zero bytes), so a `RangeAllocation`
//! written by kapi reads the same as one written by kube-apiserver.

/// Which offsets of a range of `max` items are taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bitmap {
    max: usize,
    /// Little-endian bits: bit `i` is `bytes[i / 8] >> (i % 8)`.
    bytes: Vec<u8>,
}

impl Bitmap {
    pub fn new(max: usize) -> Self {
        Self {
            max,
            bytes: vec![0; max.div_ceil(8)],
        }
    }

    /// Reads a snapshot's `data`; bits past `max` (a wider range's) are dropped.
    pub fn restore(max: usize, data: &[u8]) -> Self {
        let mut b = Self::new(max);
        for (i, byte) in data.iter().rev().enumerate() {
            if let Some(slot) = b.bytes.get_mut(i) {
                *slot = *byte;
            }
        }
        if !max.is_multiple_of(8) {
            if let Some(last) = b.bytes.last_mut() {
                *last &= (1u8 << (max % 8)).wrapping_sub(1);
            }
        }
        b
    }

    /// The snapshot's `data`.
    pub fn snapshot(&self) -> Vec<u8> {
        let mut out: Vec<u8> = self.bytes.iter().rev().copied().collect();
        let leading = out.iter().take_while(|b| **b == 0).count();
        out.drain(..leading);
        out
    }

    pub fn max(&self) -> usize {
        self.max
    }

    pub fn has(&self, i: usize) -> bool {
        i < self.max
            && self
                .bytes
                .get(i / 8)
                .is_some_and(|b| b & (1 << (i % 8)) != 0)
    }

    /// Sets bit `i`; false if it was already set or is out of the range.
    pub fn set(&mut self, i: usize) -> bool {
        if i >= self.max || self.has(i) {
            return false;
        }
        match self.bytes.get_mut(i / 8) {
            Some(b) => {
                *b |= 1 << (i % 8);
                true
            }
            None => false,
        }
    }

    pub fn clear(&mut self, i: usize) {
        if i < self.max {
            if let Some(b) = self.bytes.get_mut(i / 8) {
                *b &= !(1 << (i % 8));
            }
        }
    }

    pub fn count(&self) -> usize {
        self.bytes.iter().map(|b| b.count_ones() as usize).sum()
    }

    /// The taken offsets, lowest first.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.max).filter(|i| self.has(*i))
    }

    /// Upstream's `randomScanStrategyWithOffset`: a random free offset of the upper band
    /// `[offset, max)` (the dynamic band), else of the lower band `[0, offset)` that static
    /// requests are steered to; `skip` is never chosen. `None` when nothing is free.
    pub fn free_random(&self, offset: usize, skip: Option<usize>) -> Option<usize> {
        let offset = offset.min(self.max);
        let free = |i: &usize| !self.has(*i) && Some(*i) != skip;
        let band = |lo: usize, hi: usize| {
            if lo >= hi {
                return None;
            }
            let start = rand::random_range(lo..hi);
            (start..hi).chain(lo..start).find(free)
        };
        band(offset, self.max).or_else(|| band(0, offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_is_big_endian_without_leading_zeros() {
        let mut b = Bitmap::new(20);
        assert_eq!(b.snapshot(), Vec::<u8>::new());
        b.set(0);
        assert_eq!(b.snapshot(), vec![0x01]);
        b.set(9);
        // Go: new(big.Int).SetBit(SetBit(0, 0, 1), 9, 1).Bytes() == [0x02, 0x01]
        assert_eq!(b.snapshot(), vec![0x02, 0x01]);
        assert_eq!(Bitmap::restore(20, &b.snapshot()), b);
        // a wider range's bits are dropped
        let r = Bitmap::restore(4, &[0xff, 0xff]);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    }

    #[test]
    fn random_scan_prefers_the_upper_band() {
        let mut b = Bitmap::new(8);
        for _ in 0..4 {
            let i = b.free_random(4, None).unwrap();
            assert!(i >= 4, "{i}");
            b.set(i);
        }
        let mut low = Vec::new();
        while let Some(i) = b.free_random(4, Some(0)) {
            b.set(i);
            low.push(i);
        }
        low.sort();
        assert_eq!(low, vec![1, 2, 3]);
        assert_eq!(b.count(), 7);
        assert!(!b.set(1));
        b.clear(1);
        assert_eq!(b.free_random(4, Some(0)), Some(1));
    }
}
