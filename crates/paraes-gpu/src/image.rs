//! Which kernel image the engine loads: the sm_80 or sm_90 cubin made ahead of time by the
//! pinned ptxas (kernels/build-ptx.sh), so Ampere and Hopper load machine code with no JIT,
//! or the PTX, which the driver JIT-compiles for any other GPU. Also what the load reported.

use std::str::FromStr;

/// A kernel image embedded in the binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelImage {
    /// `kernels/aes.sm_80.cubin`: SASS for compute capability 8.0, which every 8.x GPU runs
    /// (A100 8.0, A10/RTX 30 8.6, Orin 8.7, L4/L40/RTX 40 8.9: same major, minor >= 0).
    Sm80Cubin,
    /// `kernels/aes.sm_90.cubin`: SASS for compute capability 9.0 (H100, H200, GH200).
    Sm90Cubin,
    /// `kernels/aes.ptx` (compute_80), JIT-compiled by the driver at load (about 5 s cold;
    /// the driver caches the result in `~/.nv/ComputeCache`).
    Ptx,
}

impl KernelImage {
    /// The image for a GPU of compute capability `(major, minor)`: the cubin whose SASS it
    /// runs natively, else the PTX (10.x, 12.x, ...: JIT). Below 8.0 nothing fits (the
    /// engine refuses those GPUs before loading anything).
    pub fn for_capability(major: u32, _minor: u32) -> KernelImage {
        match major {
            8 => KernelImage::Sm80Cubin,
            9 => KernelImage::Sm90Cubin,
            _ => KernelImage::Ptx,
        }
    }

    /// The embedded bytes (the PTX without a terminating NUL: the loader adds one).
    pub fn bytes(self) -> &'static [u8] {
        match self {
            KernelImage::Sm80Cubin => crate::CUBIN_SM80,
            KernelImage::Sm90Cubin => crate::CUBIN_SM90,
            KernelImage::Ptx => crate::PTX.as_bytes(),
        }
    }

    /// `sm_80 cubin`, `sm_90 cubin` or `PTX (JIT)`.
    pub fn name(self) -> &'static str {
        match self {
            KernelImage::Sm80Cubin => "sm_80 cubin",
            KernelImage::Sm90Cubin => "sm_90 cubin",
            KernelImage::Ptx => "PTX (JIT)",
        }
    }
}

impl std::fmt::Display for KernelImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which image to load ([`crate::GpuOptions::image`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ImageChoice {
    /// The cubin for the GPU's compute capability, else the PTX; and the PTX if the driver
    /// refuses the cubin (the refusal is kept in the [`ModuleReport`]).
    #[default]
    Auto,
    /// Always the PTX: to measure the JIT, or to check the PTX path on an sm_80/sm_90 GPU.
    Ptx,
}

impl ImageChoice {
    /// `auto` or `ptx`.
    pub fn name(self) -> &'static str {
        match self {
            ImageChoice::Auto => "auto",
            ImageChoice::Ptx => "ptx",
        }
    }
}

impl FromStr for ImageChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" | "cubin" => Ok(ImageChoice::Auto),
            "ptx" => Ok(ImageChoice::Ptx),
            _ => Err(format!("unknown kernel image {s:?}: expected auto or ptx")),
        }
    }
}

/// What loading the kernels took and said: for the engine's description, benchmark records
/// and, on failure, the error message.
#[derive(Clone, Debug, PartialEq)]
pub struct ModuleReport {
    /// The image that was loaded.
    pub image: KernelImage,
    /// Wall-clock seconds of `cuModuleLoadDataEx` for that image (JIT included for the PTX).
    pub load_seconds: f64,
    /// The driver's JIT wall time in milliseconds (`CU_JIT_WALL_TIME`; 0 for a cubin).
    pub jit_wall_ms: f32,
    /// The driver's info log (`CU_JIT_INFO_LOG_BUFFER`, verbose), trimmed; often empty.
    pub info_log: String,
    /// Why the cubin was not used when the PTX was loaded in its place (`None` otherwise).
    pub cubin_refused: Option<String>,
}

