//! Giving freed memory back to the OS at once, around and during a burst of allocation,
//! rather than over jemalloc's decay time (pages freed stay resident for about ten seconds).
//! These calls reach jemalloc whichever allocator the process uses: in a process whose global
//! allocator is another one they only start jemalloc's (empty) heap.

use tikv_jemalloc_ctl::{arenas, Access, AsName, Mib};

/// An arena's decay times, dirty and muzzy (`0` in the key is the arena).
const DECAY_KEYS: [&[u8]; 2] = [b"arena.0.dirty_decay_ms\0", b"arena.0.muzzy_decay_ms\0"];

fn decay_mib(key: &[u8], arena: usize) -> Option<Mib<[usize; 3]>> {
    let mut mib = key.name().mib::<[usize; 3]>().ok()?;
    *mib.as_mut().get_mut(1)? = arena;
    Some(mib)
}

/// Returns every free page of every arena to the OS, and this thread's cached allocations to
/// their arenas first. Setting an arena's decay time to 0 purges it; the time is then put
/// back.
pub(crate) fn release_free_pages() {
    // Turning the thread's cache off flushes it.
    let tcache = b"thread.tcache.enabled\0".name();
    if tcache.write(false).is_ok() {
        let _ = tcache.write(true);
    }
    let Ok(count) = arenas::narenas::read() else {
        return;
    };
    for arena in (0..count).filter_map(|a| usize::try_from(a).ok()) {
        for key in DECAY_KEYS {
            // Arenas not yet in use have no decay time to read.
            let Some(mib) = decay_mib(key, arena) else {
                continue;
            };
            let Ok(decay_ms) = Access::<isize>::read(&mib) else {
                continue;
            };
            if decay_ms > 0 && mib.write(0isize).is_ok() {
                let _ = mib.write(decay_ms);
            }
        }
    }
}

/// Runs `work` with the calling thread's arena giving pages back to the OS as soon as they
/// are free (decay time 0), then puts the decay times back: what `work` frees is not reused
/// by the larger buffers it goes on to allocate, and would otherwise stay resident on top of
/// them.
pub(crate) fn purging_while<T>(work: impl FnOnce() -> T) -> T {
    let arena = Access::<u32>::read(b"thread.arena\0".name())
        .ok()
        .and_then(|a| usize::try_from(a).ok());
    let saved: Vec<(Mib<[usize; 3]>, isize)> = arena
        .into_iter()
        .flat_map(|arena| {
            DECAY_KEYS
                .into_iter()
                .filter_map(move |key| decay_mib(key, arena))
        })
        .filter_map(|mib| {
            let decay_ms = Access::<isize>::read(&mib).ok()?;
            (decay_ms != 0 && mib.write(0isize).is_ok()).then_some((mib, decay_ms))
        })
        .collect();
    let out = work();
    for (mib, decay_ms) in saved {
        let _ = mib.write(decay_ms);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purging_puts_the_decay_times_back() {
        let key = b"arena.0.dirty_decay_ms\0".name();
        let before: isize = key.read().expect("arena 0's decay time");
        release_free_pages();
        let after: isize = key.read().expect("arena 0's decay time");
        assert_eq!(before, after);
        let tcache: bool = b"thread.tcache.enabled\0".name().read().expect("tcache");
        assert!(tcache);
    }

    #[test]
    fn purging_while_puts_the_decay_times_back() {
        let arena: u32 = b"thread.arena\0"
            .name()
            .read()
            .expect("this thread's arena");
        let key = format!("arena.{arena}.dirty_decay_ms\0");
        let before: isize = key.as_bytes().name().read().expect("its decay time");
        let during = purging_while(|| {
            let during: isize = key.as_bytes().name().read().expect("its decay time");
            during
        });
        assert_eq!(during, 0);
        let after: isize = key.as_bytes().name().read().expect("its decay time");
        assert_eq!(before, after);
    }
}
