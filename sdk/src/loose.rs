//! Reading JSON into typed views as leniently as a `serde_json::Value` walk
//! reads it: a field of another shape than the one asked for (a number
//! where text is, a list where an object is, `null`) reads as its default
//! instead of failing the whole object, unknown fields are skipped without
//! being built, and a field given twice keeps its last value. Owns the
//! [`Shape`] trait a view implements, the seed that reads one, and the
//! matcher of a view's field names.

use serde::de::{DeserializeSeed, Deserializer, Error, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// A value made from whatever shape its JSON has; a shape it does not take
/// (each method's default) makes its [`Default`], the JSON skipped.
pub(crate) trait Shape: Default {
    fn text(_text: &str) -> Self {
        Self::default()
    }
    fn number() -> Self {
        Self::default()
    }
    fn boolean(_b: bool) -> Self {
        Self::default()
    }
    fn null() -> Self {
        Self::default()
    }
    fn map<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }
    fn seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }
}

/// The seed (and visitor) reading a [`Shape`] `T`.
pub(crate) struct Loose<T>(PhantomData<T>);

/// Read a `T`, e.g. `map.next_value_seed(loose::<String>())`.
pub(crate) fn loose<T>() -> Loose<T> {
    Loose(PhantomData)
}

impl<'de, T: Shape> DeserializeSeed<'de> for Loose<T> {
    type Value = T;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T: Shape> Visitor<'de> for Loose<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: Error>(self, b: bool) -> Result<T, E> {
        Ok(T::boolean(b))
    }
    fn visit_i64<E: Error>(self, _: i64) -> Result<T, E> {
        Ok(T::number())
    }
    fn visit_u64<E: Error>(self, _: u64) -> Result<T, E> {
        Ok(T::number())
    }
    fn visit_f64<E: Error>(self, _: f64) -> Result<T, E> {
        Ok(T::number())
    }
    fn visit_str<E: Error>(self, text: &str) -> Result<T, E> {
        Ok(T::text(text))
    }
    fn visit_unit<E: Error>(self) -> Result<T, E> {
        Ok(T::null())
    }
    fn visit_none<E: Error>(self) -> Result<T, E> {
        Ok(T::null())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::map(map)
    }
}

/// Text; anything else is empty.
impl Shape for String {
    fn text(text: &str) -> Self {
        text.to_owned()
    }
}

/// A list of `T`; anything else is none.
impl<T: Shape> Shape for Vec<T> {
    fn seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut all = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(loose::<T>())? {
            all.push(item);
        }
        Ok(all)
    }
}

/// Whether a value is there and not `null`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NotNull(pub bool);

impl Shape for NotNull {
    fn text(_: &str) -> Self {
        NotNull(true)
    }
    fn number() -> Self {
        NotNull(true)
    }
    fn boolean(_: bool) -> Self {
        NotNull(true)
    }
    fn map<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(NotNull(true))
    }
    fn seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(NotNull(true))
    }
}

/// The seed of a map key: its index among a view's field names, none for
/// another key (whose value the caller then skips, see [`each_field`]).
struct Field(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for Field {
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Field {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: Error>(self, key: &str) -> Result<Option<usize>, E> {
        Ok(self.0.iter().position(|f| *f == key))
    }
}

/// Walk a map's entries: `read(i, map)` reads the value of the field
/// `names[i]` (with `map.next_value_seed`); other fields are skipped.
pub(crate) fn each_field<'de, A: MapAccess<'de>>(
    mut map: A,
    names: &'static [&'static str],
    mut read: impl FnMut(usize, &mut A) -> Result<(), A::Error>,
) -> Result<(), A::Error> {
    while let Some(field) = map.next_key_seed(Field(names))? {
        match field {
            Some(i) => read(i, &mut map)?,
            None => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    Ok(())
}
