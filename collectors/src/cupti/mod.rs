//! CUPTI: NVIDIA's activity tracing, read into the [`Trace`](crate::trace::Trace) model.
//!
//! - [`decode`]: the record decoder. Pure Rust, no FFI and no `unsafe`: it
//!   reads CUPTI activity buffers by byte offset, with the record layouts
//!   picked at run time from the CUPTI API version (12.9 and 13.x), and turns
//!   them into trace rows. It is what the tests exercise without a GPU.
//! - `live` (cargo feature `cupti`): the in-process collector that talks to
//!   libcupti through cudarc and feeds the decoder.
//!
//! See `docs/cupti.md` for the record layouts, the version rules and what has
//! been checked against the real library.

pub mod decode;
#[cfg(feature = "cupti")]
pub mod live;
