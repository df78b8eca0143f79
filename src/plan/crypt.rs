//! The option rules of `enc` and `dec`: format, mode, key sources, inputs and outputs, into
//! one [`CryptPlan`].

use std::path::Path;

use anyhow::Result;
use paraes_core::container::{MAX_CHUNK_SIZE, MIN_CHUNK_SIZE};
use paraes_core::engine::GCM_CHUNK_LEN;
use paraes_core::pipeline::DEFAULT_CHUNK_SIZE;
use paraes_core::{Direction, KeySize, Mode};

use super::engine::engine_and_runner;
use super::keys::KeyPlan;
use super::many::many_files;
use super::naming::{check_not_read, output_target};
use super::{ByteRange, CryptInputs, CryptPlan, FileTask, Files, Format, Runner, Ui};
use crate::cli::{DecArgs, EncArgs, FormatArg, MessageArgs, StatsFormat};

pub(super) fn enc(args: &EncArgs) -> Result<CryptPlan> {
    const C: &str = "enc";
    let keys = KeyPlan::new(&args.keys).with_recipients(&args.recipients);
    let message = message_format(C, &args.message, &keys)?;
    if message.is_some() {
        if args.mode.is_some() {
            usage!(C, "--mode does not apply to --format cobblestone (a message is always AES-GCM): drop --mode");
        }
        if args.iv.is_some() || args.no_pad {
            usage!(
                C,
                "--iv and --no-pad apply to --raw only, not to --format cobblestone"
            );
        }
        if args.bits == Some(KeySize::Aes192) {
            usage!(
                C,
                "--format cobblestone takes 128- or 256-bit keys (Cobblestone-128/256), not 192"
            );
        }
    }
    let format = match (message, args.raw) {
        (Some(context), _) => Format::Message {
            context,
            key_size: args.bits,
        },
        (None, raw) => match raw {
            Some(mode) => {
                raw_rules(C, &keys)?;
                let iv = args.iv.as_deref().map(|t| parse_iv(C, t)).transpose()?;
                if mode == Mode::Ecb && iv.is_some() {
                    usage!(C, "ECB takes no --iv: drop it, or use --raw ctr");
                }
                if mode == Mode::Ctr && args.no_pad {
                    usage!(C, "--no-pad applies only to --raw ecb (CTR never pads)");
                }
                Format::Raw {
                    mode,
                    iv,
                    padding: !args.no_pad,
                    key_size: args.bits,
                }
            }
            None => {
                if args.iv.is_some() {
                    usage!(C, "--iv works only with --raw ctr (a container makes its own random counter): add --raw ctr or drop --iv");
                }
                if args.no_pad {
                    usage!(
                        C,
                        "--no-pad works only with --raw ecb: add --raw ecb or drop --no-pad"
                    );
                }
                if args.mode == Some(Mode::Ecb) {
                    usage!(C, "containers are authenticated AES-GCM (C2SP chunked encryption), which has no ECB: drop --mode ecb. `--raw ecb` writes an unauthenticated ECB stream under your key itself, for interoperability only");
                }
                if args.bits == Some(KeySize::Aes192) {
                    usage!(C, "a container's body is Cobblestone-128 or Cobblestone-256 (AES-128-GCM or AES-256-GCM): give --bits 128 or 256, not 192 (192-bit keys work with --raw)");
                }
                Format::Container(Some(args.bits.unwrap_or(KeySize::Aes256)))
            }
        },
    };
    let chunk_size = match args.chunk_size {
        None => DEFAULT_CHUNK_SIZE,
        Some(size) => {
            if !(MIN_CHUNK_SIZE as u64..=MAX_CHUNK_SIZE as u64).contains(&size)
                || !size.is_multiple_of(16)
            {
                usage!(C, "--chunk-size must be a multiple of 16 bytes from 4KiB to 64MiB, not {size} bytes");
            }
            if !matches!(format, Format::Raw { .. }) && !size.is_multiple_of(GCM_CHUNK_LEN as u64) {
                usage!(C, "for a container or a --format cobblestone message, --chunk-size is how many 16 KiB AES-GCM chunks go through the pipeline at once (the format's chunks are always 16 KiB): give a multiple of 16KiB, not {size} bytes");
            }
            size as usize
        }
    };
    finish(CryptInputs {
        command: C,
        direction: Direction::Encrypt,
        inputs: &args.input,
        list: &args.list,
        output: args.output.output.as_deref(),
        output_dir: args.output.output_dir.as_deref(),
        force: args.output.force,
        range: None,
        keys,
        format,
        chunk_size,
        show_data_key: false,
        force_raw: false,
        armor: args.armor,
        engine: &args.engine,
        ui: &args.ui,
    })
}

