//! Work that only one thread may do at a time, handed on instead of waited for ([`Combined`]):
//! the workers' writes into one output file. Every Linux file system of note (tmpfs, ext4, XFS)
//! holds a file's inode lock for each whole buffered write, so writes into one file run one at
//! a time whatever the number of writers, and a writer that finds the lock held spins on its
//! core (measured in docs/RESULTS.md, issue 40) or, behind a mutex, sleeps: either way its core
//! does no AES meanwhile. Here a worker whose window is ready leaves it in a queue; whichever
//! worker is writing already writes it too, and the others go back to sealing.

use std::sync::{Mutex, TryLockError};

/// Items that one thread at a time takes care of, whichever thread that is.
pub(super) struct Combined<T> {
    waiting: Mutex<Vec<T>>,
    /// Held by the thread that takes care of the waiting items now.
    busy: Mutex<()>,
}

impl<T> Combined<T> {
    pub(super) fn new() -> Self {
        Combined {
            waiting: Mutex::new(Vec::new()),
            busy: Mutex::new(()),
        }
    }

    fn take_waiting(&self) -> Vec<T> {
        std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn none_waiting(&self) -> bool {
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    /// Leaves `item`, then, unless another thread is taking care of the items now, takes care
    /// of every item waiting with `each` (its own and others'), until none waits. Returns at
    /// once when another thread is at it: that thread looks again for waiting items after it
    /// lets go, so every item left is taken care of exactly once, and when every thread that
    /// left one has returned, none waits. A panic in `each` is raised again only once every
    /// other item this thread took on has been taken care of: the threads that left them went
    /// back to their work trusting it with them (their buffers would never come back).
    pub(super) fn leave(&self, item: T, mut each: impl FnMut(T)) {
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(item);
        let mut panicked = None;
        self.take_care(&mut |item| {
            let once = std::panic::AssertUnwindSafe(|| each(item));
            if let Err(panic) = std::panic::catch_unwind(once) {
                panicked.get_or_insert(panic);
            }
        });
        if let Some(panic) = panicked {
            std::panic::resume_unwind(panic);
        }
    }

    /// [`Combined::leave`]'s work once its item waits, with an `each` that does not panic.
    fn take_care(&self, each: &mut dyn FnMut(T)) {
        loop {
            let busy = match self.busy.try_lock() {
                Ok(busy) => busy,
                // Nothing panics while holding it (`each` panics are caught); held anyway.
                Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                Err(TryLockError::WouldBlock) => return,
            };
            loop {
                let items = self.take_waiting();
                if items.is_empty() {
                    break;
                }
                items.into_iter().for_each(&mut *each);
            }
            drop(busy);
            // An item left between the last look and letting go found this thread busy and
            // went: look again.
            if self.none_waiting() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// Items left by many threads at once are each taken care of exactly once, one at a time,
    /// and none waits when every thread has returned.
    #[test]
    fn every_item_once_one_at_a_time() {
        const THREADS: usize = 4;
        const ITEMS: usize = 5000;
        let combined = Combined::new();
        let seen: Vec<AtomicUsize> = (0..THREADS * ITEMS).map(|_| AtomicUsize::new(0)).collect();
        let inside = AtomicBool::new(false);
        std::thread::scope(|scope| {
            for thread in 0..THREADS {
                let (combined, seen, inside) = (&combined, &seen, &inside);
                scope.spawn(move || {
                    for i in 0..ITEMS {
                        combined.leave(thread * ITEMS + i, |item| {
                            assert!(!inside.swap(true, Ordering::SeqCst), "two at once");
                            seen[item].fetch_add(1, Ordering::Relaxed);
                            std::hint::spin_loop();
                            inside.store(false, Ordering::SeqCst);
                        });
                    }
                });
            }
        });
        assert!(seen.iter().all(|n| n.load(Ordering::Relaxed) == 1));
        assert!(combined.none_waiting());
    }

    /// A first thread leaves item 1 and, taking care of it, waits while this thread leaves
    /// `others` (each `leave` must return at once, its item untouched: the first thread is at
    /// work), then goes on, panicking if `panic`. Returns how the first thread's `leave` ended
    /// and the items taken care of, in order.
    fn others_left_while_busy(panic: bool, others: &[u32]) -> (std::thread::Result<()>, Vec<u32>) {
        let combined = Combined::new();
        let done = Mutex::new(Vec::new());
        let (entered_tx, entered_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let ended = std::thread::scope(|scope| {
            let (combined, done) = (&combined, &done);
            let first = scope.spawn(move || {
                combined.leave(1, |item| {
                    if item == 1 {
                        entered_tx.send(()).unwrap();
                        go_rx.recv().unwrap();
                        if panic {
                            panic!("item 1");
                        }
                    }
                    done.lock().unwrap().push(item);
                })
            });
            entered_rx.recv().unwrap();
            for &item in others {
                // Taken care of here, it would show as 100 more.
                combined.leave(item, |item| done.lock().unwrap().push(item + 100));
            }
            assert!(
                done.lock().unwrap().is_empty(),
                "an item was taken care of twice"
            );
            go_tx.send(()).unwrap();
            first.join()
        });
        assert!(combined.none_waiting());
        (ended, done.into_inner().unwrap())
    }

    /// A thread that finds another at work leaves its item to it and returns without waiting.
    #[test]
    fn a_busy_thread_takes_the_others_items() {
        let (ended, done) = others_left_while_busy(false, &[2]);
        assert!(ended.is_ok());
        assert_eq!(done, vec![1, 2]);
    }

    /// A panic in `each` comes back to the thread whose `each` panicked, after it has taken
    /// care of every other item it took on; the items still go round afterwards.
    #[test]
    fn a_panic_comes_back_after_the_others_items() {
        let (ended, done) = others_left_while_busy(true, &[2, 3]);
        let panic = ended.expect_err("the panic came back");
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"item 1"));
        assert_eq!(done, vec![2, 3]);
        let combined = Combined::new();
        let taken = Mutex::new(Vec::new());
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            combined.leave(5, |_| panic!("item 5"))
        }));
        combined.leave(4, |item| taken.lock().unwrap().push(item));
        assert_eq!(
            *taken.lock().unwrap(),
            vec![4],
            "the queue went on after a panic"
        );
    }
}
