//! The engine's memory: how it grows, and room taken ahead of a restore.
//!
//! A wasm engine's memory grows by `memory.grow`, whose every call costs the
//! host about the same whatever it adds: 160–210 µs in Node 20, from 64 KiB
//! to 16 MiB (measured with a module that only grows). The allocator std
//! gives wasm32 (dlmalloc) grows by what it lacks, rounded to 64 KiB, so a
//! store that fills 32 MiB batch after batch grew a page or two at a time:
//! thousands of growths, about a twentieth of edge ingest. Here the same
//! allocator, from the `dlmalloc` crate, grows by whole `GROWTH_STEP`s: tens
//! of growths for a full store, and less than a step grown but unused.

/// The engine's memory in 64 KiB pages (wasm); natively 0.
pub(crate) fn memory_pages() -> usize {
    #[cfg(target_arch = "wasm32")]
    return core::arch::wasm32::memory_size::<0>();
    #[cfg(not(target_arch = "wasm32"))]
    0
}

/// Bytes taken at a time while the allocator serves them from memory it
/// holds free (`reserve_room`): a chunk of a column of 4-byte values, and the
/// most a piece of a name's text grows to.
const ROOM_PIECE: usize = 256 << 10;

/// Takes `bytes` from the allocator and gives them back, so that the
/// allocations that follow (a restored store: about its snapshot's size) are
/// carved from memory grown at most twice (by the piece that first needs new
/// memory, then by the rest). A wasm engine's memory otherwise
/// grows once per column, and each growth can cost the host a garbage
/// collection: in Node, restoring a full object's snapshot took 280–480 ms in
/// a fresh process, and 115–135 ms with this. Memory the allocator holds free
/// (a store freed before, as an evicted object's engine is) is taken first, a
/// piece at a time, and only the rest grown, at once: taking it all in one
/// piece grew the memory by the whole snapshot whenever no free stretch was
/// that long (`tests/node/snapshot-memory.test.mjs`). Past what memory
/// allows, nothing more.
pub(crate) fn reserve_room(bytes: usize) {
    let mut held = Vec::new();
    let mut left = bytes;
    while left > 0 {
        let pages = memory_pages();
        let mut piece = Vec::<u8>::new();
        if piece.try_reserve_exact(left.min(ROOM_PIECE)).is_err() {
            break;
        }
        left = left.saturating_sub(piece.capacity());
        held.push(piece);
        if memory_pages() > pages {
            let mut rest = Vec::<u8>::new();
            if rest.try_reserve_exact(left).is_ok() {
                held.push(rest);
            }
            break;
        }
    }
    // Not optimised away: an allocation nobody reads may be elided.
    drop(std::hint::black_box(held));
}

// One thread only (`Sync` below): a threaded build keeps std's allocator.
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
pub(crate) use growing::Growing;

#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
mod growing {
    use core::alloc::{GlobalAlloc, Layout};
    use core::cell::UnsafeCell;

    use dlmalloc::Dlmalloc;

    /// The least the memory grows by: 2 MiB, 32 pages. A full object's store
    /// then grows its memory about 50 times (8 ms); larger steps would save
    /// little more and leave more grown but unused under a host's memory
    /// limit.
    const GROWTH_STEP: usize = 2 << 20;

    /// dlmalloc (std's allocator on wasm32) growing by `GROWTH_STEP`: the
    /// module's global allocator (lib.rs).
    pub(crate) struct Growing(UnsafeCell<Dlmalloc>);

    impl Growing {
        pub(crate) const fn new() -> Growing {
            let mut dlmalloc = Dlmalloc::new();
            assert!(dlmalloc.set_granularity(GROWTH_STEP));
            Growing(UnsafeCell::new(dlmalloc))
        }

        /// SAFETY: the caller holds the only reference for as long as it
        /// uses it (`Sync` below says why that holds).
        #[allow(clippy::mut_from_ref)]
        unsafe fn dlmalloc(&self) -> &mut Dlmalloc {
            // SAFETY: see above.
            unsafe { &mut *self.0.get() }
        }
    }

    // SAFETY: the module is built for wasm32 without the atomics feature: one
    // thread, and no allocation runs inside another.
    unsafe impl Sync for Growing {}

    // SAFETY: each method hands its arguments to dlmalloc, whose contract is
    // GlobalAlloc's (as dlmalloc's own GlobalDlmalloc does). Not inlined, as
    // std's allocator is not: inlined into every allocation, dlmalloc's
    // paths made the module 110 KB larger.
    unsafe impl GlobalAlloc for Growing {
        #[inline(never)]
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            unsafe { self.dlmalloc().malloc(layout.size(), layout.align()) }
        }
        #[inline(never)]
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            unsafe { self.dlmalloc().calloc(layout.size(), layout.align()) }
        }
        #[inline(never)]
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            unsafe { self.dlmalloc().free(ptr, layout.size(), layout.align()) }
        }
        #[inline(never)]
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            unsafe {
                self.dlmalloc()
                    .realloc(ptr, layout.size(), layout.align(), new_size)
            }
        }
    }
}
