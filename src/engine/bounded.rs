//! A map that holds at most a fixed number of entries, dropping the oldest first: the shape of
//! every cache the engine keeps, so that no process-wide memory grows without bound.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// At most `capacity` entries; inserting into a full map drops the entry inserted first.
pub(crate) struct BoundedMap<K, V> {
    capacity: usize,
    entries: HashMap<K, V>,
    order: VecDeque<K>,
}

impl<K: Clone + Eq + Hash, V: Clone> BoundedMap<K, V> {
    /// An empty map of at most `capacity` entries (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        BoundedMap {
            capacity: capacity.max(1),
            entries: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    /// The value of `key`, if the map holds it.
    pub(crate) fn get(&self, key: &K) -> Option<V> {
        self.entries.get(key).cloned()
    }

    /// Holds `value` under `key` (replacing an earlier value of the same key, which keeps its
    /// place in the order), dropping the oldest entry if the map is full.
    pub(crate) fn insert(&mut self, key: K, value: V) {
        if let Some(old) = self.entries.get_mut(&key) {
            *old = value;
            return;
        }
        if self.entries.len() >= self.capacity {
            if let Some(oldest) = self.order.pop_front() {
                self.entries.remove(&oldest);
            }
        }
        self.order.push_back(key.clone());
        self.entries.insert(key, value);
    }

    /// Whether the map holds nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries, oldest first.
    pub(crate) fn entries(&self) -> Vec<(K, V)> {
        self.order
            .iter()
            .filter_map(|k| Some((k.clone(), self.entries.get(k)?.clone())))
            .collect()
    }

    /// Entries held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_entry_goes_first() {
        let mut map = BoundedMap::new(3);
        for k in 0..3 {
            map.insert(k, k * 10);
        }
        map.insert(1, 11); // an update keeps its place
        map.insert(3, 30);
        assert_eq!(map.len(), 3);
        assert_eq!(map.get(&0), None);
        assert_eq!(map.get(&1), Some(11));
        map.insert(4, 40);
        assert_eq!(map.get(&1), None);
        assert_eq!(map.entries(), [(2, 20), (3, 30), (4, 40)]);
        assert_eq!(
            [2, 3, 4].map(|k| map.get(&k)),
            [Some(20), Some(30), Some(40)]
        );
    }

    #[test]
    fn a_zero_capacity_still_holds_one() {
        let mut map = BoundedMap::new(0);
        map.insert("a", 1);
        map.insert("b", 2);
        assert_eq!(
            (map.get(&"a"), map.get(&"b"), map.len()),
            (None, Some(2), 1)
        );
    }
}
