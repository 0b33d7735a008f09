//! Read jobs: a batch read in another instance of the module (a worker's) as
//! the store it is for would read it, and the rows it staged appended there.
//! A job carries what reading depends on: the stream and the store's limits
//! (how a batch is framed and its report capped). Its answer is the batch's
//! report and its rows as staged bytes (`staged.rs`), which the store
//! appends without parsing. So a second core reads while the first appends,
//! and the store decides, as `ingest` does, whether the rows fit.

use crate::error::{Error, Result};
use crate::ingest::IngestReport;
use crate::limits::Limits;
use crate::staged::StagedRows;

const JOB: &[u8; 4] = b"LERJ";
const ANSWER: &[u8; 4] = b"LERA";

/// What reading a batch depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadJob {
    /// The stream's name (`Source::stream` reads it).
    pub stream: String,
    pub limits: Limits,
}

fn bad(reason: &str) -> Error {
    Error::BadReadJob {
        reason: reason.into(),
    }
}

/// Bytes read from the front of a frame.
struct Cursor<'b>(&'b [u8]);

impl<'b> Cursor<'b> {
    fn take(&mut self, n: usize) -> Result<&'b [u8]> {
        let (taken, rest) = self
            .0
            .split_at_checked(n)
            .ok_or_else(|| bad("the frame is cut short"))?;
        self.0 = rest;
        Ok(taken)
    }

    fn u32(&mut self) -> Result<usize> {
        let bytes = self.take(4)?.try_into().unwrap_or_default();
        Ok(u32::from_le_bytes(bytes) as usize)
    }

    fn u64(&mut self) -> Result<usize> {
        let bytes = self.take(8)?.try_into().unwrap_or_default();
        usize::try_from(u64::from_le_bytes(bytes)).map_err(|_| bad("a number past this engine's"))
    }

    fn magic(&mut self, magic: &[u8; 4], what: &str) -> Result<()> {
        match self.take(4)? == magic {
            true => Ok(()),
            false => Err(bad(&format!("not {what}"))),
        }
    }
}

impl ReadJob {
    /// The limits in the frame, in this order.
    fn limits_in_order(limits: &mut Limits) -> [&mut usize; 6] {
        let Limits {
            max_batch_bytes,
            max_batch_entries,
            max_reported_rejections,
            max_store_bytes,
            max_param_bytes,
            max_regex_bytes,
        } = limits;
        [
            max_batch_bytes,
            max_batch_entries,
            max_reported_rejections,
            max_store_bytes,
            max_param_bytes,
            max_regex_bytes,
        ]
    }

    /// The job as a frame: its magic, the stream's name, then each limit.
    pub fn write(&self) -> Vec<u8> {
        let mut frame = Vec::with_capacity(4 + 4 + self.stream.len() + 6 * 8);
        frame.extend_from_slice(JOB);
        frame.extend_from_slice(&(self.stream.len() as u32).to_le_bytes());
        frame.extend_from_slice(self.stream.as_bytes());
        let mut limits = self.limits;
        for limit in Self::limits_in_order(&mut limits) {
            frame.extend_from_slice(&(*limit as u64).to_le_bytes());
        }
        frame
    }

    /// A job written by `write`; 500 `bad_read_job` for other bytes.
    pub fn read(frame: &[u8]) -> Result<ReadJob> {
        let mut cursor = Cursor(frame);
        cursor.magic(JOB, "a read job")?;
        let len = cursor.u32()?;
        let stream = std::str::from_utf8(cursor.take(len)?)
            .map_err(|_| bad("a stream name that is not UTF-8"))?
            .to_owned();
        let mut limits = Limits::default();
        for limit in Self::limits_in_order(&mut limits) {
            *limit = cursor.u64()?;
        }
        match cursor.0.is_empty() {
            true => Ok(ReadJob { stream, limits }),
            false => Err(bad("bytes past the job")),
        }
    }
}

/// A batch read by a job, as a frame: its magic, the stream's name, the
/// report's JSON (each with its length first), the rows' count, then the
/// rows as staged bytes.
pub fn write_answer(stream: &str, report: &IngestReport, rows: &StagedRows) -> Vec<u8> {
    let report = serde_json::to_vec(report).unwrap_or_default();
    let mut frame = Vec::with_capacity(4 + 4 + stream.len() + 4 + report.len() + 8);
    frame.extend_from_slice(ANSWER);
    for part in [stream.as_bytes(), &report] {
        frame.extend_from_slice(&(part.len() as u32).to_le_bytes());
        frame.extend_from_slice(part);
    }
    frame.extend_from_slice(&(rows.len() as u64).to_le_bytes());
    rows.write(&mut frame);
    frame
}

/// An answer as `write_answer` wrote it (its rows are read when appended).
pub struct ReadAnswer<'b> {
    pub stream: &'b str,
    pub report: IngestReport,
    pub count: usize,
    pub rows: &'b [u8],
}

/// The parts of an answer; 500 `bad_read_job` for other bytes.
pub fn read_answer(frame: &[u8]) -> Result<ReadAnswer<'_>> {
    let mut cursor = Cursor(frame);
    cursor.magic(ANSWER, "a batch read by a read job")?;
    let len = cursor.u32()?;
    let stream = std::str::from_utf8(cursor.take(len)?)
        .map_err(|_| bad("a stream name that is not UTF-8"))?;
    let len = cursor.u32()?;
    let report: IngestReport = serde_json::from_slice(cursor.take(len)?)
        .ok()
        .filter(|r: &IngestReport| r.rejected.len() <= r.rejected_total)
        .ok_or_else(|| bad("a report that does not read"))?;
    let count = cursor.u64()?;
    Ok(ReadAnswer {
        stream,
        report,
        count,
        rows: cursor.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_reads_back_as_written_and_nothing_else_reads() {
        let job = ReadJob {
            stream: "function_edge_logs".into(),
            limits: Limits {
                max_batch_bytes: 1 << 20,
                max_batch_entries: 7,
                max_reported_rejections: 3,
                max_store_bytes: 3 << 30,
                max_param_bytes: 11,
                max_regex_bytes: 13,
            },
        };
        let frame = job.write();
        assert_eq!(ReadJob::read(&frame), Ok(job));
        for cut in 0..frame.len() {
            assert!(ReadJob::read(&frame[..cut]).is_err(), "{cut}");
        }
        let mut longer = frame.clone();
        longer.push(0);
        assert!(ReadJob::read(&longer).is_err());
        let answer = write_answer(
            "edge_logs",
            &IngestReport::new(10),
            &StagedRows::Edge(vec![]),
        );
        assert!(ReadJob::read(&answer).is_err());
        assert!(read_answer(&frame).is_err());
    }

    #[test]
    fn an_answer_reads_back_as_written() {
        let mut report = IngestReport::new(10);
        report.accepted = 2;
        report.reject(4, "not JSON");
        let answer = write_answer("function_edge_logs", &report, &StagedRows::Function(vec![]));
        let read = read_answer(&answer).expect("reads");
        assert_eq!(
            (read.stream, read.count, read.rows),
            ("function_edge_logs", 0, &[][..])
        );
        assert_eq!((read.report.accepted, read.report.rejected_total), (2, 1));
        assert_eq!(read.report.rejected, report.rejected);
        for cut in 0..answer.len() {
            assert!(read_answer(&answer[..cut]).is_err(), "{cut}");
        }
        // A report listing more rejections than it counts does not read.
        let mut listed = report.clone();
        listed.rejected_total = 0;
        let answer = write_answer("edge_logs", &listed, &StagedRows::Edge(vec![]));
        assert!(read_answer(&answer).is_err());
    }
}
