#!/usr/bin/env python3
"""Run the second reader (paraes_reader.py, written from docs/FORMAT.md alone) over every
entry of the testkit's manifests, tests/testkit/manifest.json and the SSH sub-kit's
tests/testkit/ssh/manifest.json, and report agreement, one line per file.

    python3 scripts/second-reader/run_testkit.py [--manifest PATH]... [--no-pyca-cross-check]
                                                 [--length-after-keys] [--only FILE]...

Exit status: 0 when every entry of every manifest agrees, 1 on any disagreement, 2 when a
manifest is missing or unreadable.

Besides its own reading, for every entry that opens (and every bare message) the script also
hands the body to pyca/cryptography's own Cobblestone128/256Decryptor with the input key the
reader derived, and checks that pyca agrees (same plaintext, or a failure too). Turn that off
with --no-pyca-cross-check.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import paraes_reader as pr  # noqa: E402

KIT = os.path.normpath(os.path.join(HERE, "..", "..", "tests", "testkit"))
DEFAULT_MANIFESTS = [os.path.join(KIT, "manifest.json"), os.path.join(KIT, "ssh", "manifest.json")]


# The manifest knows four failure classes (no_match, commitment, chunk, header). The reader's
# fifth, "refused" (a slot naming one SSH key more than twice, an SSH key that could not be
# unlocked), has no manifest class and no kit entry: it counts as a disagreement.
MANIFEST_CLASS: dict[str, str] = {}


def pyca_decrypt(key: bytes, context: bytes, message: bytes) -> bytes:
    """pyca's own reader, used as a cross-check only (raises on any failure)."""
    from cryptography.cobblestone import Cobblestone128Decryptor, Cobblestone256Decryptor
    dec = (Cobblestone256Decryptor if len(key) == 32 else Cobblestone128Decryptor)(key, context)
    out = bytearray()
    step = 1 << 20
    for i in range(0, len(message), step):
        out += dec.update(message[i:i + step])
    out += dec.finalize()
    return bytes(out)


def message_key(entry) -> bytes:
    keys = [i for i in entry.get("identities", []) if i.get("type") == "key"]
    if "key_hex" in entry:
        return bytes.fromhex(entry["key_hex"])
    if not keys:
        raise ValueError("message entry without a key identity")
    return bytes.fromhex(keys[0]["hex"])


def run_entry(entry, base: str, cross_check: bool,
              framing_first: bool = True) -> tuple[bool, str]:
    path = os.path.join(base, entry["file"])
    with open(path, "rb") as f:
        data = f.read()
    kind = entry["kind"]
    expect = entry["expect"]
    cross_note = ""
    try:
        if kind == "container":
            ids = pr.identities_from_manifest(entry.get("identities", []))
            kw = {"framing_first": framing_first}
            if "max_kdf_mib" in entry:
                kw["max_kdf_mib"] = entry["max_kdf_mib"]
            opened = pr.open_container(data, ids, **kw)
            body = data[opened.header.body_offset:]
            plaintext = pr._decrypt_message(opened.input_key, opened.context,
                                            memoryview(body), opened.keys,
                                            check_last_first=False)
            for line in opened.ignored_slots:
                cross_note += f" [{line}]"
            if cross_check:
                try:
                    theirs = pyca_decrypt(opened.input_key, opened.context, body)
                    cross_note = (" [pyca agrees]" if theirs == plaintext
                                  else " [PYCA GIVES OTHER PLAINTEXT]") + cross_note
                except Exception as e:  # noqa: BLE001
                    cross_note = f" [PYCA REFUSES: {type(e).__name__}: {e}]" + cross_note
        elif kind == "message":
            key = message_key(entry)
            context = bytes.fromhex(entry.get("context_hex", ""))
            if cross_check:
                try:
                    pyca_decrypt(key, context, data)
                    pyca_ok = True
                except Exception:  # noqa: BLE001
                    pyca_ok = False
            plaintext = pr.read_message(data, key, context)
            if cross_check:
                cross_note = " [pyca agrees]" if pyca_ok else " [PYCA REFUSES]"
        else:
            return False, f"unknown kind {kind!r}"
    except pr.ReaderError as e:
        if cross_check and kind == "message":
            cross_note = " [pyca agrees]" if not pyca_ok else " [PYCA ACCEPTS]"
        if expect == "fail":
            want = entry.get("failure")
            if e.cls != want and MANIFEST_CLASS.get(e.cls) == want:
                cross_note += (f" [reader class {e.cls!r} counted as {want!r}: the manifest's "
                               "four classes have no separate one for it]")
            if e.cls == want or MANIFEST_CLASS.get(e.cls) == want:
                return (not cross_note.startswith(" [PYCA"),
                        f"refused as expected: {e.cls}: {e.message}{cross_note}")
            return False, (f"refused with class {e.cls!r}, expected {entry.get('failure')!r}: "
                           f"{e.message}{cross_note}")
        return False, f"refused ({e.cls}: {e.message}) but expected ok{cross_note}"
    except Exception as e:  # noqa: BLE001 - a crash is a disagreement, reported as such
        return False, f"reader crashed: {type(e).__name__}: {e}"

    if expect == "fail":
        return False, (f"opened ({len(plaintext)} bytes) but expected failure "
                       f"{entry.get('failure')!r}{cross_note}")
    want_len = entry.get("plaintext_len")
    want_sha = entry.get("plaintext_sha256")
    got_sha = hashlib.sha256(plaintext).hexdigest()
    if want_len is not None and want_len != len(plaintext):
        return False, f"plaintext length {len(plaintext)}, expected {want_len}{cross_note}"
    if want_sha is not None and want_sha.lower() != got_sha:
        return False, f"plaintext sha256 {got_sha}, expected {want_sha}{cross_note}"
    ok = not cross_note.startswith(" [PYCA")
    return ok, f"opened, {len(plaintext)} bytes, sha256 matches{cross_note}"


