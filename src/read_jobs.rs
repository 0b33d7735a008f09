//! Read jobs: a batch read in another instance of the module (a worker's) as
//! the store it is for would read it, and the rows it staged appended there.
//! A job carries what reading depends on: the stream and the store's limits
//! (how a batch is framed and its report capped). Its answer is the batch's
//! report and its rows as staged bytes (`staged.rs`), which the store
//! appends without parsing. So a second core reads while the first appends,
//! and the store decides, as `ingest` does, whether the rows fit.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::ingest::IngestReport;
use crate::limits::Limits;
use crate::staged::StagedRows;

const JOB: &[u8; 4] = b"LERJ";
const ANSWER: &[u8; 4] = b"LERA";

/// What reading a batch depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// A frame: `magic`, then `head` as JSON (its length first); what follows
/// is the caller's.
fn framed(magic: &[u8; 4], head: &impl Serialize) -> Vec<u8> {
    let head = serde_json::to_vec(head).unwrap_or_default();
    let mut frame = Vec::with_capacity(8 + head.len());
    frame.extend_from_slice(magic);
    frame.extend_from_slice(&(head.len() as u32).to_le_bytes());
    frame.extend_from_slice(&head);
    frame
}

/// A frame's head, and what follows it; 500 `bad_read_job` for a frame
/// that is not `what`.
fn unframed<'b, T: DeserializeOwned>(
    frame: &'b [u8],
    magic: &[u8; 4],
    what: &str,
) -> Result<(T, &'b [u8])> {
    let (found, rest) = frame.split_at_checked(4).ok_or_else(|| bad(what))?;
    if found != magic {
        return Err(bad(&format!("not {what}")));
    }
    let (len, rest) = rest.split_at_checked(4).ok_or_else(|| bad(what))?;
    let len = u32::from_le_bytes(len.try_into().unwrap_or_default()) as usize;
    let (head, rest) = rest
        .split_at_checked(len)
        .ok_or_else(|| bad("the frame is cut short"))?;
    let head =
        serde_json::from_slice(head).map_err(|_| bad(&format!("{what} that does not read")))?;
    Ok((head, rest))
}

impl ReadJob {
    /// The job as a frame.
    pub fn write(&self) -> Vec<u8> {
        framed(JOB, self)
    }

    /// A job written by `write`; 500 `bad_read_job` for other bytes.
    pub fn read(frame: &[u8]) -> Result<ReadJob> {
        match unframed(frame, JOB, "a read job")? {
            (job, []) => Ok(job),
            _ => Err(bad("bytes past the job")),
        }
    }
}

/// What an answer says of its rows.
#[derive(Serialize, Deserialize)]
struct AnswerHead {
    stream: String,
    report: IngestReport,
    count: usize,
}

/// A batch read by a job, as a frame: its stream, report and rows' count,
/// then the rows as staged bytes.
pub fn write_answer(stream: &str, report: &IngestReport, rows: &StagedRows) -> Vec<u8> {
    let head = AnswerHead {
        stream: stream.to_owned(),
        report: report.clone(),
        count: rows.len(),
    };
    let mut frame = framed(ANSWER, &head);
    rows.write(&mut frame);
    frame
}

/// An answer as `write_answer` wrote it (its rows are read when appended).
pub struct ReadAnswer<'b> {
    pub stream: String,
    pub report: IngestReport,
    pub count: usize,
    pub rows: &'b [u8],
}

/// The parts of an answer; 500 `bad_read_job` for other bytes, and for a
/// report listing more rejections than it counts.
pub fn read_answer(frame: &[u8]) -> Result<ReadAnswer<'_>> {
    let (head, rows): (AnswerHead, _) = unframed(frame, ANSWER, "a batch read by a read job")?;
    if head.report.rejected.len() > head.report.rejected_total {
        return Err(bad("a report that does not read"));
    }
    Ok(ReadAnswer {
        stream: head.stream,
        report: head.report,
        count: head.count,
        rows,
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
            (read.stream.as_str(), read.count, read.rows),
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
