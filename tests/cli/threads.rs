//! Threads follow the CPUs a process was given: `taskset`, a cgroup CPU quota and Slurm's
//! `SLURM_CPUS_PER_TASK` each set the CPU engine's default thread count, and `enc -v`,
//! `--stats json` and `bench` say which of them set it (or `--threads`).

use crate::common::{assert_success, running_as_root, skip, stderr, Scratch};

/// The CPUs this test process may use.
fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Runs `prefix $PARAES enc -v --stats json ...` on a small file; returns the verbose
/// summary's stderr.
fn enc_verbose(s: &Scratch, prefix: &str, extra: &str) -> String {
    let script = format!("{prefix} $PARAES enc -v --stats json -k key {extra} in -o out -f");
    let out = s.bash(&script);
    assert_success(&out, &script);
    stderr(&out)
}

fn scratch() -> Scratch {
    let s = Scratch::new();
    s.key_file("key", 256, 47, true);
    s.write("in", &vec![7u8; 100_000]);
    s
}

/// `taskset -c 0`: one thread, set by the affinity mask, in `enc -v`, `--stats json` and
/// `bench`; `--threads` says it was `--threads`.
#[test]
fn the_affinity_mask_sets_the_threads_and_is_named() {
    if cpus() < 2 {
        return skip(
            "the_affinity_mask_sets_the_threads_and_is_named",
            "this process may use one CPU only, so a mask of one changes nothing",
        );
    }
    let s = scratch();
    let text = enc_verbose(&s, "taskset -c 0", "");
    assert!(text.contains("1 thread)"), "taskset -c 0: {text}");
    assert!(
        text.contains("thread count set by the affinity mask"),
        "taskset -c 0: {text}"
    );
    assert!(
        text.contains(r#""threads_from":"the affinity mask""#),
        "taskset -c 0, --stats json: {text}"
    );
    let text = enc_verbose(&s, "taskset -c 0", "--threads 2");
    assert!(text.contains("2 threads)"), "--threads 2: {text}");
    assert!(text.contains("thread count set by --threads"), "{text}");
    let script = "taskset -c 0 $PARAES bench --quick -b cpu -m ctr --sizes 1MiB --baseline none";
    let out = s.bash(script);
    assert_success(&out, script);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("CPU thread count set by the affinity mask"),
        "{script}: {report}"
    );
}

/// `SLURM_CPUS_PER_TASK` sets the threads where nothing else limits the process (a job step
/// without CPU binding), and never raises them past the CPUs there are.
#[test]
fn slurm_cpus_per_task_sets_the_threads_of_an_unbound_process() {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|list| paraes_core::cpus::count_cpu_list(&list));
    if cpus() < 2 || online != Some(cpus()) {
        return skip(
            "slurm_cpus_per_task_sets_the_threads_of_an_unbound_process",
            "this process is already limited to some of the machine's CPUs",
        );
    }
    let s = scratch();
    let text = enc_verbose(&s, "SLURM_CPUS_PER_TASK=1", "");
    assert!(text.contains("1 thread)"), "SLURM_CPUS_PER_TASK=1: {text}");
    assert!(
        text.contains("thread count set by SLURM_CPUS_PER_TASK"),
        "{text}"
    );
    let text = enc_verbose(&s, "SLURM_CPUS_PER_TASK=100000", "");
    assert!(
        text.contains(&format!("{} threads)", cpus())),
        "SLURM_CPUS_PER_TASK=100000: {text}"
    );
    assert!(
        text.contains("thread count set by the CPUs online"),
        "{text}"
    );
}

/// A cgroup CPU quota of one CPU (cgroup v2 `cpu.max`, or v1 `cpu.cfs_quota_us`): one
/// thread, set by the quota.
#[test]
fn a_cgroup_cpu_quota_sets_the_threads() {
    let test = "a_cgroup_cpu_quota_sets_the_threads";
    if cpus() < 2 {
        return skip(test, "this process may use one CPU only");
    }
    if !running_as_root() {
        return skip(test, "making a cgroup needs root");
    }
    let name = format!("paraes-test-{}", std::process::id());
    let (group, quota, procs) =
        if std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
            let group = format!("/sys/fs/cgroup/{name}");
            (
                group.clone(),
                (format!("{group}/cpu.max"), "100000 100000"),
                format!("{group}/cgroup.procs"),
            )
        } else {
            let group = format!("/sys/fs/cgroup/cpu/{name}");
            (
                group.clone(),
                (format!("{group}/cpu.cfs_quota_us"), "100000"),
                format!("{group}/cgroup.procs"),
            )
        };
    if let Err(e) = std::fs::create_dir(&group) {
        return skip(test, &format!("cannot make the cgroup {group}: {e}"));
    }
    let written = std::fs::write(&quota.0, quota.1);
    let s = scratch();
    let script = format!("echo $$ > {procs} && $PARAES enc -v -k key in -o out -f");
    let ran = written.map(|()| s.bash(&script));
    // The shell and paraes have ended: the cgroup is empty, and goes.
    let removed = std::fs::remove_dir(&group);
    let out = match ran {
        Ok(out) => out,
        Err(e) => return skip(test, &format!("cannot set {}: {e}", quota.0)),
    };
    removed.unwrap_or_else(|e| panic!("removing the cgroup {group}: {e}"));
    assert_success(&out, &script);
    let text = stderr(&out);
    assert!(text.contains("1 thread)"), "a quota of one CPU: {text}");
    assert!(
        text.contains("thread count set by the cgroup CPU quota"),
        "{text}"
    );
}