def run_manifest(path: str, a, cross_check: bool, cross_state: str) -> tuple[int, int]:
    """Runs one manifest; (entries that agree, entries that disagree), or None if unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        print(f"run_testkit: cannot read the manifest {path}: {e}", file=sys.stderr)
        return None
    if isinstance(manifest, dict) and "entries" in manifest:
        manifest = manifest["entries"]
    base = os.path.dirname(os.path.abspath(path))
    import cryptography
    print(f"second reader (from docs/FORMAT.md alone); cryptography {cryptography.__version__}; "
          f"BLAKE3: {pr.BLAKE3_IMPL}; pyca Cobblestone cross-check: {cross_state}; "
          f"manifest: {path} ({len(manifest)} entries)")

    passed = failed = 0
    by_expect: dict[str, int] = {}
    t0 = time.monotonic()
    for entry in manifest:
        if a.only and entry.get("file") not in a.only:
            continue
        try:
            ok, why = run_entry(entry, base, cross_check, a.framing_first)
        except Exception as e:  # noqa: BLE001 (missing file, bad entry)
            ok, why = False, f"cannot run: {type(e).__name__}: {e}"
        label = entry.get("expect", "?")
        if label == "fail":
            label += ":" + str(entry.get("failure"))
        by_expect[label] = by_expect.get(label, 0) + 1
        print(f"{'PASS' if ok else 'FAIL'} {entry.get('file')} ({entry.get('kind')}, "
              f"expect {label}): {why}", flush=True)
        if ok:
            passed += 1
        else:
            failed += 1
    total = passed + failed
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(by_expect.items()))
    print(f"summary: {passed}/{total} agree, {failed} disagree ({kinds}); "
          f"{time.monotonic() - t0:.1f} s; {path}")
    return passed, failed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--manifest", action="append", default=[],
                    help="a manifest to run (repeatable); default: the kit's and the SSH "
                         "sub-kit's")
    ap.add_argument("--no-pyca-cross-check", action="store_true")
    ap.add_argument("--only", action="append", default=[], help="run only these file names")
    ap.add_argument("--length-after-keys", dest="framing_first", action="store_false",
                    help="containers: check the body length per candidate, after the key "
                         "commitment (an earlier revision of FORMAT.md)")
    a = ap.parse_args(argv)

    cross_check = not a.no_pyca_cross_check
    cross_state = "on"
    if cross_check:
        try:
            import cryptography.cobblestone  # noqa: F401
        except ImportError:
            cross_check = False
            cross_state = "unavailable (this cryptography has no cobblestone module)"
    else:
        cross_state = "off"
    results = []
    unreadable = False
    for path in a.manifest or DEFAULT_MANIFESTS:
        r = run_manifest(path, a, cross_check, cross_state)
        if r is None:
            unreadable = True
        else:
            results.append((path, r))
    if len(results) > 1:
        print("all manifests: " + "; ".join(
            f"{os.path.relpath(p)}: {ok}/{ok + bad} agree" for p, (ok, bad) in results))
    if unreadable:
        return 2
    return 0 if all(bad == 0 for _, (_, bad) in results) else 1


if __name__ == "__main__":
    sys.exit(main())
