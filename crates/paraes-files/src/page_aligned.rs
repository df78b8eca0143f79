//! A global allocator ([`PageAlignedLarge`]) that starts every large block on a page boundary,
//! so that the kernel's copies between paraes's chunk buffers and the page cache (`read`,
//! `pread`, `write`, `pwrite`) run at full speed.
//!
//! Why: the kernel copies with `rep movsb`, and on AMD Zen CPUs that copy runs three to four
//! times slower when the destination lies 1 to 31 bytes past the source modulo 4096 (measured
//! on an EPYC with a 4 MiB `pread` from tmpfs: 0.13 s per GiB against 0.48-0.64 s). The system
//! allocator hands out a large block 16 bytes past a page boundary, so a read of a file from
//! offset 0 (every `enc` of a file) hit the slow case on every window. A block at a page
//! boundary meets the slow case only where the file offset's place in its page is 4065-4095
//! (reads) or 1-31 (writes). Raw streams and format v3 never put a window there (their windows
//! are whole pages long, from offset 0 or 4096 + 56); format v2's chunks are 16 bytes longer than
//! a power of two, so a few of a v2 file's windows still take the slow copy (docs/RESULTS.md).
//! Small blocks are left as the system allocator places them.

use std::alloc::{GlobalAlloc, Layout, System};

/// Blocks of at least this many bytes start on a page boundary.
pub const LARGE: usize = 64 << 10;

/// The alignment of a large block: the page size of every CPU paraes runs on (a larger page
/// is a multiple of it).
pub const PAGE: usize = 4096;

/// The system allocator, with blocks of [`LARGE`] bytes or more aligned to [`PAGE`]. Install it
/// with `#[global_allocator] static ALLOCATOR: PageAlignedLarge = PageAlignedLarge;` in a
/// binary or an extension module.
#[derive(Clone, Copy, Debug, Default)]
pub struct PageAlignedLarge;

/// The layout a block of `layout` is allocated with: the same for small blocks, page-aligned
/// for large ones. A function of the layout alone, so a block is freed with the layout it was
/// allocated with.
pub fn placed(layout: Layout) -> Layout {
    if layout.size() >= LARGE && layout.align() < PAGE {
        Layout::from_size_align(layout.size(), PAGE).unwrap_or(layout)
    } else {
        layout
    }
}

// SAFETY: every method hands the system allocator a valid layout (`placed` only raises the
// alignment to a power of two and keeps the size), frees a block with the same layout it was
// allocated with (`placed` of the caller's layout, which the caller keeps), and a reallocation
// that changes the alignment moves the block by allocating, copying and freeing through the
// same two rules.
unsafe impl GlobalAlloc for PageAlignedLarge {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: `placed` keeps the caller's non-zero size and gives a valid alignment.
        unsafe { System.alloc(placed(layout)) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(placed(layout)) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator with `layout`, hence by the system
        // allocator with `placed(layout)`.
        unsafe { System.dealloc(ptr, placed(layout)) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = placed(layout);
        // SAFETY: the caller guarantees that `new_size` rounded up to `layout.align()` does not
        // overflow `isize`, which is what this layout needs.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let new = placed(new_layout);
        if old.align() == new.align() {
            // SAFETY: `ptr` was allocated by the system allocator with `old`, and the new size
            // keeps the same alignment rule.
            return unsafe { System.realloc(ptr, old, new_size) };
        }
        // SAFETY: `new_layout` is valid (above) and non-zero (the caller's guarantee).
        let moved = unsafe { self.alloc(new_layout) };
        if !moved.is_null() {
            // SAFETY: both blocks are live, distinct, and at least this long.
            unsafe { std::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size)) };
            // SAFETY: `ptr` was allocated by this allocator with `layout`.
            unsafe { self.dealloc(ptr, layout) };
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_layouts_are_page_aligned_and_small_ones_unchanged() {
        let small = Layout::from_size_align(LARGE - 1, 1).unwrap();
        assert_eq!(placed(small), small);
        let large = Layout::from_size_align(LARGE, 1).unwrap();
        assert_eq!(placed(large).align(), PAGE);
        assert_eq!(placed(large).size(), LARGE);
        let already = Layout::from_size_align(LARGE, 2 * PAGE).unwrap();
        assert_eq!(placed(already), already);
    }

    #[test]
    fn blocks_keep_their_bytes_across_every_alignment_change() {
        let allocator = PageAlignedLarge;
        let start = Layout::from_size_align(1000, 1).unwrap();
        // SAFETY: every block is used within its size and freed once with its current layout.
        unsafe {
            let mut ptr = allocator.alloc(start);
            assert!(!ptr.is_null());
            for i in 0..1000 {
                *ptr.add(i) = i as u8;
            }
            let mut size = 1000;
            for new_size in [LARGE + 7, 3 * LARGE, 500, 2 * LARGE, 100] {
                let layout = Layout::from_size_align(size, 1).unwrap();
                ptr = allocator.realloc(ptr, layout, new_size);
                assert!(!ptr.is_null());
                if new_size >= LARGE {
                    assert_eq!(ptr as usize % PAGE, 0, "a block of {new_size} bytes");
                }
                let kept = size.min(new_size).min(100);
                for i in 0..kept {
                    assert_eq!(*ptr.add(i), i as u8, "byte {i} after a move to {new_size}");
                }
                size = new_size;
            }
            allocator.dealloc(ptr, Layout::from_size_align(size, 1).unwrap());
            let zeroed = Layout::from_size_align(2 * LARGE, 1).unwrap();
            let ptr = allocator.alloc_zeroed(zeroed);
            assert_eq!(ptr as usize % PAGE, 0);
            assert!((0..2 * LARGE).all(|i| *ptr.add(i) == 0));
            allocator.dealloc(ptr, zeroed);
        }
    }
}
