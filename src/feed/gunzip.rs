//! Gzip input (RFC 1952) unpacked as it arrives, for `LogFeed`: a file is
//! gzip when its first two bytes say so, whatever its name. Members that
//! follow one another (`cat a.gz b.gz > both.gz`, rotated logs appended) are
//! one stream, as gzip(1) reads them, and zero bytes after the last member
//! (tape padding) are skipped. Where the gzip data breaks, or stops inside a
//! member, is kept as a flaw: what was unpacked before it stands, and
//! nothing after it is read.

use zlib_rs::{Inflate, InflateFlush, Status};

use crate::error::Result;
use crate::ingest::GZIP_MAGIC;
use crate::words::counted;

/// Most unpacked bytes handed on at once: a piece of a well-compressed file
/// unpacks to ten or twenty times its size, and is framed a slice at a time.
const OUT_BYTES: usize = 256 << 10;

/// zlib's window bits for a gzip wrapper (16 + deflate's largest window).
const GZIP_WINDOW_BITS: u8 = 16 + 15;

pub(crate) struct Gunzip {
    /// The member being unpacked; `None` between members.
    member: Option<Inflate>,
    members: usize,
    /// Compressed bytes taken so far.
    read: u64,
    unpacked: u64,
    out: Vec<u8>,
    flaw: Option<GzipFlaw>,
}

/// Where and how gzip input stops being whole gzip data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GzipFlaw {
    /// zlib refused its bytes (`why`, zlib's words) at compressed byte `at`.
    Damaged { at: u64, why: String },
    /// Its gzip data ended at `at`, and other bytes follow.
    NotGzipAfter { at: u64 },
    /// The input ended inside a member.
    Cut,
}

impl GzipFlaw {
    /// What the flaw is, for a file none of whose data unpacked: it is not gzip.
    pub(crate) fn not_gzip(&self) -> String {
        match self {
            GzipFlaw::Damaged { at, why } => format!("{why} at byte {at}"),
            GzipFlaw::NotGzipAfter { at } => format!("bytes that are not gzip at byte {at}"),
            GzipFlaw::Cut => "it stops before any data".to_owned(),
        }
    }

    /// Whether the flaw falls inside an entry (the one it went through is
    /// not whole); bytes after whole gzip data leave every entry whole.
    pub(crate) fn cuts_an_entry(&self) -> bool {
        !matches!(self, GzipFlaw::NotGzipAfter { .. }) && !self.fails_the_check()
    }

    /// zlib checks a member's data against its checksum and length at its
    /// end: the whole member came out, and any entry of it may hold the damage.
    fn fails_the_check(&self) -> bool {
        matches!(self, GzipFlaw::Damaged { why, .. } if why.ends_with("data check") || why.ends_with("length check"))
    }

    /// What became of a file that unpacked in part, `entries` having been read.
    pub(crate) fn said(&self, source: &str, entries: usize) -> String {
        let why = match self {
            GzipFlaw::Damaged { at, why } if self.fails_the_check() => {
                return format!(
                    "{source} fails gzip's own check ({why} at byte {at}): the {} read from it may hold the damage, and what follows byte {at} was not read",
                    counted(entries, "entry", "entries")
                );
            }
            GzipFlaw::Damaged { at, why } => {
                format!("damaged gzip: {why} at byte {at}; the entries just before it may be damaged too")
            }
            GzipFlaw::NotGzipAfter { at } => {
                format!("bytes that are not gzip follow its gzip data at byte {at}")
            }
            GzipFlaw::Cut => "cut-off gzip".to_owned(),
        };
        super::ends_early(source, &why, entries)
    }
}

impl Gunzip {
    pub(crate) fn new() -> Gunzip {
        Gunzip {
            member: None,
            members: 0,
            read: 0,
            unpacked: 0,
            out: vec![0; OUT_BYTES],
            flaw: None,
        }
    }

