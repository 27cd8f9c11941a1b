//! The SQLite store's redo log: the writes the writer has answered for but
//! not yet committed to the database, in a file of their own beside it
//! (`<database>-redo`).
//!
//! Why: a SQLite commit writes whole pages, the task's row, its indexes
//! and the database header among them, however small the change: about 27
//! KB through the WAL and again into the database for a follow-up that adds
//! 5 KB. So the writer keeps its transaction open for a short while
//! (`[store] commit_interval_ms`) and makes each batch durable by appending
//! its writes here instead: one `write()` of about the bytes the batch
//! adds. A commit then carries many batches, and a page many of them
//! changed is written once.
//!
//! The file is a sequence of records, each
//! `[payload length: u32][CRC-32 of seq and payload: u32][seq: u64][payload]`
//! (little-endian), the payload the batch's writes in postcard's compact
//! binary form, where a document is its length and its bytes. (JSON, the
//! format before it, escaped every quote of every document: about a tenth
//! of the writer's time in a profile of new conversations. A record whose
//! length word lacks [`POSTCARD`] is read as JSON, so a log written by an
//! older build before a crash is still applied.) Records are
//! numbered without gaps; the database keeps the number of the last one it
//! committed (`counters.redo_applied`). Once a commit has them all, the next
//! record is written at the start of the file again: the file stays as
//! large as one interval's writes, and its pages, rewritten in place before
//! the kernel writes them back, reach the disk about once per writeback
//! period rather than once per batch.
//!
//! Reading it back (the store opening after a crash): records from the
//! start, for as long as each is whole (its checksum matches) and numbered
//! one after the last. What follows the last record written since the file
//! started over is an older record (numbered lower) or part of one (a bad
//! checksum), so it ends the read either way; records the database already
//! has are skipped by their number.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::TaskWrite;

/// A record's header: payload length, checksum, sequence number.
const HEADER: usize = 4 + 4 + 8;

/// The largest payload a record read back may claim; anything larger is
/// taken for garbage rather than allocated.
const MAX_RECORD: usize = 256 * 1024 * 1024;

/// Set in a record's length word when its payload is postcard; the length
/// is the bits below it (`MAX_RECORD` leaves them free).
const POSTCARD: u32 = 1 << 31;

/// A record read back.
#[derive(Debug)]
pub(super) struct Record {
    pub seq: u64,
    pub writes: Vec<TaskWrite>,
}

/// The redo log file, open for appending.
pub(super) struct RedoLog {
    file: File,
    path: PathBuf,
    /// Where the next record goes.
    end: u64,
    /// The number the next record takes.
    next_seq: u64,
    /// Whether an append waits for the disk (`synchronous = FULL`).
    sync: bool,
    /// Reused for every record.
    buffer: Vec<u8>,
}

impl RedoLog {
    /// The redo log of the database at `database`.
    pub(super) fn path_of(database: &Path) -> PathBuf {
        let mut name = database.as_os_str().to_owned();
        name.push("-redo");
        PathBuf::from(name)
    }

    /// Open (creating if needed) the log at `path` and read back the records
    /// it holds, in order; the first record appended afterwards follows them
    /// (or starts the file over, once they are committed).
    pub(super) fn open(path: &Path, sync: bool) -> io::Result<(Self, Vec<Record>)> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let (records, end) = read_records(&file)?;
        let next_seq = records.last().map_or(1, |record| record.seq + 1);
        let log = RedoLog {
            file,
            path: path.to_owned(),
            end,
            next_seq,
            sync,
            buffer: Vec::new(),
        };
        Ok((log, records))
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The number of the last record appended (0 before any).
    pub(super) fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }

    /// Records are numbered from `seq` + 1 on: the database's count when it
    /// is ahead of the file's (a file lost or started over).
    pub(super) fn continue_after(&mut self, seq: u64) {
        self.next_seq = self.next_seq.max(seq + 1);
    }

    /// Bytes appended since the file last started over.
    pub(super) fn len(&self) -> u64 {
        self.end
    }

    /// Append one record of `writes`; with `sync`, on the disk when this
    /// returns.
    pub(super) fn append(&mut self, writes: &[&TaskWrite]) -> io::Result<()> {
        let seq = self.next_seq;
        self.buffer.clear();
        self.buffer.resize(HEADER, 0);
        let buffer = std::mem::take(&mut self.buffer);
        self.buffer = postcard::to_extend(writes, buffer).map_err(io::Error::other)?;
        let length = u32::try_from(self.buffer.len() - HEADER)
            .ok()
            .filter(|&length| length as usize <= MAX_RECORD)
            .ok_or_else(|| io::Error::other("a batch of writes over 256 MiB"))?;
        self.buffer[8..HEADER].copy_from_slice(&seq.to_le_bytes());
        let checksum = crc32fast::hash(&self.buffer[8..]);
        self.buffer[0..4].copy_from_slice(&(length | POSTCARD).to_le_bytes());
        self.buffer[4..8].copy_from_slice(&checksum.to_le_bytes());
        self.file.write_all_at(&self.buffer, self.end)?;
        if self.sync {
            self.file.sync_data()?;
        }
        self.end += self.buffer.len() as u64;
        self.next_seq += 1;
        // A record far larger than the usual batch keeps its room otherwise.
        if self.buffer.capacity() > 1024 * 1024 {
            self.buffer = Vec::new();
        }
        Ok(())
    }

    /// Everything appended is committed to the database: the next record
    /// goes at the start of the file.
    pub(super) fn start_over(&mut self) {
        self.end = 0;
    }

    /// The store is closing with everything committed: the file is emptied.
    pub(super) fn close(&mut self) -> io::Result<()> {
        self.end = 0;
        self.file.set_len(0)
    }
}

