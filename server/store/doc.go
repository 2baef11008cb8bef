// Package store keeps the server's state on disk: the write-ahead log, where every
// transaction, keyed by its zxid, is appended and made durable by one fdatasync per
// batch (group commit) before it is applied and acknowledged; and snapshots, each the
// whole state at one zxid as a sequence of opaque records. At start the server loads
// the newest good snapshot and replays the log after it; then it purges snapshots
// and log segments no recovery can need.
//
// # Segments
//
// The log is a directory of segment files. A segment is named after the lowest zxid it
// may hold, as 16 lowercase hex digits, so that names sort in log order:
//
//	0000000100000001.wal   records with zxids 0x100000001 .. 0x10000a3ff
//	000000010000a400.wal   records with zxids 0x10000a400 .. (the last segment)
//
// Every zxid in a segment is at least its base and every zxid before it is below its
// base, so the records after a snapshot at zxid Z are found by skipping segments, and
// whole segments whose records are all at or below Z can be deleted.
//
// A segment is created under the name NAME.wal.tmp, preallocated to Config.SegmentSize,
// given its header, synced, and renamed into place, and then the directory is synced:
// a segment file always has a whole header, and a leftover .tmp file is removed by
// Open. The preallocated space is zeros written ahead of need by a background
// goroutine (next-segment.tmp while it fills, next-segment.tmp.ready once whole and
// synced; prepare.go says why writing beats fallocate); when no prepared file is
// ready at rotation (a new log, or one that outran the preparer), the log writes the
// zeros of a short segment itself, of at most 4 MiB, and rotates out of it when it is
// full. Records are appended after the header; the preallocated space after the last record reads as zeros. The log
// rotates to a new segment when a record would not fit; a record larger than a whole
// segment gets a segment of its own, which grows past the preallocated size. Before it
// rotates the log syncs the segment it leaves, so only the last segment can ever hold
// data that was not synced.
// (With Config.ForceSync off, "synced" means written to the file: safe from a crash
// of the process only, and a crash of the machine may then leave damage that Open
// reports as corruption.)
//
// A segment (all integers little-endian, offsets in bytes):
//
//	0        4          8                16                24         28         32
//	+--------+----------+----------------+-----------------+----------+----------+
//	| "PWAL" | version  | base zxid      | prev zxid       | crc32c   | reserved |  header
//	|        | uint32=1 | int64 (= name) | int64           | of 0:24  | zero     |
//	+--------+----------+----------------+-----------------+----------+----------+
//	| record | record | ... | record | 0 0 0 0 0 0 0 0 0 0 0 0 0 0 ... 0 0 0 0 0 |  to the end of the file
//	+----------------------------------------------------------------------------+
//
// prev is the log's last zxid when the segment was created; it must equal the last
// zxid of the segment before, so a missing segment is detected even across a jump in
// zxids (a new epoch). In the oldest segment it says from where on the log is whole:
// Replay refuses to start before it.
//
// # Records
//
// Each record starts on an 8-byte boundary:
//
//	0        4         8               16       20                20+len   aligned to 8
//	+--------+---------+---------------+--------+------------------+-------+
//	| crc32c | len     | zxid          | mark   | payload          | zeros |
//	| uint32 | uint32  | int64         | uint32 | len bytes        | 0..7  |
//	+--------+---------+---------------+--------+------------------+-------+
//	         |<------------------- checksummed ------------------->|
//
// The fields:
//   - crc32c: CRC-32C (Castagnoli) of bytes 4 .. 20+len: length, zxid, mark, payload.
//   - len: payload length, at most MaxPayload.
//   - zxid: the transaction's zxid, positive and strictly above the previous record's,
//     across segments. A record header is therefore never all zeros, and an all-zero
//     header marks the end of a segment's records.
//   - mark: the sync mark, the offset in this segment up to which the log had been
//     synced (fdatasync returned) when the record was appended; mark <= the record's
//     own offset, and marks never fall within a segment. A fresh segment starts with
//     mark 32: its header was synced when it was created.
//   - payload: opaque bytes, the server's encoded transaction.
//
// # Recovery: torn tail or corruption
//
// Open reads every record of every segment. Where a segment stops holding good
// records — a record header running past the end of the file, a length that overruns
// the file, a checksum mismatch, or an all-zero header with non-zero bytes after it —
// the offset of that first bad record, X, is judged:
//
//   - In a segment that is not the last, it is corruption: such a segment was synced
//     whole before the log rotated away from it.
//   - In the last segment, if some good record after X carries a sync mark above X,
//     the bytes at X had been synced before that record was written: they were durable
//     and have since been damaged. That is corruption.
//   - Otherwise the bytes from X on were never known to be durable: they are what a
//     crash in the middle of a batch leaves — a partial record, garbage, or even good
//     records of the same batch whose earlier pages the disk did not persist. Open
//     logs a warning naming the file, the offset and the bytes discarded, cuts the
//     segment back to X and zeroes the rest, and the log goes on from the last good
//     record. No record at or after X had been acknowledged unless its batch's
//     fdatasync returned and the bytes were damaged afterwards; the mark cannot tell
//     that apart for the newest batch only.
//
// Corruption makes Open fail with a *CorruptError (errors.Is ErrCorrupt) naming the
// file and offset: the log never drops records from its middle. A good record whose
// zxid does not rise, or a segment whose header does not follow on from the segment
// before, is corruption wherever it is. A last segment left with no records (the process
// stopped between creating it and syncing into it) is removed.
//
// # Purging the log
//
// WAL.PurgeBefore(Z) deletes the oldest segments whose records all have zxids at or
// below Z, never the segment being appended to; the segment holding Z+1 and all
// after it stay. It removes them oldest first and syncs the directory after each, so
// that a crash part way leaves a log whole from its oldest remaining segment on: that
// segment's prev says where (the zxid of the last record deleted), and Replay(after)
// with after below it returns ErrGap. The server passes the zxid of the oldest
// snapshot it keeps (PurgeSnapshots), so that snapshot and every newer one can still
// be brought up to date from the log.
//
// # Snapshots
//
// A snapshot is a file snapshot.<zxid as 16 hex digits> in the snapshot directory: the
// state as of that zxid, as records whose contents package datatree defines. It is
// written to NAME.tmp, synced, renamed to NAME and the directory synced, so a file
// under a snapshot's name is always whole; a .tmp file is what a crash or failure
// while writing left, removed by RemoveSnapshotTemps at start.
//
//	0        4          8                16                24         28         32
//	+--------+----------+----------------+-----------------+----------+----------+
//	| "PSNP" | version  | zxid           | reserved        | crc32c   | reserved |  header
//	|        | uint32=2 | int64 (= name) | zero            | of 0:24  | zero     |
//	+--------+----------+----------------+-----------------+----------+----------+
//	| crc32c | stored | decoded | zstd frame      |  a block: crc32c covers stored,
//	| uint32 | uint32 | uint32  | (stored bytes)  |  decoded and the frame
//	+--------+--------+---------+-----------------+
//	| ...                                         |  as many blocks as the records fill
//	+--------+------------+----------------+------------------+
//	| "PEND" | 0xffffffff | record count   | crc32c of the    |  trailer, 20 bytes
//	|        | (as stored)| uint64         | file up to here  |
//	+--------+------------+----------------+------------------+
//
// The records are one stream, each its length and its payload, cut into blocks of
// 128 KiB of that stream — the last one shorter, none empty — that a record may span:
//
//	| len    | payload | len | payload          ...| ...payload | len | payload |  ...
//	| uint32 |         |     |                     |            |     |         |
//	|<-------------- block 1: 128 KiB decoded ------>|<--- block 2 ...
//
// Each block is compressed on its own as one zstd frame (github.com/klauspost/compress,
// its fastest level, which compressed znode records as well as its default or better
// and wrote them up to 1.6 times as fast), with zstd's checksum of the decoded bytes
// (XXH64) in the frame. 128 KiB is zstd's own block size, so a frame is a single zstd
// block, and the block being handed out stays in the core's cache: blocks of 256 KiB
// to 1 MiB read back slower and compressed no better, and decoding the next blocks
// ahead on a goroutine of their own was slower still. SnapshotWriter.Stats reports the
// compression ratio, payload bytes per byte of the file.
//
// The trailer starts where a block's stored length would be 0xffffffff (above any
// block's), so a reader tells it from a block at once; its last four bytes are the
// CRC-32C of every byte of the file before them. ReadSnapshot checks the header (and
// its zxid against the name); for each block that its lengths are within bounds — at
// most 128 KiB + 1 KiB stored and 128 KiB decoded — and within the file before it
// reads or allocates anything for the block, then its CRC-32C, and only then decodes
// it, with a decoder that refuses a frame whose window or output would exceed 128 KiB
// whatever the frame claims, and checks that it decoded to the length its header
// says; each record's length is at most MaxPayload, and a record spanning blocks is
// gathered in a buffer that grows as the blocks decode, not at once; the trailer must
// end the file, and the count and the whole-file checksum must match. Any failure is
// a *CorruptError naming the file and the offset (of the block, for what is inside
// one), and the server falls back to an older snapshot. Records are handed out before
// the trailer is checked (a snapshot may hold millions, and is streamed): a reader
// keeps what it built only if ReadSnapshot returns nil.
//
// The integrity checks are on the stored blocks, not on the records: damage on disk is
// found before a byte of it reaches the decoder, at the cost of one CRC pass over the
// stored bytes — a half to a sixtieth of the records' bytes for znodes — where a CRC
// per record would cost a pass over every record's bytes and four incompressible bytes
// a record. zstd's XXH64 of each frame's output covers the codec itself end to end,
// and the whole-file checksum and the count catch blocks that are each whole but
// swapped, dropped or repeated. A torn or partial file has no trailer at its end.
//
// Version 1, which builds before compression wrote, has the same header (version 1)
// and trailer, and between them the records as they are, with no padding, each behind
// its own checksum; ReadSnapshot reads it as before, and CreateSnapshot writes only
// version 2 (a build older than this one refuses it: see docs/storage.md):
//
//	+--------+--------+-----------+
//	| crc32c | len    | payload   |  a version 1 record: crc32c covers len and payload
//	+--------+--------+-----------+
//
// PurgeSnapshots keeps the newest N snapshots that look valid by name and size
// (none is read) and deletes the older ones, returning the zxid of the oldest kept for
// WAL.PurgeBefore; with fewer than N it deletes nothing and returns 0.
//
// # An ensemble member's records
//
// An ensemble member (server/quorum) keeps Raft's state in the same two formats, in
// <data_log_dir or data_dir>/raft: a WAL in raft/log and snapshot files in raft/snap.
// Raft's own numbers do not rise as a WAL's key must (a new leader overwrites a
// conflicting tail; a hard state has no index), so the key is a log sequence number,
// one more for every record, and the Raft index travels in the payload:
//
//	zxid field   payload
//	+--------+   +------+---------------------------------------------+
//	| lsn    |   | type | protobuf                                    |
//	+--------+   +------+---------------------------------------------+
//	               1      raftpb.Entry             an entry (index, term, data)
//	               2      raftpb.HardState         term, vote, commit
//	               3      from (uint64 BE) +       the snapshot at its index is durable;
//	                      raftpb.SnapshotMetadata  no record before lsn from is needed
//
// A member's snapshot file is a snapshot as above whose zxid field is the Raft index;
// its first record is the raftpb.SnapshotMetadata (index, term, membership), the
// records after it the tree's, as in a standalone snapshot. server/quorum/doc.go says
// how replay resolves overwritten entries and which records a purge may drop.
//
// # The file system
//
// Every file operation — opening, reading and writing at offsets, preallocation,
// fdatasync and fsync, renames, removals, directory listings and syncs, and the
// directory lock — goes through the FS interface (Config.FS, and the fs argument of
// the snapshot functions; nil means OS, the operating system's). Tests run the store
// on internal/faultfs, which keeps what was written but not synced apart from what
// was, drops or tears it in a simulated crash, and fails chosen operations. The
// append path calls the File interface only to write a batch and to fdatasync it, and
// allocates nothing.
//
// # Use
//
// One goroutine owns a WAL (see WAL for the call order and the failure contract). The
// server:
//   - gives the log a directory of its own (Open locks it);
//   - calls Open, then Replay(after) with the zxid of the snapshot it loaded (0 for
//     none) before any Append, and treats ErrGap as a snapshot older than the log;
//   - assigns zxids above LastZxid, positive and strictly increasing;
//   - for each batch calls Append per transaction and Sync once, and applies and
//     acknowledges the batch only after Sync returned nil;
//   - stops on any Append or Sync I/O error (the WAL stays failed) and recovers by
//     Open on restart; and treats ErrCorrupt from Open as a case for an operator;
//   - writes a snapshot with CreateSnapshot, Append per record and Commit (Abort on
//     any error), from any goroutine, the log's writer going on meanwhile;
//   - at start, calls RemoveSnapshotTemps, then ReadSnapshot on ListSnapshots' entries
//     newest first until one reads back whole, then Replay(its zxid);
//   - purges with PurgeSnapshots(keep), then, if it returned a zxid, PurgeBefore(zxid),
//     from any goroutine.
package store
