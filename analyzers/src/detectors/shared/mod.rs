//! What the detectors share, by concern. Every file beside this folder is
//! one detector; these modules are the machinery they use:
//!
//! - [`context`]: [`Cx`], built once per device;
//! - [`pieces`]: idle segments cut at the calls of interest;
//! - [`claims`]: claiming pieces and grouping them;
//! - [`blame`]: the operator, annotation and source a finding names;
//! - [`sync`]: the sync family's call sites, drains and drafts;
//! - [`draft`]: drafts, replayed savings and evidence.

pub(crate) mod blame;
pub(crate) mod claims;
pub(crate) mod context;
pub(crate) mod draft;
pub(crate) mod piece;
pub(crate) mod pieces;
pub(crate) mod sync;

pub(crate) use claims::NOISE_NS;
pub(crate) use context::Cx;
pub(crate) use draft::{all_savings, Draft};
pub(crate) use piece::{CallClass, SLOW_CALL_NS, TINY_COPY_BYTES};
pub(crate) use sync::{SiteGroup, SyncKind};
