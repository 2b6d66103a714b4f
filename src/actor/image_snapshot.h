// Image snapshots: the whole durable image as of one journal record, in one file, so that the
// journal files up to that record can go (compaction, durable_image.h; docs/operations.md
// "Durable image").
//
// File: `dir`/snapshot-<record number, 20 digits>.img, mode 0600: a 32-byte header
// ("REEF-IMAGE-SNAP1", the number of the last journal record it includes, zero u64), then
// frames (core/frame.h, magic "SNAP", numbered from 1) of image records (image_record.h): every
// implementation, then every actor as a spawn followed by its messages, and last a frame of no
// records that marks the end. It is written to a `.tmp` file, synced and renamed, so a snapshot
// that is there is whole; one that is damaged or cut short is refused (DataLoss), never
// skipped, because the journal files it replaced may be gone.
//
// Thread ownership: plain functions; the caller keeps one writer at a time per directory.
#pragma once

#include <cstdint>
#include <filesystem>

#include "actor/image_record.h"
#include "core/status.h"

namespace reef::actor {

// Writes `image` as the snapshot of record `seq`. Returns the file's size in bytes.
// Errors: Unavailable (cannot write, sync or rename).
Result<uint64_t> WriteImageSnapshot(const std::filesystem::path& dir, uint64_t seq,
                                    const RecoveredImage& image);

// Applies the newest snapshot in `dir` to `image` (which should be empty) and returns its record
// number; 0 when there is none. Errors: DataLoss (damaged, cut short, or a record refused by
// RecoveredImage::Apply), Unavailable (cannot read).
Result<uint64_t> LoadImageSnapshot(const std::filesystem::path& dir, RecoveredImage* image);

// Removes the snapshots of records before `seq` and left-over `.tmp` files.
// Errors: Unavailable.
Status RemoveOldSnapshots(const std::filesystem::path& dir, uint64_t seq);

}  // namespace reef::actor
