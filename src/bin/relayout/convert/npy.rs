//! NumPy's `.npy` format: reading a header and writing one for a 1-D array.
//!
//! A file is the magic `\x93NUMPY`, a version, the length of a header, the header (a Python dict
//! literal such as `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), }`) and the data.

use relayout::DType;

/// The magic string every `.npy` file starts with.
const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Bytes before the header's text: the magic, the version and the header length (version 1).
const PREAMBLE_V1: usize = 10;

/// What a `.npy` header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The element type, as NumPy writes it (`<f4`, `|u1`, …).
    pub descr: String,
    /// Whether the data is in Fortran (column-major) order.
    pub fortran_order: bool,
    /// The array's shape.
    pub shape: Vec<usize>,
    /// Where the data starts in the file.
    pub data_offset: usize,
}

impl Header {
    /// The number of elements the shape holds, if it fits a `usize`.
    pub fn elements(&self) -> Option<usize> {
        self.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
    }

    /// Whether the data is in C order: not Fortran order, or a shape whose order does not
    /// matter (at most one extent above 1).
    pub fn is_c_ordered(&self) -> bool {
        !self.fortran_order || self.shape.iter().filter(|&&d| d > 1).count() <= 1
    }
}

/// Bytes needed to know the length of the whole header (magic, version and length field).
pub const PREFIX_LEN: usize = 12;

/// The total length of the header (where the data starts), from the file's first bytes (at
/// least [`PREFIX_LEN`] of them, or the whole file if shorter).
pub fn header_len(prefix: &[u8]) -> Result<usize, String> {
    if prefix.len() < PREAMBLE_V1 || &prefix[..6] != MAGIC {
        return Err("it does not start like a .npy file".into());
    }
    match prefix[6] {
        1 => Ok(PREAMBLE_V1 + u16::from_le_bytes([prefix[8], prefix[9]]) as usize),
        2 | 3 if prefix.len() >= PREFIX_LEN => {
            let len = u32::from_le_bytes([prefix[8], prefix[9], prefix[10], prefix[11]]);
            Ok(PREFIX_LEN + len as usize)
        }
        2 | 3 => Err("its header is cut short".into()),
        v => Err(format!(
            "it has .npy format version {v}, which relayout does not read"
        )),
    }
}

/// Parses a whole header (the file's first [`header_len`] bytes).
pub fn parse_header(bytes: &[u8]) -> Result<Header, String> {
    let data_offset = header_len(bytes)?;
    if bytes.len() < data_offset {
        return Err("its header is cut short".into());
    }
    let text_start = if bytes[6] == 1 {
        PREAMBLE_V1
    } else {
        PREFIX_LEN
    };
    let text = std::str::from_utf8(&bytes[text_start..data_offset])
        .map_err(|_| "its header is not text".to_string())?;
    let mut p = DictParser {
        chars: text.chars().collect(),
        at: 0,
    };
    let mut descr = None;
    let mut fortran_order = None;
    let mut shape = None;
    p.expect('{')?;
    loop {
        if p.eat('}') {
            break;
        }
        let key = p.string()?;
        p.expect(':')?;
        match key.as_str() {
            "descr" => descr = Some(p.string().map_err(|_| structured())?),
            "fortran_order" => fortran_order = Some(p.boolean()?),
            "shape" => shape = Some(p.shape()?),
            other => return Err(format!("its header has an unknown key '{other}'")),
        }
        if !p.eat(',') {
            p.expect('}')?;
            break;
        }
    }
    let missing = |key: &str| format!("its header has no '{key}'");
    Ok(Header {
        descr: descr.ok_or_else(|| missing("descr"))?,
        fortran_order: fortran_order.ok_or_else(|| missing("fortran_order"))?,
        shape: shape.ok_or_else(|| missing("shape"))?,
        data_offset,
    })
}

fn structured() -> String {
    "it holds a structured array (relayout reads plain element types)".into()
}

/// A parser for the small Python dict literal of a header.
struct DictParser {
    chars: Vec<char>,
    at: usize,
}