/// The records of `file` from its start, and where the last one ends.
fn read_records(file: &File) -> io::Result<(Vec<Record>, u64)> {
    let size = file.metadata()?.len();
    let mut records: Vec<Record> = Vec::new();
    let mut offset = 0u64;
    let mut header = [0u8; HEADER];
    while offset + HEADER as u64 <= size {
        file.read_exact_at(&mut header, offset)?;
        let word = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
        let length = (word & !POSTCARD) as usize;
        let checksum = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        let mut seq_bytes = [0u8; 8];
        seq_bytes.copy_from_slice(&header[8..HEADER]);
        let seq = u64::from_le_bytes(seq_bytes);
        let follows = records.last().is_none_or(|last| last.seq + 1 == seq);
        let end = offset + (HEADER + length) as u64;
        if !follows || length > MAX_RECORD || end > size {
            break;
        }
        let mut payload = vec![0u8; length];
        file.read_exact_at(&mut payload, offset + HEADER as u64)?;
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&seq_bytes);
        hasher.update(&payload);
        if hasher.finalize() != checksum {
            break;
        }
        let writes = match word & POSTCARD {
            0 => serde_json::from_slice(&payload).ok(),
            _ => postcard::from_bytes(&payload).ok(),
        };
        let Some(writes) = writes else {
            break;
        };
        records.push(Record { seq, writes });
        offset = end;
    }
    Ok((records, offset))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Head, StoredMessage};

    fn write(task: &str, position: u64) -> TaskWrite {
        TaskWrite {
            task_id: task.into(),
            created: None,
            head: Head {
                context_id: "c".into(),
                state: "TASK_STATE_INPUT_REQUIRED".into(),
                terminal: false,
                active: false,
                status_at_ms: 1,
                status_changed: false,
                document: r#"{"id":"t"}"#.into(),
            },
            entries: Vec::new(),
            messages: vec![StoredMessage {
                position,
                message_id: format!("m{position}"),
                document: r#"{"text":"hi \"there\""}"#.into(),
            }],
            artifacts: Vec::new(),
            participants: None,
        }
    }

    fn positions(records: &[Record]) -> Vec<(u64, Vec<u64>)> {
        records
            .iter()
            .map(|r| {
                let positions = r.writes.iter().map(|w| w.messages[0].position).collect();
                (r.seq, positions)
            })
            .collect()
    }

    #[test]
    fn records_read_back_in_order_with_their_numbers() {
        let dir = tempfile::tempdir().expect("dir");
        let path = RedoLog::path_of(&dir.path().join("tasks.db"));
        let (mut log, none) = RedoLog::open(&path, false).expect("opens");
        assert!(none.is_empty());
        log.append(&[&write("a", 0), &write("b", 0)])
            .expect("appends");
        log.append(&[&write("a", 1)]).expect("appends");
        drop(log);
        let (log, records) = RedoLog::open(&path, false).expect("opens");
        assert_eq!(positions(&records), vec![(1, vec![0, 0]), (2, vec![1])]);
        assert_eq!(records[0].writes[1].task_id, "b");
        assert_eq!(
            records[0].writes[0].messages[0].document,
            r#"{"text":"hi \"there\""}"#
        );
        assert_eq!(log.last_seq(), 2);
    }

    /// A record as builds before postcard wrote it: its payload JSON.
    fn json_record(seq: u64, writes: &[TaskWrite]) -> Vec<u8> {
        let payload = serde_json::to_vec(writes).expect("serializes");
        let mut checksummed = seq.to_le_bytes().to_vec();
        checksummed.extend_from_slice(&payload);
        let mut record = (payload.len() as u32).to_le_bytes().to_vec();
        record.extend_from_slice(&crc32fast::hash(&checksummed).to_le_bytes());
        record.extend_from_slice(&checksummed);
        record
    }

    #[test]
    fn records_an_older_build_wrote_as_json_read_back_before_newer_ones() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("upgraded-redo");
        let mut old = json_record(1, &[write("a", 0), write("b", 0)]);
        old.extend(json_record(2, &[write("a", 1)]));
        std::fs::write(&path, &old).expect("writes");
        let (mut log, records) = RedoLog::open(&path, false).expect("opens");
        assert_eq!(positions(&records), vec![(1, vec![0, 0]), (2, vec![1])]);
        assert_eq!(
            records[0].writes[0].messages[0].document,
            r#"{"text":"hi \"there\""}"#
        );
        log.append(&[&write("a", 2)]).expect("appends");
        drop(log);
        let (_, records) = RedoLog::open(&path, false).expect("opens");
        assert_eq!(
            positions(&records),
            vec![(1, vec![0, 0]), (2, vec![1]), (3, vec![2])]
        );
        // The new record is not JSON: a document is not escaped in it.
        let bytes = std::fs::read(&path).expect("reads");
        let document = br#"{"text":"hi \"there\""}"#;
        assert!(
            bytes[old.len()..]
                .windows(document.len())
                .any(|w| w == document)
        );
    }

    #[test]
    fn a_torn_last_record_ends_the_log_and_is_written_over() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("torn-redo");
        let (mut log, _) = RedoLog::open(&path, false).expect("opens");
        log.append(&[&write("a", 0)]).expect("appends");
        log.append(&[&write("a", 1)]).expect("appends");
        let whole = log.len();
        drop(log);
        // The second record's last bytes never reached the file.
        let file = OpenOptions::new().write(true).open(&path).expect("opens");
        file.set_len(whole - 3).expect("cuts");
        let (mut log, records) = RedoLog::open(&path, false).expect("opens");
        assert_eq!(positions(&records), vec![(1, vec![0])]);
        log.append(&[&write("a", 7)]).expect("appends");
        drop(log);
        let (_, records) = RedoLog::open(&path, false).expect("opens");
        assert_eq!(positions(&records), vec![(1, vec![0]), (2, vec![7])]);
    }

    #[test]
    fn a_corrupted_record_ends_the_log() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("bad-redo");
        let (mut log, _) = RedoLog::open(&path, false).expect("opens");
        log.append(&[&write("a", 0)]).expect("appends");
        let first = log.len();
        log.append(&[&write("a", 1)]).expect("appends");
        log.append(&[&write("a", 2)]).expect("appends");
        drop(log);
        let file = OpenOptions::new().write(true).open(&path).expect("opens");
        file.write_all_at(b"X", first + HEADER as u64 + 5)
            .expect("flips a byte");
        let (_, records) = RedoLog::open(&path, false).expect("opens");
        assert_eq!(positions(&records), vec![(1, vec![0])]);
    }

    #[test]
    fn after_starting_over_the_older_records_behind_the_new_ones_are_not_read() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("over-redo");
        let (mut log, _) = RedoLog::open(&path, false).expect("opens");
        for position in 0..5 {
            log.append(&[&write("a", position)]).expect("appends");
        }
        log.start_over();
        // As long as the record it overwrites: the older record after it
        // is whole, and its number ends the read.
        log.append(&[&write("b", 9)]).expect("appends");
        drop(log);
        let (log, records) = RedoLog::open(&path, false).expect("opens");
        assert_eq!(positions(&records), vec![(6, vec![9])]);
        assert_eq!(log.last_seq(), 6);

        // Started over with nothing appended since: the old records read
        // back, and the database's count says it has them.
        let (mut log, _) = RedoLog::open(&path, false).expect("opens");
        log.start_over();
        drop(log);
        let (mut log, records) = RedoLog::open(&path, false).expect("opens");
        assert_eq!(positions(&records), vec![(6, vec![9])]);
        log.continue_after(6);
        log.start_over();
        log.append(&[&write("c", 0)]).expect("appends");
        assert_eq!(log.last_seq(), 7);
    }

    #[test]
    fn closing_empties_the_file() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("closed-redo");
        let (mut log, _) = RedoLog::open(&path, true).expect("opens");
        log.append(&[&write("a", 0)]).expect("appends");
        log.close().expect("closes");
        assert_eq!(std::fs::metadata(&path).expect("exists").len(), 0);
        let (_, records) = RedoLog::open(&path, false).expect("opens");
        assert!(records.is_empty());
    }
}