pub(super) fn dec(args: &DecArgs) -> Result<CryptPlan> {
    const C: &str = "dec";
    let keys = KeyPlan::new(&args.keys).with_unlock(&args.unlock);
    let message = message_format(C, &args.message, &keys)?;
    if message.is_some() {
        if args.unlock.max_kdf_mib.is_some() || args.unlock.allow_unverified_slot {
            usage!(C, "--max-kdf-mib and --allow-unverified-slot apply to containers, not to --format cobblestone");
        }
        if args.show_data_key {
            usage!(
                C,
                "--show-data-key applies to containers; a message's key is the one you gave"
            );
        }
        if args.iv.is_some() || args.no_pad || args.force_raw {
            usage!(
                C,
                "--iv, --no-pad and --force-raw apply to --raw only, not to --format cobblestone"
            );
        }
    }
    let format = match (message, args.raw) {
        (Some(context), _) => Format::Message {
            context,
            key_size: None,
        },
        (None, raw) => match raw {
            Some(mode) => {
                raw_rules(C, &keys)?;
                if args.unlock.max_kdf_mib.is_some() {
                    usage!(
                        C,
                        "--max-kdf-mib applies to passphrase containers, not to --raw"
                    );
                }
                if args.show_data_key {
                    usage!(
                    C,
                    "--show-data-key applies to containers; a raw stream's key is the one you gave"
                );
                }
                let iv = args.iv.as_deref().map(|t| parse_iv(C, t)).transpose()?;
                match mode {
                Mode::Ecb if iv.is_some() => usage!(C, "ECB takes no --iv: drop it"),
                Mode::Ctr if iv.is_none() => usage!(C, "dec --raw ctr needs --iv HEX (32 hex digits: the initial counter block the stream was made with)"),
                Mode::Ctr if args.no_pad => {
                    usage!(C, "--no-pad applies only to --raw ecb (CTR never pads)")
                }
                _ => {}
            }
                Format::Raw {
                    mode,
                    iv,
                    padding: !args.no_pad,
                    key_size: None,
                }
            }
            None => {
                if args.iv.is_some() {
                    usage!(C, "--iv works only with --raw ctr (a container keeps its counter in its header): drop --iv");
                }
                if args.no_pad {
                    usage!(
                    C,
                    "--no-pad works only with --raw ecb (containers always pad ECB): drop --no-pad"
                );
                }
                if args.force_raw {
                    usage!(C, "--force-raw works only with --raw");
                }
                Format::Container(None)
            }
        },
    };
    let range = args
        .range
        .as_deref()
        .map(|text| parse_range(C, text))
        .transpose()?;
    if range.is_some() && args.raw.is_some() {
        usage!(C, "--range needs a container (its chunk tags say which bytes are authentic); a raw stream has none: drop --raw or --range");
    }
    finish(CryptInputs {
        command: C,
        direction: Direction::Decrypt,
        inputs: &args.input,
        list: &args.list,
        output: args.output.output.as_deref(),
        output_dir: args.output.output_dir.as_deref(),
        force: args.output.force,
        range,
        keys,
        format,
        chunk_size: DEFAULT_CHUNK_SIZE,
        show_data_key: args.show_data_key,
        force_raw: args.force_raw,
        armor: false,
        engine: &args.engine,
        ui: &args.ui,
    })
}

/// `--format cobblestone`'s context (its bytes), after its rules: only one symmetric key (a
/// message is under the key itself), and `--context`/`--context-hex` only with it. `None` for
/// a container or raw stream.
pub(super) fn message_format(
    command: &'static str,
    args: &MessageArgs,
    keys: &KeyPlan,
) -> Result<Option<Vec<u8>>> {
    if args.format != Some(FormatArg::Cobblestone) {
        if args.context.is_some() || args.context_hex.is_some() {
            usage!(
                command,
                "--context and --context-hex apply to --format cobblestone only"
            );
        }
        return Ok(None);
    }
    if keys.passphrase.is_some() || keys.has_public_keys() || !keys.identities.is_empty() {
        usage!(command, "--format cobblestone needs one 16- or 32-byte random key (-k, --key, --key-fd or --key-env): a bare message has no header for passphrases, recipients or identities (use a container for those)");
    }
    if keys.keys.len() != 1 {
        usage!(command, "--format cobblestone uses exactly one key");
    }
    let context = match (&args.context, &args.context_hex) {
        (Some(text), _) => text.as_bytes().to_vec(),
        (None, Some(hex_text)) => match hex::decode(hex_text.trim()) {
            Ok(bytes) => bytes,
            Err(_) => usage!(
                command,
                "--context-hex needs hex digits (an even number of them)"
            ),
        },
        (None, None) => Vec::new(),
    };
    Ok(Some(context))
}

