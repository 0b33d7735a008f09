//! JSON by hand: writing a row (logs.all's `metadata` is copied through as
//! the raw text it arrived as; other rows derive `Serialize` and are written
//! by `push_value`), and reading an object's fields in their order with their
//! values unparsed. What is written is byte for byte what serde_json writes.
//! Also what JSON counts as whitespace, for the readers that step over it.

use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Impossible, Serialize, SerializeMap, SerializeSeq, SerializeStruct, Serializer};
use serde_json::ser::{CompactFormatter, Formatter};
use serde_json::value::RawValue;

/// JSON's whitespace (not a form feed, which `is_ascii_whitespace` counts).
pub(crate) fn is_json_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// Whether JSON writes `byte` as an escape (serde_json's set: `"`, `\\` and
/// the control characters).
fn escaped(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

pub fn push_str(out: &mut String, value: &str) {
    if !value.bytes().any(escaped) {
        out.reserve(value.len() + 2);
        out.push('"');
        out.push_str(value);
        out.push('"');
        return;
    }
    // serde_json's string escaping is the one the rest of the wire format uses.
    match serde_json::to_string(value) {
        Ok(escaped) => out.push_str(&escaped),
        Err(_) => out.push_str("null"),
    }
}

pub fn push_opt_str(out: &mut String, value: Option<&str>) {
    match value {
        Some(v) => push_str(out, v),
        None => out.push_str("null"),
    }
}

/// Appends what `write` writes to a small buffer: a number as serde_json's
/// formatter writes it.
fn push_formatted(out: &mut String, write: impl FnOnce(&mut &mut [u8]) -> std::io::Result<()>) {
    let mut buffer = [0u8; 48];
    let capacity = buffer.len();
    let mut rest = &mut buffer[..];
    if write(&mut rest).is_ok() {
        let written = capacity - rest.len();
        if let Some(Ok(text)) = buffer.get(..written).map(std::str::from_utf8) {
            out.push_str(text);
        }
    }
}

pub fn push_int(out: &mut String, value: i64) {
    push_formatted(out, |b| CompactFormatter.write_i64(b, value));
}

fn push_uint(out: &mut String, value: u64) {
    push_formatted(out, |b| CompactFormatter.write_u64(b, value));
}

/// A float as serde_json writes it: `null` when it is not finite.
fn push_float(out: &mut String, value: f64) {
    if !value.is_finite() {
        out.push_str("null");
    } else if !push_short_decimal(out, value) {
        push_formatted(out, |b| CompactFormatter.write_f64(b, value));
    }
}

/// Writes `value` if it is a decimal of at most three places under 1e9 in
/// size (an execution time as logs give it: `41`, `67.8`), as serde_json's
/// shortest round-trip writes it (`41.0`, `67.8`), and says whether it did.
/// That writer multiplies 128-bit numbers, which wasm has no instruction for
/// (a compiler-rt call per product): in wasm, invocation-stats 7day for a
/// median or tail project answers 7-12% faster with this path. Here: `m / 1000` is the double nearest the decimal `m` thousandths
/// (division is correctly rounded, as reading the decimal is), so if it is
/// `value`, that decimal reads back as `value`; below 1e9 two decimals of
/// three places are further apart than a double's spacing, so no shorter one
/// does, and the shortest is the decimal with its trailing zeros cut.
fn push_short_decimal(out: &mut String, value: f64) -> bool {
    let thousandths = (value * 1000.0).round();
    if value == 0.0 || value.abs() >= 1e9 || thousandths / 1000.0 != value {
        return false;
    }
    let thousandths = thousandths.abs() as u64;
    if value < 0.0 {
        out.push('-');
    }
    push_uint(out, thousandths / 1000);
    out.push('.');
    let fraction = thousandths % 1000;
    let digits = [fraction / 100, fraction / 10 % 10, fraction % 10];
    let kept = match (digits[1], digits[2]) {
        (0, 0) => 1,
        (_, 0) => 2,
        _ => 3,
    };
    for digit in digits.into_iter().take(kept) {
        out.push(char::from(b'0' + digit as u8));
    }
    true
}

/// `"name":` — `name` must need no escaping (field names are fixed).
pub fn push_key(out: &mut String, name: &str) {
    out.push('"');
    out.push_str(name);
    out.push_str("\":");
}

/// Appends `value` as JSON, as `serde_json::to_string` writes it (false,
/// and nothing appended, if that fails). Rows (structs of numbers, strings
/// and options, and sequences of them) are written straight into `out`,
/// with no String per row and no escaping of names or of strings that need
/// none (in wasm, api-counts answers 5–10% faster). Anything else is
/// handed to serde_json.
pub fn push_value<T: Serialize + ?Sized>(out: &mut String, value: &T) -> bool {
    let start = out.len();
    if value.serialize(Writer(out)).is_ok() {
        return true;
    }
    out.truncate(start);
    match serde_json::to_string(value) {
        Ok(text) => {
            out.push_str(&text);
            true
        }
        Err(_) => false,
    }
}

/// `push_value`'s serializer; `Unsupported` hands the value to serde_json.
struct Writer<'o>(&'o mut String);

