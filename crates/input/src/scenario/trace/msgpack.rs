//! A compact msgpack decoder (the format SimKube writes its traces in),
//! from the specification at github.com/msgpack/msgpack/blob/master/spec.md:
//! every type but extensions, decoded into the located trees the manifest
//! reader reads, so recorded objects are checked like any manifest.
//! Written here rather than taken from a crate: the format is small and the
//! decoder adds nothing to the first build.
//!
//! Map keys may be any value (SimKube keys `pod_lifecycles` by two-element
//! arrays); a key that is a sequence or mapping stays one, and readers that
//! expect text keys say so.

use crate::yaml::{Node, Position, Value};

/// Deepest nesting accepted: objects are far shallower, and the limit keeps
/// a corrupt file from exhausting the stack.
const MAX_DEPTH: usize = 256;

/// Decodes one msgpack value that fills `bytes`. Errors name the byte
/// offset.
pub fn decode(bytes: &[u8]) -> Result<Node, String> {
    let mut decoder = Decoder { bytes, at: 0 };
    let value = decoder.value(0)?;
    if decoder.at != bytes.len() {
        return Err(format!(
            "msgpack: {} bytes after the value that ends at byte {}",
            bytes.len() - decoder.at,
            decoder.at
        ));
    }
    Ok(value)
}

struct Decoder<'b> {
    bytes: &'b [u8],
    at: usize,
}