/// A raw stream has no header: only one symmetric key can make it.
pub(super) fn raw_rules(command: &'static str, keys: &KeyPlan) -> Result<()> {
    if keys.passphrase.is_some() {
        usage!(command, "--raw needs a key (-k, --key, --key-fd or --key-env): a raw stream has no header to keep a passphrase's salt");
    }
    if keys.has_public_keys() || !keys.identities.is_empty() {
        usage!(command, "--raw needs a key (-k, --key, --key-fd or --key-env): public-key recipients and identities need a container");
    }
    if keys.keys.len() != 1 {
        usage!(
            command,
            "--raw uses exactly one key: a raw stream has no header to hold more"
        );
    }
    Ok(())
}

pub(super) fn parse_iv(command: &'static str, text: &str) -> Result<[u8; 16]> {
    match hex::decode(text.trim())
        .ok()
        .and_then(|bytes| <[u8; 16]>::try_from(bytes).ok())
    {
        Some(iv) => Ok(iv),
        None => usage!(command, "--iv needs exactly 32 hex digits (16 bytes)"),
    }
}

/// The rules shared by `enc` and `dec`: standard input used once, engine options that apply,
/// and outputs that are none of the files this command reads.
pub(super) fn finish(parts: CryptInputs<'_>) -> Result<CryptPlan> {
    let command = parts.command;
    let many = parts.inputs.len() > 1
        || parts.list.files_from.is_some()
        || parts.list.recursive
        || parts.output_dir.is_some();
    let list_on_stdin = parts.list.files_from.as_deref() == Some(Path::new("-"));
    let data_on_stdin = !many && parts.inputs.first().is_none_or(|p| p == Path::new("-"));
    let stdin_readers =
        parts.keys.stdin_readers() + usize::from(data_on_stdin) + usize::from(list_on_stdin);
    if stdin_readers > 1 {
        usage!(command, "standard input can feed only one thing: the data (or the file list) comes from standard input, so give the key or passphrase another way (-k FILE, --key-fd N, --key-env VAR, --passphrase-file FILE), or give the data as a file");
    }
    let (engine, runner) = engine_and_runner(command, parts.engine)?;
    if parts.armor && runner != Runner::Local {
        usage!(command, "--armor writes one text stream in order, which MPI ranks writing at their own offsets cannot: drop --backend mpi or --armor");
    }
    let files = if many {
        many_files(&parts, runner)?
    } else {
        let input = parts
            .inputs
            .first()
            .filter(|p| *p != Path::new("-"))
            .cloned();
        if parts.ui.size.is_some() && input.is_some() {
            usage!(
                command,
                "--size is for input from a pipe; a file's size is known: drop --size"
            );
        }
        if parts.range.is_some() && (input.is_none() || runner != Runner::Local) {
            usage!(command, "--range reads a container file at the chunks it needs: give the file (not standard input), without --backend mpi");
        }
        let output = output_target(parts.direction, input.as_deref(), parts.output, parts.force)?;
        check_not_read(&output, input.as_deref(), &parts.keys)?;
        Files::One(FileTask { input, output })
    };
    Ok(CryptPlan {
        direction: parts.direction,
        files,
        range: parts.range,
        keys: parts.keys,
        format: parts.format,
        chunk_size: parts.chunk_size,
        show_data_key: parts.show_data_key,
        force_raw: parts.force_raw,
        armor: parts.armor,
        engine,
        runner,
        ui: Ui {
            quiet: parts.ui.quiet,
            verbose: parts.ui.verbose,
            stats_json: parts.ui.stats == Some(StatsFormat::Json),
            size_hint: parts.ui.size,
        },
    })
}

/// Parses `START..END` (either end may be empty; sizes with units).
pub(super) fn parse_range(command: &'static str, text: &str) -> Result<ByteRange> {
    let Some((start, end)) = text.split_once("..") else {
        usage!(command, "--range takes START..END (END exclusive, e.g. 1MiB..2MiB, 4096.., ..1KiB), not '{text}'");
    };
    let bound = |part: &str| -> Result<Option<u64>> {
        let part = part.trim();
        if part.is_empty() {
            return Ok(None);
        }
        match crate::units::parse_size(part) {
            Ok(n) => Ok(Some(n)),
            Err(e) => usage!(command, "--range: {e}"),
        }
    };
    let range = ByteRange {
        start: bound(start)?.unwrap_or(0),
        end: bound(end)?,
    };
    if let Some(end) = range.end {
        if end < range.start {
            usage!(
                command,
                "--range {text} ends before it starts: END is exclusive and must be at least START"
            );
        }
    }
    Ok(range)
}