    /// Unpacks the next piece of compressed input, handing the bytes on to
    /// `sink` in slices while it answers true (false: nothing more is
    /// wanted). After a flaw, nothing more is read.
    pub(crate) fn unpack(
        &mut self,
        mut input: &[u8],
        sink: &mut impl FnMut(&[u8]) -> Result<bool>,
    ) -> Result<()> {
        while self.flaw.is_none() {
            let member = match &mut self.member {
                Some(member) => member,
                None => {
                    let padding = input.iter().take_while(|&&b| b == 0).count();
                    self.read += padding as u64;
                    input = input.get(padding..).unwrap_or_default();
                    match input.first() {
                        None => break,
                        Some(&first) if self.members > 0 && first != GZIP_MAGIC[0] => {
                            self.flaw = Some(GzipFlaw::NotGzipAfter { at: self.read });
                            break;
                        }
                        Some(_) => self.member.insert(Inflate::new(true, GZIP_WINDOW_BITS)),
                    }
                }
            };
            let (in_before, out_before) = (member.total_in(), member.total_out());
            let status = member.decompress(input, &mut self.out, InflateFlush::NoFlush);
            let taken = (member.total_in() - in_before) as usize;
            let made = (member.total_out() - out_before) as usize;
            input = input.get(taken..).unwrap_or_default();
            self.read += taken as u64;
            self.unpacked += made as u64;
            match status {
                Ok(Status::StreamEnd) => {
                    self.member = None;
                    self.members += 1;
                }
                Ok(Status::Ok | Status::BufError) if taken > 0 || made > 0 || input.is_empty() => {}
                // Input left and room to write, yet no progress: never seen
                // from zlib, but a loop must not spin on it.
                Ok(Status::Ok | Status::BufError) => {
                    self.flaw = Some(GzipFlaw::Damaged {
                        at: self.read,
                        why: "no progress".to_owned(),
                    });
                }
                // A later member that does not begin as gzip does: other bytes after the gzip data.
                Err(_) if self.members > 0 && member.total_in() <= GZIP_MAGIC.len() as u64 => {
                    let at = self.read - member.total_in();
                    self.flaw = Some(GzipFlaw::NotGzipAfter { at });
                }
                Err(e) => {
                    let why = member.error_message().unwrap_or(e.as_str()).to_owned();
                    self.flaw = Some(GzipFlaw::Damaged { at: self.read, why });
                }
            }
            if let Some(made) = self.out.get(..made).filter(|made| !made.is_empty()) {
                if !sink(made)? {
                    break;
                }
            }
            // Once the input is taken, a full output may hide more to come
            // (a long match's copy): the member is asked again until it has none.
            if input.is_empty() && made < self.out.len() {
                break;
            }
        }
        Ok(())
    }

    /// Why the input is not whole gzip data, once that is known: a flaw met
    /// while unpacking, or (`ended`: the input has ended) a member left
    /// open (after the first, one not yet past gzip's first byte is other
    /// bytes after the gzip data).
    pub(crate) fn flaw(&self, ended: bool) -> Option<GzipFlaw> {
        match (&self.flaw, &self.member) {
            (Some(flaw), _) => Some(flaw.clone()),
            (None, Some(member)) if ended => Some(
                match self.members > 0 && member.total_in() < GZIP_MAGIC.len() as u64 {
                    true => GzipFlaw::NotGzipAfter {
                        at: self.read - member.total_in(),
                    },
                    false => GzipFlaw::Cut,
                },
            ),
            (None, _) => None,
        }
    }

    /// Whether a flaw was met: no more input is read.
    pub(crate) fn broke(&self) -> bool {
        self.flaw.is_some()
    }

    /// Compressed bytes taken so far.
    #[cfg(test)]
    pub(super) fn bytes_read(&self) -> u64 {
        self.read
    }

    /// Whether any bytes came out (a file with none is not gzip at all).
    pub(crate) fn unpacked_any(&self) -> bool {
        self.unpacked > 0
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// `text` as one gzip member.
    pub(in crate::feed) fn gzip(text: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut encoder = zlib_rs::Deflate::new(6, true, GZIP_WINDOW_BITS);
        let mut buf = vec![0; text.len() + 1024];
        let status = encoder
            .compress(text, &mut buf, zlib_rs::DeflateFlush::Finish)
            .unwrap();
        assert_eq!(status, Status::StreamEnd);
        out.extend_from_slice(&buf[..encoder.total_out() as usize]);
        out
    }

    /// Unpacks `input` fed in pieces of `piece` bytes.
    fn unpack(input: &[u8], piece: usize) -> (Vec<u8>, Gunzip) {
        let mut gunzip = Gunzip::new();
        let mut text = Vec::new();
        for chunk in input.chunks(piece.max(1)) {
            gunzip
                .unpack(chunk, &mut |bytes| {
                    text.extend_from_slice(bytes);
                    Ok(true)
                })
                .unwrap();
        }
        (text, gunzip)
    }

    fn lines(n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| format!("{{\"id\":\"{i}\",\"event_message\":\"GET /rest/v1/t{i}\"}}\n"))
            .collect::<String>()
            .into_bytes()
    }

