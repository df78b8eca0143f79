//! The CPUs this process may use ([`usable`]) and what set that number: its affinity mask
//! (`taskset`, `srun -c N`, `--cpu-bind`, an MPI launcher's binding), a cgroup CPU quota,
//! Slurm's `SLURM_CPUS_PER_TASK` where nothing else limits the process, or else the whole
//! machine. The engines' default thread counts come from here, and so does the share of a
//! node's ranks ([`UsableCpus::per_rank`]): ranks that were each given their own CPUs keep
//! them, and only ranks that all see the whole machine divide it.

use std::fmt;

/// What set the number of CPUs a process may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuSource {
    /// Its affinity mask holds fewer CPUs than the machine has online.
    AffinityMask,
    /// A cgroup CPU quota (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us`) allows fewer CPUs
    /// than its affinity mask holds.
    CpuQuota,
    /// Slurm's `SLURM_CPUS_PER_TASK`, where neither of the above limits the process (a job
    /// step without CPU binding).
    SlurmCpusPerTask,
    /// Nothing limits it: every CPU online.
    WholeMachine,
}

impl fmt::Display for CpuSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CpuSource::AffinityMask => "the affinity mask",
            CpuSource::CpuQuota => "the cgroup CPU quota",
            CpuSource::SlurmCpusPerTask => "SLURM_CPUS_PER_TASK",
            CpuSource::WholeMachine => "the CPUs online (nothing limits this process)",
        })
    }
}

/// How many CPUs a process may use, and what set it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UsableCpus {
    /// The CPUs (at least one).
    pub count: usize,
    /// What set the count.
    pub source: CpuSource,
}

impl UsableCpus {
    /// The threads of one of `ranks_here` ranks on this node: all of this process's CPUs
    /// where something gave it its own (a mask, a quota, Slurm), and its share of the machine
    /// (one at least) where every rank sees all of it, so ranks never oversubscribe a node.
    pub fn per_rank(&self, ranks_here: usize) -> usize {
        match self.source {
            CpuSource::WholeMachine => (self.count / ranks_here.max(1)).max(1),
            _ => self.count,
        }
    }
}

/// The CPUs this process may use now.
pub fn usable() -> UsableCpus {
    let allowed = std::thread::available_parallelism().map_or(1, usize::from);
    let text = |path| std::fs::read_to_string(path).ok();
    let mask = text("/proc/self/status").and_then(|status| {
        status
            .lines()
            .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
            .and_then(count_cpu_list)
    });
    let online = text("/sys/devices/system/cpu/online").and_then(|list| count_cpu_list(&list));
    let slurm = std::env::var("SLURM_CPUS_PER_TASK").ok();
    decide(allowed, mask, online, slurm.as_deref())
}

/// [`usable`] from what it read: `allowed`, the standard library's count (the affinity mask and
/// the cgroup quota, the smaller); `mask`, the CPUs of the affinity mask; `online`, the
/// machine's CPUs online; `slurm`, `SLURM_CPUS_PER_TASK`'s value. A count that could not be
/// read limits nothing.
pub fn decide(
    allowed: usize,
    mask: Option<usize>,
    online: Option<usize>,
    slurm: Option<&str>,
) -> UsableCpus {
    let allowed = allowed.max(1);
    let mask = mask.unwrap_or(allowed).max(allowed);
    let online = online.unwrap_or(mask).max(mask);
    let (count, source) = if allowed < mask {
        (allowed, CpuSource::CpuQuota)
    } else if mask < online {
        (mask, CpuSource::AffinityMask)
    } else {
        match slurm.and_then(|n| n.trim().parse::<usize>().ok()) {
            Some(n) if n >= 1 && n < allowed => (n, CpuSource::SlurmCpusPerTask),
            _ => (allowed, CpuSource::WholeMachine),
        }
    };
    UsableCpus { count, source }
}

/// The CPUs in a kernel CPU list (`0-3,8,10-11`); `None` for a list that does not parse.
pub fn count_cpu_list(list: &str) -> Option<usize> {
    let mut count = 0usize;
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        count += match part.split_once('-') {
            Some((first, last)) => {
                let (first, last) = (first.parse::<usize>().ok()?, last.parse::<usize>().ok()?);
                last.checked_sub(first)? + 1
            }
            None => {
                part.parse::<usize>().ok()?;
                1
            }
        };
    }
    (count > 0).then_some(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_are_counted() {
        assert_eq!(count_cpu_list("0-3,8,10-11\n"), Some(7));
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("\t0-1"), Some(2));
        assert_eq!(count_cpu_list(""), None);
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list("a-b"), None);
    }

    #[test]
    fn the_tightest_limit_wins_and_is_named() {
        let cpus = |count, source| UsableCpus { count, source };
        // taskset -c 0 on a 16-CPU machine.
        assert_eq!(
            decide(1, Some(1), Some(16), None),
            cpus(1, CpuSource::AffinityMask)
        );
        // A quota of 2 CPUs inside a mask of 8.
        assert_eq!(
            decide(2, Some(8), Some(16), Some("4")),
            cpus(2, CpuSource::CpuQuota)
        );
        // srun -c 4 without binding: the whole machine visible, Slurm says 4.
        assert_eq!(
            decide(16, Some(16), Some(16), Some("4")),
            cpus(4, CpuSource::SlurmCpusPerTask)
        );
        // srun -c 4 with binding: the mask says it, Slurm's value is not needed.
        assert_eq!(
            decide(4, Some(4), Some(16), Some("4")),
            cpus(4, CpuSource::AffinityMask)
        );
        // A Slurm value that is not a count, or larger than what is there, limits nothing.
        for slurm in [Some("x"), Some("0"), Some("32"), None] {
            assert_eq!(
                decide(16, Some(16), Some(16), slurm),
                cpus(16, CpuSource::WholeMachine)
            );
        }
        // Nothing could be read but the standard library's count.
        assert_eq!(
            decide(3, None, None, None),
            cpus(3, CpuSource::WholeMachine)
        );
    }

    #[test]
    fn only_ranks_that_share_the_whole_machine_divide_it() {
        let whole = decide(16, Some(16), Some(16), None);
        assert_eq!(whole.per_rank(2), 8);
        assert_eq!(whole.per_rank(32), 1);
        // srun -c 4 gave each rank a mask of 4: each keeps 4 (it was divided again: 2).
        let bound = decide(4, Some(4), Some(16), None);
        assert_eq!(bound.per_rank(2), 4);
        let slurm = decide(16, Some(16), Some(16), Some("4"));
        assert_eq!(slurm.per_rank(2), 4);
    }
}