#[derive(Debug)]
struct Unsupported;

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("not written by hand")
    }
}

impl std::error::Error for Unsupported {}

impl serde::ser::Error for Unsupported {
    fn custom<T: std::fmt::Display>(_: T) -> Unsupported {
        Unsupported
    }
}

type Written = Result<(), Unsupported>;

impl<'o> Serializer for Writer<'o> {
    type Ok = ();
    type Error = Unsupported;
    type SerializeSeq = Compound<'o>;
    type SerializeTuple = Impossible<(), Unsupported>;
    type SerializeTupleStruct = Impossible<(), Unsupported>;
    type SerializeTupleVariant = Impossible<(), Unsupported>;
    type SerializeMap = Compound<'o>;
    type SerializeStruct = Compound<'o>;
    type SerializeStructVariant = Impossible<(), Unsupported>;

    fn serialize_bool(self, v: bool) -> Written {
        self.0.push_str(if v { "true" } else { "false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Written {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Written {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Written {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Written {
        push_int(self.0, v);
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Written {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Written {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Written {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Written {
        push_uint(self.0, v);
        Ok(())
    }
    fn serialize_f32(self, _: f32) -> Written {
        Err(Unsupported)
    }
    fn serialize_f64(self, v: f64) -> Written {
        push_float(self.0, v);
        Ok(())
    }
    fn serialize_char(self, _: char) -> Written {
        Err(Unsupported)
    }
    fn serialize_str(self, v: &str) -> Written {
        push_str(self.0, v);
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Written {
        Err(Unsupported)
    }
    fn serialize_none(self) -> Written {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Written {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Written {
        self.0.push_str("null");
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Written {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Written {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Written {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Written {
        Err(Unsupported)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'o>, Unsupported> {
        self.0.push('[');
        Ok(Compound {
            out: self.0,
            first: true,
        })
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'o>, Unsupported> {
        self.0.push('{');
        Ok(Compound {
            out: self.0,
            first: true,
        })
    }
    fn serialize_struct(self, name: &'static str, _: usize) -> Result<Compound<'o>, Unsupported> {
        // serde_json's RawValue (and Number with arbitrary precision) pass
        // through here under a private name that serde_json writes as raw text.
        if name.starts_with("$serde_json::") {
            return Err(Unsupported);
        }
        self.0.push('{');
        Ok(Compound {
            out: self.0,
            first: true,
        })
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Unsupported> {
        Err(Unsupported)
    }
}

/// A struct or sequence being written: whether a comma comes before the next.
struct Compound<'o> {
    out: &'o mut String,
    first: bool,
}

impl Compound<'_> {
    fn comma(&mut self) {
        if !std::mem::take(&mut self.first) {
            self.out.push(',');
        }
    }
}

impl SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Written {
        self.comma();
        value.serialize(Writer(self.out))
    }
    fn end(self) -> Written {
        self.out.push(']');
        Ok(())
    }
}

impl SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    /// A key as serde_json writes one: a string as it is, an integer quoted;
    /// any other key is handed to serde_json.
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Written {
        self.comma();
        let start = self.out.len();
        key.serialize(Writer(self.out))?;
        let written = self.out.get(start..).unwrap_or_default();
        let integer = !written.is_empty()
            && written
                .bytes()
                .enumerate()
                .all(|(i, b)| b.is_ascii_digit() || (i == 0 && b == b'-'));
        if integer {
            self.out.insert(start, '"');
            self.out.push('"');
        } else if !written.starts_with('"') {
            return Err(Unsupported);
        }
        self.out.push(':');
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Written {
        value.serialize(Writer(self.out))
    }
    fn end(self) -> Written {
        self.out.push('}');
        Ok(())
    }
}

impl SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, name: &'static str, value: &T) -> Written {
        self.comma();
        if name.bytes().any(escaped) {
            push_str(self.out, name);
            self.out.push(':');
        } else {
            push_key(self.out, name);
        }
        value.serialize(Writer(self.out))
    }
    fn end(self) -> Written {
        self.out.push('}');
        Ok(())
    }
}

/// An object's fields in their order, each value as its raw text; names as
/// `K` (`&str` where names need no unescaping, else `String`).
pub struct Fields<'a, K>(pub Vec<(K, &'a RawValue)>);

impl<'de: 'a, 'a, K: Deserialize<'de>> Deserialize<'de> for Fields<'a, K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a, K>(PhantomData<(&'a (), K)>);
        impl<'de: 'a, 'a, K: Deserialize<'de>> Visitor<'de> for Visit<'a, K> {
            type Value = Fields<'a, K>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Fields<'a, K>, M::Error> {
                let mut fields = Vec::new();
                while let Some(entry) = map.next_entry::<K, &'de RawValue>()? {
                    fields.push(entry);
                }
                Ok(Fields(fields))
            }
        }
        deserializer.deserialize_map(Visit(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde::Serialize;

    #[derive(Serialize)]
    struct Row {
        timestamp: i64,
        name: String,
        avg: Option<f64>,
        count: Option<i64>,
        small: u8,
        bits: u64,
        ok: bool,
        #[serde(rename = "we\"ird")]
        weird: (),
        seq: Vec<f64>,
        nested: Inner,
        buckets: std::collections::BTreeMap<i32, u64>,
        named: std::collections::BTreeMap<String, Option<f64>>,
    }

    #[derive(Serialize)]
    struct Inner {
        text: Option<String>,
    }

    /// Written through serde_json's float (f32), tuple and key (bool, f64)
    /// paths, and (flatten) a map of our own.
    #[derive(Serialize)]
    struct Other {
        #[serde(flatten)]
        inner: Inner,
        single: f32,
        pair: (i64, char),
        flags: std::collections::BTreeMap<bool, u8>,
    }

    #[derive(Serialize)]
    struct Raw<'a> {
        count: i64,
        raw: &'a RawValue,
    }

    fn pushed<T: Serialize>(value: &T) -> String {
        let mut out = "[".to_owned();
        assert!(push_value(&mut out, value));
        out.split_off(1)
    }

    fn float() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<u64>().prop_map(f64::from_bits),
            any::<i32>().prop_map(f64::from),
            Just(-0.0),
            Just(f64::INFINITY),
            Just(f64::NAN),
            Just(1e21),
            Just(0.1 + 0.2),
        ]
    }

    proptest! {
        #[test]
        fn a_row_is_written_as_serde_json_writes_it(
            timestamp in any::<i64>(),
            name in prop_oneof![any::<String>(), "[a-z\u{0}-\u{1f}\"\\\\]{0,2}"],
            avg in proptest::option::of(float()),
            count in proptest::option::of(any::<i64>()),
            small in any::<u8>(),
            bits in any::<u64>(),
            ok in any::<bool>(),
            seq in proptest::collection::vec(float(), 0..4),
            text in proptest::option::of("[a-z\"\\\\\u{0}-\u{1f}\u{7f}é]{0,12}"),
            buckets in proptest::collection::btree_map(any::<i32>(), any::<u64>(), 0..4),
        ) {
            let named = [(name.clone(), avg)].into_iter().collect();
            let row = Row { timestamp, name, avg, count, small, bits, ok, weird: (), seq, nested: Inner { text: text.clone() }, buckets, named };
            prop_assert_eq!(pushed(&row), serde_json::to_string(&row).unwrap());
            let other = Other { inner: Inner { text }, single: small as f32 / 3.0, pair: (timestamp, 'x'), flags: [(ok, small)].into_iter().collect() };
            prop_assert_eq!(pushed(&other), serde_json::to_string(&other).unwrap());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]
        /// Every decimal of up to three places the short path takes is
        /// written as serde_json writes it; what it declines too.
        #[test]
        fn short_decimals_are_written_as_serde_json_writes_them(
            units in 0u64..2_000_000_000_000,
            places in 0usize..4,
            bits in any::<u64>(),
            negative in any::<bool>(),
        ) {
            // 0 to 3 places up to 2e12 (past the short path's 1e9), small ones, any double.
            let decimal = units as f64 / [1.0, 10.0, 100.0, 1000.0][places];
            for value in [decimal, (units % 100_000) as f64 / 1000.0, f64::from_bits(bits)] {
                let value = if negative { -value } else { value };
                let mut out = String::new();
                push_float(&mut out, value);
                prop_assert_eq!(out, serde_json::to_string(&value).unwrap(), "{:e}", value);
            }
        }
    }

    #[test]
    fn the_short_path_takes_the_edges_of_its_range_as_serde_json_writes_them() {
        for value in [
            0.001,
            0.01,
            0.1,
            0.5,
            1.0,
            10.0,
            999_999_999.999,
            -41.0,
            -67.8,
        ] {
            let mut out = String::new();
            assert!(push_short_decimal(&mut out, value), "{value}");
            assert_eq!(out, serde_json::to_string(&value).unwrap());
        }
        for value in [
            0.0,
            -0.0,
            1e9,
            0.0005,
            1e-7,
            123.4567,
            f64::MIN_POSITIVE / 2.0,
        ] {
            assert!(!push_short_decimal(&mut String::new(), value), "{value:e}");
        }
    }

    #[test]
    fn raw_text_is_written_as_it_is() {
        let raw = serde_json::from_str::<&RawValue>(r#"{ "a" : [1, 2.50] }"#).unwrap();
        let row = Raw { count: 3, raw };
        assert_eq!(pushed(&row), r#"{"count":3,"raw":{ "a" : [1, 2.50] }}"#);
    }

    #[test]
    fn every_character_is_escaped_as_serde_json_escapes_it() {
        for c in (0..=0x80u32).filter_map(char::from_u32) {
            let text = format!("a{c}b");
            assert_eq!(
                pushed(&text),
                serde_json::to_string(&text).unwrap(),
                "{c:?}"
            );
        }
    }

    #[test]
    fn what_cannot_be_written_is_left_out() {
        let mut out = "x".to_owned();
        let map = std::collections::HashMap::from([(vec![1u8], 1)]);
        assert!(!push_value(&mut out, &map));
        assert_eq!(out, "x");
    }

    #[test]
    fn map_keys_are_written_as_serde_json_writes_them() {
        use std::collections::BTreeMap;
        fn same<T: Serialize>(value: T) {
            assert_eq!(pushed(&value), serde_json::to_string(&value).unwrap());
        }
        same(BTreeMap::from([(Some(3), 1), (None, 2)]).split_off(&Some(0)));
        same(BTreeMap::from([(-7i64, 1), (u8::MAX.into(), 2)]));
        same(BTreeMap::from([('c', 1)]));
        same(BTreeMap::from([(1.5f64.to_bits(), "x")]));
        same(BTreeMap::from([("a\"b", [1, 2])]));
    }
}
