//! What a measurement ran on: CPU model, cores, the AES-relevant CPU features (as paraes-core
//! detects them), OS and kernel, memory and the load average, read from /proc on Linux.

use paraes_core::aes::{cpu_features, AesImpl};
use serde::{Deserialize, Serialize};

/// The machine facts of a `paraes bench` document (JSON `machine`, CSV `# key: value` lines).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// CPU model name (`model name` of /proc/cpuinfo), or `unknown`.
    pub cpu: String,
    /// Logical CPUs of the machine (`processor` entries of /proc/cpuinfo).
    pub logical_cpus: usize,
    /// Threads this process may run on at once (its CPU affinity / quota).
    pub available_threads: usize,
    /// The AES-relevant CPU features present (of aes, ssse3, pclmulqdq, avx2, vaes, vpclmulqdq,
    /// avx512f, avx512bw), as paraes detects them.
    pub cpu_flags: Vec<String>,
    /// Those features absent.
    pub cpu_flags_absent: Vec<String>,
    /// The CPU AES implementations this CPU can run, slowest first; the last is the default.
    pub aes_implementations: Vec<String>,
    /// Whether /proc/cpuinfo reports a hypervisor (a virtual machine).
    pub hypervisor: bool,
    /// `PRETTY_NAME` of /etc/os-release, or the OS family.
    pub os: String,
    /// Kernel release (/proc/sys/kernel/osrelease).
    pub kernel: String,
    /// CPU architecture (`x86_64`, `aarch64`, ...).
    pub arch: String,
    /// Total memory in bytes (`MemTotal` of /proc/meminfo), when known.
    pub memory_bytes: Option<u64>,
    /// The GPU measured, as its engine describes itself (none when no GPU row was measured).
    pub gpu: Option<String>,
    /// 1, 5 and 15-minute load averages (/proc/loadavg) when the run started.
    pub load_before: Option<[f64; 3]>,
    /// The same when the run ended.
    pub load_after: Option<[f64; 3]>,
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// The 1, 5 and 15-minute load averages now, when /proc/loadavg is readable.
pub fn load_average() -> Option<[f64; 3]> {
    let text = read("/proc/loadavg")?;
    let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some([fields.next()??, fields.next()??, fields.next()??])
}

impl Machine {
    /// The facts of this machine now (load_after unset; gpu unset).
    pub fn detect() -> Machine {
        let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| {
            cpuinfo.lines().find_map(|line| {
                let (key, value) = line.split_once(':')?;
                (key.trim() == name).then(|| value.trim().to_string())
            })
        };
        let logical = cpuinfo
            .lines()
            .filter(|l| l.split(':').next().map(str::trim) == Some("processor"))
            .count();
        let available = std::thread::available_parallelism().map_or(1, |n| n.get());
        let hypervisor =
            field("flags").is_some_and(|flags| flags.split_whitespace().any(|f| f == "hypervisor"));
        let os = read("/etc/os-release")
            .and_then(|text| {
                text.lines().find_map(|line| {
                    let value = line.strip_prefix("PRETTY_NAME=")?;
                    Some(value.trim_matches('"').to_string())
                })
            })
            .unwrap_or_else(|| std::env::consts::OS.to_string());
        let memory_bytes = read("/proc/meminfo").and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        });
        let features = cpu_features();
        let names = |present: bool| {
            features
                .iter()
                .filter(|(_, on)| *on == present)
                .map(|(name, _)| name.to_string())
                .collect()
        };
        Machine {
            cpu: field("model name").unwrap_or_else(|| "unknown".into()),
            logical_cpus: if logical > 0 { logical } else { available },
            available_threads: available,
            cpu_flags: names(true),
            cpu_flags_absent: names(false),
            aes_implementations: AesImpl::available()
                .iter()
                .map(|imp| imp.name().to_string())
                .collect(),
            hypervisor,
            os,
            kernel: read("/proc/sys/kernel/osrelease")
                .map(|k| k.trim().to_string())
                .unwrap_or_else(|| "unknown".into()),
            arch: std::env::consts::ARCH.to_string(),
            memory_bytes,
            gpu: None,
            load_before: load_average(),
            load_after: None,
        }
    }
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc_date(secs)
}

/// `secs` since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian calendar).
pub fn utc_date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Days to civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(utc_date(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_date(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_date(1_700_000_000), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn detects_something_sane() {
        let m = Machine::detect();
        assert!(m.logical_cpus >= 1 && m.available_threads >= 1);
        assert_eq!(
            m.aes_implementations.first().map(String::as_str),
            Some("portable")
        );
        assert_eq!(
            m.aes_implementations.last().map(String::as_str),
            Some(AesImpl::fastest().name())
        );
        assert_eq!(
            m.cpu_flags.len() + m.cpu_flags_absent.len(),
            cpu_features().len()
        );
    }
}
