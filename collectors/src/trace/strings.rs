//! String interning: every name in a trace is stored once and referred to by
//! a [`StrId`].

use super::hash::FxHashMap;

/// An interned string: an index into the [`Strings`] of the trace that made
/// it. Only meaningful for that trace. Cheap to copy, compare and hash, so
/// tables hold these instead of `String`s (a 2M-event trace has a few
/// thousand distinct kernel names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct StrId(pub u32);

/// The string pool of one trace. Id 0 is always the empty string, which
/// tables use for "no value".
#[derive(Clone, Debug)]
pub struct Strings {
    list: Vec<Box<str>>,
    index: FxHashMap<Box<str>, StrId>,
}

impl Default for Strings {
    fn default() -> Self {
        let mut s = Strings {
            list: Vec::new(),
            index: FxHashMap::default(),
        };
        s.intern("");
        s
    }
}

impl Strings {
    /// The empty string, used as "none" in string columns.
    pub const EMPTY: StrId = StrId(0);

    /// Returns the id of `s`, adding it on first sight.
    pub fn intern(&mut self, s: &str) -> StrId {
        if let Some(&id) = self.index.get(s) {
            return id;
        }
        let id = StrId(self.list.len() as u32);
        let boxed: Box<str> = s.into();
        self.list.push(boxed.clone());
        self.index.insert(boxed, id);
        id
    }

    /// The id of `s` if it was interned, without adding it.
    pub fn lookup(&self, s: &str) -> Option<StrId> {
        self.index.get(s).copied()
    }

    /// The text of `id`. Panics on an id from another pool, which is a bug.
    pub fn get(&self, id: StrId) -> &str {
        &self.list[id.0 as usize]
    }

    /// Number of distinct strings, the empty one included.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Always false: the empty string is always present.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// All strings in id order.
    pub fn iter(&self) -> impl Iterator<Item = (StrId, &str)> {
        self.list.iter().enumerate().map(|(i, s)| (StrId(i as u32), &**s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_stable_and_deduplicated() {
        let mut s = Strings::default();
        let a = s.intern("aten::mm");
        let b = s.intern("aten::add");
        assert_eq!(s.intern("aten::mm"), a);
        assert_ne!(a, b);
        assert_eq!(s.get(a), "aten::mm");
        assert_eq!(s.get(Strings::EMPTY), "");
        assert_eq!(s.lookup("aten::add"), Some(b));
        assert_eq!(s.lookup("nope"), None);
        assert_eq!(s.len(), 3);
    }
}