    #[test]
    fn members_one_after_another_are_one_stream_at_any_split() {
        let (a, b) = (lines(3000), lines(7));
        let mut both = gzip(&a);
        both.extend(gzip(&b));
        both.extend([0, 0, 0]);
        for piece in [1, 2, 7, 1000, both.len()] {
            let (text, gunzip) = unpack(&both, piece);
            assert_eq!(text, [a.clone(), b.clone()].concat(), "pieces of {piece}");
            assert_eq!(gunzip.flaw(true), None, "pieces of {piece}");
        }
    }

    #[test]
    fn a_cut_a_damage_and_trailing_bytes_are_flaws_after_what_came_before() {
        let text = lines(5000);
        let whole = gzip(&text);
        let (cut, gunzip) = unpack(&whole[..whole.len() / 2], 4096);
        assert!(text.starts_with(&cut) && !cut.is_empty());
        assert_eq!(gunzip.flaw(false), None, "more may come");
        assert_eq!(gunzip.flaw(true), Some(GzipFlaw::Cut));

        let mut damaged = whole.clone();
        let middle = damaged.len() / 2;
        damaged[middle..middle + 64].fill(0xff);
        let (read, gunzip) = unpack(&damaged, 4096);
        assert!(gunzip.broke());
        assert!(
            matches!(gunzip.flaw(true), Some(GzipFlaw::Damaged { at, .. }) if at > middle as u64 && at < damaged.len() as u64)
        );
        assert!(read.len() < text.len());

        // Other bytes after the gzip data, even one that begins as gzip does.
        let at = whole.len() as u64;
        for trailer in [&b"garbage"[..], &[0x1f, b'x', b'y'], &[0x1f]] {
            let trailed = [&whole[..], trailer].concat();
            for piece in [1, 4096] {
                let (read, gunzip) = unpack(&trailed, piece);
                assert_eq!(read, text, "{trailer:?} in pieces of {piece}");
                let flaw = gunzip.flaw(true);
                assert_eq!(
                    flaw,
                    Some(GzipFlaw::NotGzipAfter { at }),
                    "{trailer:?} in pieces of {piece}"
                );
            }
        }
    }

    /// A piece that unpacks to many slices (a thousandfold) comes out whole.
    #[test]
    fn a_piece_that_unpacks_to_many_slices_comes_out_whole() {
        let text = b"{\"id\":\"same\",\"event_message\":\"GET /\"}\n".repeat(200_000);
        let zipped = gzip(&text);
        assert!(zipped.len() * 100 < text.len(), "{} bytes", zipped.len());
        let (read, gunzip) = unpack(&zipped, zipped.len());
        assert_eq!((read.len(), gunzip.flaw(true)), (text.len(), None));
    }

    /// A member that fails gzip's own check came out whole: its last entry is not cut.
    #[test]
    fn a_failed_check_leaves_the_member_s_entries_whole() {
        let failed = GzipFlaw::Damaged {
            at: 9,
            why: "incorrect data check".into(),
        };
        assert!(!failed.cuts_an_entry());
        let said = failed.said("x.gz", 2);
        assert_eq!(said, "x.gz fails gzip's own check (incorrect data check at byte 9): the 2 entries read from it may hold the damage, and what follows byte 9 was not read");
        assert!(GzipFlaw::Damaged {
            at: 9,
            why: "invalid block type".into()
        }
        .cuts_an_entry());
    }

    #[test]
    fn a_header_that_is_not_gzip_unpacks_nothing() {
        let (read, gunzip) = unpack(&[0x1f, 0x8b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], 3);
        assert!(read.is_empty() && !gunzip.unpacked_any());
        assert!(
            matches!(gunzip.flaw(true), Some(GzipFlaw::Damaged { .. })),
            "{:?}",
            gunzip.flaw(true)
        );
    }
}