impl Decoder<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(format!(
                "msgpack: the file ends inside a value (byte {} of {})",
                self.at,
                self.bytes.len()
            ));
        };
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn uint(&mut self, n: usize) -> Result<u64, String> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn int(&mut self, n: usize) -> Result<i64, String> {
        let raw = self.uint(n)?;
        let shift = 64 - 8 * n as u32;
        Ok(((raw << shift) as i64) >> shift)
    }

    fn text(&mut self, n: usize) -> Result<Value, String> {
        let at = self.at;
        let bytes = self.take(n)?;
        std::str::from_utf8(bytes)
            .map(|s| Value::Str(s.to_string()))
            .map_err(|_| format!("msgpack: the string at byte {at} is not UTF-8"))
    }

    fn value(&mut self, depth: usize) -> Result<Node, String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "msgpack: values nested deeper than {MAX_DEPTH} at byte {}",
                self.at
            ));
        }
        let at = self.at;
        let tag = self.take(1)?[0];
        let value = match tag {
            0x00..=0x7f => Value::Int(i128::from(tag)),
            0x80..=0x8f => self.map(usize::from(tag & 0x0f), depth)?,
            0x90..=0x9f => self.seq(usize::from(tag & 0x0f), depth)?,
            0xa0..=0xbf => self.text(usize::from(tag & 0x1f))?,
            0xc0 => Value::Null,
            0xc2 => Value::Bool(false),
            0xc3 => Value::Bool(true),
            0xca => Value::Float(f64::from(f32::from_bits(self.uint(4)? as u32))),
            0xcb => Value::Float(f64::from_bits(self.uint(8)?)),
            0xcc => Value::Int(i128::from(self.uint(1)?)),
            0xcd => Value::Int(i128::from(self.uint(2)?)),
            0xce => Value::Int(i128::from(self.uint(4)?)),
            0xcf => Value::Int(i128::from(self.uint(8)?)),
            0xd0 => Value::Int(i128::from(self.int(1)?)),
            0xd1 => Value::Int(i128::from(self.int(2)?)),
            0xd2 => Value::Int(i128::from(self.int(4)?)),
            0xd3 => Value::Int(i128::from(self.int(8)?)),
            0xd9 => {
                let n = self.uint(1)? as usize;
                self.text(n)?
            }
            0xda => {
                let n = self.uint(2)? as usize;
                self.text(n)?
            }
            0xdb => {
                let n = self.uint(4)? as usize;
                self.text(n)?
            }
            0xdc => {
                let n = self.uint(2)? as usize;
                self.seq(n, depth)?
            }
            0xdd => {
                let n = self.uint(4)? as usize;
                self.seq(n, depth)?
            }
            0xde => {
                let n = self.uint(2)? as usize;
                self.map(n, depth)?
            }
            0xdf => {
                let n = self.uint(4)? as usize;
                self.map(n, depth)?
            }
            0xe0..=0xff => Value::Int(i128::from(tag as i8)),
            0xc4..=0xc6 => {
                return Err(format!(
                    "msgpack: binary data at byte {at} (a trace holds none)"
                ));
            }
            0xc7..=0xc9 | 0xd4..=0xd8 => {
                return Err(format!(
                    "msgpack: an extension value at byte {at} (a trace holds none)"
                ));
            }
            0xc1 => return Err(format!("msgpack: the unused type byte 0xc1 at byte {at}")),
        };
        Ok(Node {
            value,
            position: Position::START,
            bytes: Some((at, self.at)),
        })
    }

    fn seq(&mut self, n: usize, depth: usize) -> Result<Value, String> {
        // Each item takes a byte at least: a bad length fails here, before
        // any allocation.
        self.check_room(n)?;
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            items.push(self.value(depth + 1)?);
        }
        Ok(Value::Seq(items))
    }

    fn map(&mut self, n: usize, depth: usize) -> Result<Value, String> {
        self.check_room(n.saturating_mul(2))?;
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            let key = self.value(depth + 1)?;
            let value = self.value(depth + 1)?;
            entries.push((key, value));
        }
        Ok(Value::Map(entries))
    }

    fn check_room(&self, items: usize) -> Result<(), String> {
        if items > self.bytes.len() - self.at {
            return Err(format!(
                "msgpack: a collection of {items} values at byte {} is longer than the file",
                self.at
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_collections_and_array_keys_decode() {
        // {"a": [1, -1, "x", nil, true], [1, 2]: 300}
        let bytes = [
            0x82, 0xa1, b'a', 0x95, 0x01, 0xff, 0xa1, b'x', 0xc0, 0xc3, 0x92, 0x01, 0x02, 0xcd,
            0x01, 0x2c,
        ];
        let node = decode(&bytes).unwrap();
        let Value::Map(entries) = &node.value else {
            panic!("a map")
        };
        assert_eq!(entries.len(), 2);
        let Value::Seq(items) = &entries[0].1.value else {
            panic!("a sequence")
        };
        let values: Vec<&Value> = items.iter().map(|n| &n.value).collect();
        assert_eq!(
            values,
            [
                &Value::Int(1),
                &Value::Int(-1),
                &Value::Str("x".into()),
                &Value::Null,
                &Value::Bool(true)
            ]
        );
        assert!(matches!(&entries[1].0.value, Value::Seq(k) if k.len() == 2));
        assert_eq!(entries[1].1.value, Value::Int(300));
    }

    #[test]
    fn truncated_and_reserved_bytes_are_errors_with_offsets() {
        assert_eq!(
            decode(&[0x92, 0x01]).unwrap_err(),
            "msgpack: a collection of 2 values at byte 1 is longer than the file"
        );
        assert_eq!(
            decode(&[0xc1]).unwrap_err(),
            "msgpack: the unused type byte 0xc1 at byte 0"
        );
        assert_eq!(
            decode(&[0xcd, 0x01]).unwrap_err(),
            "msgpack: the file ends inside a value (byte 1 of 2)"
        );
        assert_eq!(
            decode(&[0x01, 0x02]).unwrap_err(),
            "msgpack: 1 bytes after the value that ends at byte 1"
        );
    }

    #[test]
    fn negative_and_wide_integers_keep_their_sign() {
        assert_eq!(decode(&[0xd0, 0x80]).unwrap().value, Value::Int(-128));
        assert_eq!(
            decode(&[0xd3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe])
                .unwrap()
                .value,
            Value::Int(-2)
        );
        assert_eq!(
            decode(&[0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])
                .unwrap()
                .value,
            Value::Int(i128::from(u64::MAX))
        );
    }
}
