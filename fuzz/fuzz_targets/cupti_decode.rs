//! The CUPTI activity-buffer decoder, for the 12.9 and 13.0 record layouts:
//! the record walk (`RecordIter`, `decode_record`) and the stateful
//! `Decoder` (buffer, then `finish` into a trace).
//!
//! A first byte below 0x80: the rest is the buffer as it is. From 0x80: the
//! rest is a recipe of records of kinds the decoder knows (one byte picks
//! the kind, the record's fields come from the bytes after it), so most
//! inputs reach the field decoders instead of stopping at an unknown kind.
#![no_main]

use gapscope_collectors::cupti::decode::{decode_record, Decoder, Layouts, MapResolver, RecordIter};
use libfuzzer_sys::fuzz_target;

fn records(recipe: &[u8], layouts: &Layouts) -> Vec<u8> {
    let kinds: Vec<u32> = (0..64).filter(|&k| layouts.record_size(k).is_some()).collect();
    let mut out = Vec::new();
    let mut bytes = recipe.iter().copied();
    while let Some(pick) = bytes.next() {
        let kind = kinds[pick as usize % kinds.len()];
        let size = layouts.record_size(kind).unwrap_or(8);
        let start = out.len();
        out.resize(start + size, 0);
        out[start..start + 4].copy_from_slice(&kind.to_le_bytes());
        for b in &mut out[start + 4..] {
            *b = bytes.next().unwrap_or(0);
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    for api in [28u32, 130001] {
        let Ok(layouts) = Layouts::for_api_version(api) else {
            continue;
        };
        let built;
        let buf = if mode >= 0x80 {
            built = records(rest, &layouts);
            &built[..]
        } else {
            data
        };
        for (_, rec) in RecordIter::new(buf, &layouts).map_while(Result::ok) {
            std::hint::black_box(decode_record(rec, &layouts).is_ok());
        }
        let mut d = Decoder::new(layouts, MapResolver::default());
        d.decode_buffer(buf);
        std::hint::black_box(d.finish().0.finish());
    }
});