impl DictParser {
    fn skip_space(&mut self) {
        while self.chars.get(self.at).is_some_and(|c| c.is_whitespace()) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_space();
        if self.chars.get(self.at) == Some(&c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!(
                "its header is not a dict literal (expected '{c}' at character {})",
                self.at + 1
            ))
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.skip_space();
        let quote = match self.chars.get(self.at) {
            Some(&q @ ('\'' | '"')) => q,
            _ => {
                return Err(format!(
                    "its header has no string at character {}",
                    self.at + 1
                ))
            }
        };
        let start = self.at + 1;
        let len = self.chars[start..]
            .iter()
            .position(|&c| c == quote)
            .ok_or("its header has an unterminated string")?;
        self.at = start + len + 1;
        Ok(self.chars[start..start + len].iter().collect())
    }

    fn word(&mut self) -> String {
        self.skip_space();
        let start = self.at;
        while self.chars.get(self.at).is_some_and(|c| c.is_alphanumeric()) {
            self.at += 1;
        }
        self.chars[start..self.at].iter().collect()
    }

    fn boolean(&mut self) -> Result<bool, String> {
        match self.word().as_str() {
            "True" => Ok(true),
            "False" => Ok(false),
            w => Err(format!(
                "its header's fortran_order is '{w}', not True or False"
            )),
        }
    }

    fn shape(&mut self) -> Result<Vec<usize>, String> {
        self.expect('(')?;
        let mut shape = Vec::new();
        loop {
            if self.eat(')') {
                break;
            }
            let word = self.word();
            let digits = word.strip_suffix('L').unwrap_or(&word);
            let extent = digits
                .parse::<usize>()
                .map_err(|_| format!("its header's shape has '{word}', not an extent"))?;
            shape.push(extent);
            if !self.eat(',') {
                self.expect(')')?;
                break;
            }
        }
        Ok(shape)
    }
}

/// The `descr` NumPy writes for a type, and reads back as the same bits; types NumPy lacks
/// (bf16, the 8-bit floats) are stored as the unsigned integers of their size.
pub fn descr_of(dtype: DType) -> &'static str {
    match dtype {
        DType::Pred => "|b1",
        DType::C64 => "<c8",
        DType::C128 => "<c16",
        DType::U8 => "|u1",
        DType::I8 => "|i1",
        DType::U16 | DType::BF16 => "<u2",
        DType::I16 => "<i2",
        DType::F16 => "<f2",
        DType::U32 => "<u4",
        DType::I32 => "<i4",
        DType::F32 => "<f4",
        DType::U64 => "<u8",
        DType::I64 => "<i8",
        DType::F64 => "<f8",
        other => match other.size() {
            2 => "<u2",
            4 => "<u4",
            8 => "<u8",
            _ => "|u1",
        },
    }
}

/// The element type a `descr` names, if relayout has one: little-endian (or byte-order free)
/// integers and floats of 1, 2, 4 and 8 bytes.
pub fn dtype_of(descr: &str) -> Option<DType> {
    let (order, code) = match descr.chars().next()? {
        c @ ('<' | '>' | '=' | '|') => (c, &descr[1..]),
        _ => ('=', descr),
    };
    let dtype = match code {
        "u1" => DType::U8,
        "i1" => DType::I8,
        "u2" => DType::U16,
        "i2" => DType::I16,
        "f2" => DType::F16,
        "u4" => DType::U32,
        "i4" => DType::I32,
        "f4" => DType::F32,
        "u8" => DType::U64,
        "i8" => DType::I64,
        "f8" => DType::F64,
        "b1" => DType::Pred,
        "c8" => DType::C64,
        "c16" => DType::C128,
        _ => return None,
    };
    let little = order == '<' || (order == '=' && cfg!(target_endian = "little"));
    (little || dtype.size() == 1).then_some(dtype)
}

/// Whether a file whose `descr` is this holds elements of `dtype`, bit for bit.
pub fn descr_agrees(descr: &str, dtype: DType) -> bool {
    dtype_of(descr).is_some_and(|t| descr_of(t) == descr_of(dtype))
}

