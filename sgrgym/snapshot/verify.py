"""``sgrgym snapshot verify``: a pack's files against its manifest, and every record's digests."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from sgrgym.core.errors import UserError
from sgrgym.snapshot.pack import (
    MANIFEST,
    check_files,
    load_manifest,
    manifest_problems,
    manifest_sha256,
    pack_file,
)
from sgrgym.snapshot.warc import MAX_RECORD_BYTES, WarcError, check_member, scan_warc


@dataclass
class VerifyReport:
    pack_dir: Path
    manifest_sha256: str
    files: int = 0
    records: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_pack(pack_dir: Path, max_record_bytes: int = MAX_RECORD_BYTES) -> VerifyReport:
    """Check sha256 and size of every file, then block and payload digests of every record.

    Problems name the file and, for records, the byte offset of the record.
    """
    manifest = load_manifest(pack_dir, check=False)
    report = VerifyReport(pack_dir, manifest_sha256(pack_dir))
    report.problems.extend(f"{MANIFEST}: {p}" for p in manifest_problems(manifest))
    report.problems.extend(check_files(pack_dir, manifest))
    total = 0
    for entry in manifest.files:
        try:
            path = pack_file(pack_dir, entry.path)
        except UserError as exc:
            report.problems.append(str(exc))
            continue
        if not path.is_file():
            continue
        report.files += 1
        count = end = 0
        fd = os.open(path, os.O_RDONLY)
        try:
            for record in scan_warc(path, check_digests=True, cap=max_record_bytes):
                count += 1
                end = record.offset + record.length
                damage = check_member(fd, record.offset, record.length)
                if damage:
                    report.problems.append(
                        f"{entry.path}: record at offset {record.offset}: {damage}"
                    )
                if record.block_length > max_record_bytes:
                    report.problems.append(
                        f"{entry.path}: record at offset {record.offset}: declares "
                        f"{record.block_length} bytes, over the {max_record_bytes}-byte limit"
                    )
                for problem in record.digest_problems:
                    report.problems.append(
                        f"{entry.path}: record at offset {record.offset} "
                        f"({record.warc_type} {record.target_uri}): {problem}"
                    )
            if end != os.fstat(fd).st_size:
                report.problems.append(f"{entry.path}: stray bytes after the last record at {end}")
        except WarcError as exc:
            report.problems.append(f"{entry.path}: record at offset {exc.offset}: {exc.reason}")
        finally:
            os.close(fd)
        if count != entry.records:
            report.problems.append(
                f"{entry.path}: {count} readable records, manifest says {entry.records}"
            )
        total += count
    report.records = total
    if total != manifest.record_count:
        report.problems.append(f"{total} records in all, manifest says {manifest.record_count}")
    return report
