//! Holds the typed values a [`Context`](super::Context) carries: one value per type.

use std::any::{Any, TypeId};
use std::collections::HashMap;

/// Maps a type to one value of it. Contexts are cloned per request, so values are cloned
/// with them: they are meant to be small or shared (`Arc`).
#[derive(Clone, Default)]
pub(crate) struct Extensions {
    /// `None` until the first insert: most contexts carry nothing, and cost no allocation then.
    map: Option<HashMap<TypeId, Box<dyn Value>>>,
}

/// A value the map can hold: any `Clone + Send + Sync` type.
trait Value: Any + Send + Sync {
    fn clone_box(&self) -> Box<dyn Value>;
    fn as_any(&self) -> &dyn Any;
}

impl<T: Clone + Send + Sync + 'static> Value for T {
    fn clone_box(&self) -> Box<dyn Value> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Clone for Box<dyn Value> {
    fn clone(&self) -> Self {
        // `(**self)` reaches the value inside; `self.clone_box()` would clone the box itself.
        (**self).clone_box()
    }
}

impl Extensions {
    /// Sets the value of type `T`, replacing the one there was.
    pub(crate) fn insert<T: Clone + Send + Sync + 'static>(&mut self, value: T) {
        self.map
            .get_or_insert_with(HashMap::new)
            .insert(TypeId::of::<T>(), Box::new(value));
    }

    /// Returns the value of type `T`, if there is one.
    pub(crate) fn get<T: 'static>(&self) -> Option<&T> {
        self.map
            .as_ref()?
            .get(&TypeId::of::<T>())
            .and_then(|value| (**value).as_any().downcast_ref::<T>())
    }

    /// Returns how many values there are.
    pub(crate) fn len(&self) -> usize {
        self.map.as_ref().map_or(0, HashMap::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_per_type_cloned_with_the_map() {
        let mut map = Extensions::default();
        assert_eq!(map.get::<u8>(), None);
        map.insert(1_u8);
        map.insert(2_u8);
        map.insert(String::from("x"));
        let copy = map.clone();
        assert_eq!(copy.get::<u8>(), Some(&2));
        assert_eq!(copy.get::<String>().map(String::as_str), Some("x"));
        assert_eq!(copy.get::<u16>(), None);
        assert_eq!(copy.len(), 2);
    }
}