/// The header of a version 1.0 file holding a 1-D C-ordered array of `len` elements of `dtype`,
/// padded with spaces so that the data starts at a multiple of 64 bytes.
pub fn header_1d(dtype: DType, len: usize) -> Vec<u8> {
    let dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': ({len},), }}",
        descr_of(dtype)
    );
    let unpadded = PREAMBLE_V1 + dict.len() + 1;
    let total = unpadded.div_ceil(64) * 64;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&((total - PREAMBLE_V1) as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip() {
        for dtype in DType::ALL {
            for len in [1, 24, 1 << 40] {
                let bytes = header_1d(dtype, len);
                assert_eq!(bytes.len() % 64, 0);
                let h = parse_header(&bytes).unwrap();
                assert_eq!(h.shape, [len]);
                assert!(!h.fortran_order);
                assert_eq!(h.data_offset, bytes.len());
                assert!(descr_agrees(&h.descr, dtype), "{dtype} {}", h.descr);
            }
        }
    }

    #[test]
    fn numpy_headers_of_every_version() {
        let dict = "{'descr': '<f8', 'fortran_order': True, 'shape': (3, 5L), }          \n";
        let mut v1 = b"\x93NUMPY\x01\x00".to_vec();
        v1.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        v1.extend_from_slice(dict.as_bytes());
        let mut v3 = b"\x93NUMPY\x03\x00".to_vec();
        v3.extend_from_slice(&(dict.len() as u32).to_le_bytes());
        v3.extend_from_slice(dict.as_bytes());
        for bytes in [v1, v3] {
            let h = parse_header(&bytes).unwrap();
            assert_eq!(h.descr, "<f8");
            assert!(h.fortran_order && !h.is_c_ordered());
            assert_eq!(h.shape, [3, 5]);
            assert_eq!(h.elements(), Some(15));
            assert_eq!(h.data_offset, bytes.len());
        }
        let scalar = parse_header(&header_like(
            "{'descr': '|u1', 'fortran_order': False, 'shape': ()}",
        ))
        .unwrap();
        assert_eq!(scalar.elements(), Some(1));
    }

    fn header_like(dict: &str) -> Vec<u8> {
        let mut v = b"\x93NUMPY\x01\x00".to_vec();
        v.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        v.extend_from_slice(dict.as_bytes());
        v
    }

    #[test]
    fn bad_headers_are_errors() {
        assert!(header_len(b"\x93NUMPZ\x01\x00\x10\x00").is_err());
        assert!(header_len(b"\x93NUM").is_err());
        assert!(header_len(b"\x93NUMPY\x04\x00\x10\x00\x00\x00").is_err());
        for dict in [
            "{'descr': '<f4', 'fortran_order': False}",
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}",
            "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}",
            "{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}",
            "['descr']",
            "",
        ] {
            assert!(parse_header(&header_like(dict)).is_err(), "{dict}");
        }
        let mut cut = header_like("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}");
        cut.truncate(30);
        assert!(parse_header(&cut).is_err());
    }

    #[test]
    fn element_types_agree_only_bit_for_bit() {
        assert!(descr_agrees("<f4", DType::F32));
        assert!(descr_agrees("|u1", DType::U8));
        assert!(descr_agrees("u1", DType::U8));
        assert!(descr_agrees("<u2", DType::BF16));
        assert!(!descr_agrees("<f2", DType::BF16));
        assert!(!descr_agrees("<i4", DType::F32));
        assert!(!descr_agrees(">f4", DType::F32));
        assert!(!descr_agrees("<c8", DType::U64));
        assert_eq!(dtype_of(">i1"), Some(DType::I8));
        // NumPy's bool and complex64 are XLA's pred and c64; the 8-bit floats NumPy lacks are
        // stored as bytes.
        assert_eq!(dtype_of("|b1"), Some(DType::Pred));
        assert!(descr_agrees("<c8", DType::C64));
        assert!(descr_agrees("|u1", DType::F8E4M3FN));
        assert_eq!(dtype_of("|V4"), None);
        for dtype in [
            DType::Pred,
            DType::C64,
            DType::F8E5M2,
            DType::BF16,
            DType::F64,
        ] {
            assert!(descr_agrees(descr_of(dtype), dtype), "{dtype}");
        }
    }
}
