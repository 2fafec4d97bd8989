//! A persistent pool for `VecEmulator` (new code, no PyBoy counterpart): per step, the caller
//! publishes one job (a closure of the worker index), runs index 0 itself while `n` workers run
//! 1..=n, and returns once all are done.
//!
//! Why not rayon: a step is a few tens of microseconds, and on small VMs a futex wake-up (of a
//! worker that went to sleep between steps, or of the caller blocked on the scope's latch) costs
//! as much. Here both sides spin first: the caller until the workers finish, a worker for a
//! while after each job before it parks on a condition variable (so an idle env costs no CPU).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long an idle worker spins (then yields) before it parks.
const SPIN_BEFORE_PARKING: Duration = Duration::from_millis(2);

type Job<'a> = dyn Fn(usize) + Sync + 'a;

/// The published job with its lifetime erased. Only dereferenced by workers between the epoch
/// that published it and their decrement of `remaining`, while `run` (which holds the borrow)
/// waits for `remaining` to reach zero.
#[derive(Clone, Copy)]
struct JobPtr(*const Job<'static>);
// SAFETY: the pointee is `Sync` and outlives every use (see `JobPtr`).
unsafe impl Send for JobPtr {}

struct Shared {
    epoch: AtomicU64,
    job: Mutex<Option<JobPtr>>,
    remaining: AtomicUsize,
    stop: AtomicBool,
    sleepers: AtomicUsize,
    sleep: Mutex<()>,
    wake: Condvar,
}

pub struct SpinPool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
}

impl SpinPool {
    /// `n` worker threads named `{name}-{i}`.
    pub fn new(n: usize, name: &str) -> std::io::Result<SpinPool> {
        let shared = Arc::new(Shared {
            epoch: AtomicU64::new(0),
            job: Mutex::new(None),
            remaining: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
        });
        let mut workers = Vec::with_capacity(n);
        for i in 0..n {
            let s = Arc::clone(&shared);
            let handle = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || worker(&s, i + 1));
            match handle {
                Ok(h) => workers.push(h),
                Err(e) => {
                    // stop the ones already started
                    drop(SpinPool { shared, workers });
                    return Err(e);
                }
            }
        }
        Ok(SpinPool { shared, workers })
    }

    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// Runs `job(0)` here and `job(1..=workers)` on the workers; returns when all have returned.
    /// A panic in a worker's call is caught there (the job should report errors itself).
    pub fn run(&self, job: &(dyn Fn(usize) + Sync)) {
        let s = &*self.shared;
        // SAFETY: only the lifetime is erased; `run` does not return before every worker is
        // done with this job (`remaining` reaches 0 below), and then unpublishes it.
        let ptr = unsafe { std::mem::transmute::<*const Job<'_>, *const Job<'static>>(job) };
        *s.job.lock().unwrap_or_else(|e| e.into_inner()) = Some(JobPtr(ptr));
        s.remaining.store(self.workers.len(), SeqCst);
        s.epoch.fetch_add(1, SeqCst);
        if s.sleepers.load(SeqCst) > 0 {
            let _g = s.sleep.lock().unwrap_or_else(|e| e.into_inner());
            s.wake.notify_all();
        }
        let mine = catch_unwind(AssertUnwindSafe(|| job(0)));
        let mut spins = 0u32;
        while s.remaining.load(SeqCst) != 0 {
            spins += 1;
            if spins < 4096 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        *s.job.lock().unwrap_or_else(|e| e.into_inner()) = None;
        if let Err(p) = mine {
            std::panic::resume_unwind(p);
        }
    }
}

fn worker(s: &Shared, index: usize) {
    let mut seen = 0u64;
    loop {
        // wait for the next epoch: spin, then yield, then park
        let idle_since = Instant::now();
        let mut spins = 0u32;
        loop {
            if s.stop.load(SeqCst) {
                return;
            }
            let e = s.epoch.load(SeqCst);
            if e != seen {
                seen = e;
                break;
            }
            spins += 1;
            if spins < 1024 {
                std::hint::spin_loop();
            } else if idle_since.elapsed() < SPIN_BEFORE_PARKING {
                std::thread::yield_now();
            } else {
                let mut g = s.sleep.lock().unwrap_or_else(|e| e.into_inner());
                s.sleepers.fetch_add(1, SeqCst);
                while s.epoch.load(SeqCst) == seen && !s.stop.load(SeqCst) {
                    g = s.wake.wait(g).unwrap_or_else(|e| e.into_inner());
                }
                s.sleepers.fetch_sub(1, SeqCst);
            }
        }
        let job = *s.job.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(JobPtr(p)) = job {
            // SAFETY: see `JobPtr`: `run` is waiting for this worker's decrement.
            let _ = catch_unwind(AssertUnwindSafe(|| unsafe { (*p)(index) }));
        }
        s.remaining.fetch_sub(1, SeqCst);
    }
}

impl Drop for SpinPool {
    fn drop(&mut self) {
        self.shared.stop.store(true, SeqCst);
        {
            let _g = self.shared.sleep.lock().unwrap_or_else(|e| e.into_inner());
            self.shared.wake.notify_all();
        }
        for h in self.workers.drain(..) {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SpinPool;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    #[test]
    fn every_index_runs_once_per_step_and_borrows_end_with_run() {
        let pool = SpinPool::new(3, "t").unwrap();
        for step in 0..2000usize {
            let hits: Vec<AtomicUsize> = (0..4).map(|_| AtomicUsize::new(0)).collect();
            let data = Mutex::new(vec![0usize; 4]);
            pool.run(&|i| {
                hits[i].fetch_add(1, Ordering::SeqCst);
                data.lock().unwrap()[i] = step + i;
            });
            assert!(hits.iter().all(|h| h.load(Ordering::SeqCst) == 1));
            assert_eq!(
                *data.lock().unwrap(),
                vec![step, step + 1, step + 2, step + 3]
            );
            if step % 500 == 0 {
                // long enough for the workers to park: they must wake for the next step
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
    }

    #[test]
    fn a_worker_panic_does_not_hang_the_caller() {
        let pool = SpinPool::new(2, "t").unwrap();
        let done = AtomicUsize::new(0);
        pool.run(&|i| {
            if i == 2 {
                panic!("planted");
            }
            done.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(done.load(Ordering::SeqCst), 2);
        pool.run(&|_| {
            done.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(done.load(Ordering::SeqCst), 5);
    }
}