impl std::fmt::Display for ModuleReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} loaded in {:.3} s", self.image, self.load_seconds)?;
        if self.jit_wall_ms > 0.0 {
            write!(f, " (JIT {:.0} ms)", self.jit_wall_ms)?;
        }
        if let Some(why) = &self.cubin_refused {
            write!(f, "; cubin refused: {why}")?;
        }
        Ok(())
    }
}

/// A driver log as one line: trailing NULs and blanks gone, newlines as " | ", at most
/// `max` characters (logs go into one-line error messages).
pub(crate) fn one_line(log: &[u8], max: usize) -> String {
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    let text = String::from_utf8_lossy(&log[..end]);
    let mut line = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" | ");
    if line.chars().count() > max {
        line = line.chars().take(max).collect::<String>() + "...";
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_picks_the_matching_cubin_else_the_ptx() {
        assert_eq!(KernelImage::for_capability(8, 0), KernelImage::Sm80Cubin);
        assert_eq!(KernelImage::for_capability(8, 6), KernelImage::Sm80Cubin);
        assert_eq!(KernelImage::for_capability(8, 9), KernelImage::Sm80Cubin);
        assert_eq!(KernelImage::for_capability(9, 0), KernelImage::Sm90Cubin);
        assert_eq!(KernelImage::for_capability(10, 0), KernelImage::Ptx);
        assert_eq!(KernelImage::for_capability(12, 0), KernelImage::Ptx);
    }

    /// The embedded cubins are ELF files for the right architecture (EM_CUDA = 190; the
    /// SM number sits in e_flags, bits 0..7 for these ptxas versions), and the PTX holds no
    /// NUL (the loader appends the one the driver needs).
    #[test]
    fn embedded_images_are_what_they_claim() {
        for (image, sm) in [
            (KernelImage::Sm80Cubin, 80u32),
            (KernelImage::Sm90Cubin, 90),
        ] {
            let b = image.bytes();
            assert_eq!(&b[..4], b"\x7fELF", "{image}");
            assert_eq!(u16::from_le_bytes([b[18], b[19]]), 190, "{image}: EM_CUDA");
            let flags = u32::from_le_bytes([b[48], b[49], b[50], b[51]]);
            assert_eq!(flags & 0xff, sm, "{image}: e_flags {flags:#x}");
            // The driver reads the ELF structures in place: 8-byte aligned (include_aligned!).
            assert_eq!(b.as_ptr() as usize % 8, 0, "{image} is not 8-byte aligned");
        }
        assert!(!KernelImage::Ptx.bytes().contains(&0));
    }

    #[test]
    fn every_kernel_of_the_ptx_is_in_both_cubins() {
        for line in crate::PTX.lines() {
            if let Some(rest) = line.strip_prefix(".visible .entry ") {
                let name = &rest[..rest.find('(').unwrap()];
                for image in [KernelImage::Sm80Cubin, KernelImage::Sm90Cubin] {
                    let b = image.bytes();
                    let needle = format!("\0{name}\0");
                    assert!(
                        b.windows(needle.len()).any(|w| w == needle.as_bytes()),
                        "{name} missing from the {image}"
                    );
                }
            }
        }
    }

    #[test]
    fn logs_become_one_bounded_line() {
        assert_eq!(one_line(b"a\n\n  b  \nc\0\0junk", 100), "a | b | c");
        assert_eq!(one_line(b"", 10), "");
        assert_eq!(one_line(b"abcdefghijkl", 4), "abcd...");
    }

    #[test]
    fn image_choice_parses() {
        assert_eq!("PTX".parse::<ImageChoice>().unwrap(), ImageChoice::Ptx);
        assert_eq!("cubin".parse::<ImageChoice>().unwrap(), ImageChoice::Auto);
        assert!("x".parse::<ImageChoice>().is_err());
    }
}
