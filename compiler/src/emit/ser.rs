//! A serde serializer into the canonical YAML tree.
//!
//! Consumes: any `Serialize` value, in practice the typed objects `lower` builds (k8s-openapi
//! structs for core kinds, `kube::kueue` structs for Kueue kinds). Produces: a [`Yaml`] tree for
//! the canonical writer in `yaml.rs`, which owns quoting and YAML 1.1 safety.
//!
//! Invariants:
//! - Struct fields and map entries keep the order the value serializes them in; an absent
//!   optional (`None`, unit) is left out of a mapping, never written as `null`.
//! - Only the shapes Kubernetes objects use are accepted: strings, integers, booleans,
//!   sequences, maps with string keys and structs. A float, a byte string, a `null` inside a
//!   sequence or a non-string key is an [`Error`], which `lower` reports as an internal error,
//!   because no object tenantc emits may hold one.

use serde::ser::{self, Serialize};

use super::yaml::{Key, Yaml};

/// A value that the canonical YAML tree cannot hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

/// Serializes `value` into a YAML tree.
pub fn to_yaml<T: Serialize + ?Sized>(value: &T) -> Result<Yaml, Error> {
    match value.serialize(Serializer)? {
        Some(yaml) => Ok(yaml),
        None => Err(Error("the object serialized to nothing".to_string())),
    }
}

/// The serializer; `None` stands for an absent value.
struct Serializer;

fn unsupported<T>(what: &str) -> Result<T, Error> {
    Err(Error(format!("{what} cannot be written to a manifest")))
}

impl ser::Serializer for Serializer {
    type Ok = Option<Yaml>;
    type Error = Error;
    type SerializeSeq = SeqBuilder;
    type SerializeTuple = SeqBuilder;
    type SerializeTupleStruct = SeqBuilder;
    type SerializeTupleVariant = ser::Impossible<Option<Yaml>, Error>;
    type SerializeMap = MapBuilder;
    type SerializeStruct = MapBuilder;
    type SerializeStructVariant = ser::Impossible<Option<Yaml>, Error>;

    fn serialize_bool(self, v: bool) -> Result<Self::Ok, Error> {
        Ok(Some(Yaml::Bool(v)))
    }
    fn serialize_i8(self, v: i8) -> Result<Self::Ok, Error> {
        Ok(Some(Yaml::Int(v.into())))
    }
    fn serialize_i16(self, v: i16) -> Result<Self::Ok, Error> {
        Ok(Some(Yaml::Int(v.into())))
    }
    fn serialize_i32(self, v: i32) -> Result<Self::Ok, Error> {
        Ok(Some(Yaml::Int(v.into())))
    }
    fn serialize_i64(self, v: i64) -> Result<Self::Ok, Error> {
        Ok(Some(Yaml::Int(v)))
    }
    fn serialize_u8(self, v: u8) -> Result<Self::Ok, Error> {
        Ok(Some(Yaml::Int(v.into())))
    }
    fn serialize_u16(self, v: u16) -> Result<Self::Ok, Error> {
        Ok(Some(Yaml::Int(v.into())))
    }
    fn serialize_u32(self, v: u32) -> Result<Self::Ok, Error> {
        Ok(Some(Yaml::Int(v.into())))
    }
    fn serialize_u64(self, v: u64) -> Result<Self::Ok, Error> {
        match i64::try_from(v) {
            Ok(v) => Ok(Some(Yaml::Int(v))),
            Err(_) => unsupported("an integer above i64"),
        }
    }
    fn serialize_f32(self, _v: f32) -> Result<Self::Ok, Error> {
        unsupported("a floating-point number")
    }
    fn serialize_f64(self, _v: f64) -> Result<Self::Ok, Error> {
        unsupported("a floating-point number")
    }
    fn serialize_char(self, v: char) -> Result<Self::Ok, Error> {
        Ok(Some(Yaml::Str(v.to_string())))
    }
    fn serialize_str(self, v: &str) -> Result<Self::Ok, Error> {
        Ok(Some(Yaml::Str(v.to_string())))
    }
    fn serialize_bytes(self, _v: &[u8]) -> Result<Self::Ok, Error> {
        unsupported("a byte string")
    }
    fn serialize_none(self) -> Result<Self::Ok, Error> {
        Ok(None)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Self::Ok, Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Self::Ok, Error> {
        Ok(None)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Self::Ok, Error> {
        Ok(None)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Self::Ok, Error> {
        Ok(Some(Yaml::Str(variant.to_string())))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Self::Ok, Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Self::Ok, Error> {
        let inner = value.serialize(Serializer)?;
        Ok(Some(Yaml::Map(
            inner
                .map(|inner| (Key::Borrowed(variant), inner))
                .into_iter()
                .collect(),
        )))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Ok(SeqBuilder(Vec::with_capacity(len.unwrap_or(0))))
    }
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, Error> {
        Ok(SeqBuilder(Vec::with_capacity(len)))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Ok(SeqBuilder(Vec::with_capacity(len)))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        unsupported("a tuple variant")
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Ok(MapBuilder {
            pairs: Vec::with_capacity(len.unwrap_or(0)),
            key: None,
        })
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, Error> {
        Ok(MapBuilder {
            pairs: Vec::with_capacity(len),
            key: None,
        })
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        unsupported("a struct variant")
    }
}

/// Builds a sequence.
struct SeqBuilder(Vec<Yaml>);

impl SeqBuilder {
    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match value.serialize(Serializer)? {
            Some(item) => {
                self.0.push(item);
                Ok(())
            }
            None => unsupported("a null item in a list"),
        }
    }
}

impl ser::SerializeSeq for SeqBuilder {
    type Ok = Option<Yaml>;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Result<Self::Ok, Error> {
        Ok(Some(Yaml::Seq(self.0)))
    }
}

impl ser::SerializeTuple for SeqBuilder {
    type Ok = Option<Yaml>;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Result<Self::Ok, Error> {
        Ok(Some(Yaml::Seq(self.0)))
    }
}

impl ser::SerializeTupleStruct for SeqBuilder {
    type Ok = Option<Yaml>;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Result<Self::Ok, Error> {
        Ok(Some(Yaml::Seq(self.0)))
    }
}

/// Builds a mapping; absent values are left out.
struct MapBuilder {
    pairs: Vec<(Key, Yaml)>,
    key: Option<String>,
}

impl MapBuilder {
    fn insert<T: Serialize + ?Sized>(&mut self, key: Key, value: &T) -> Result<(), Error> {
        if let Some(value) = value.serialize(Serializer)? {
            self.pairs.push((key, value));
        }
        Ok(())
    }
}

impl ser::SerializeMap for MapBuilder {
    type Ok = Option<Yaml>;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        match key.serialize(Serializer)? {
            Some(Yaml::Str(key)) => {
                self.key = Some(key);
                Ok(())
            }
            _ => unsupported("a mapping key that is not a string"),
        }
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match self.key.take() {
            Some(key) => self.insert(Key::Owned(key), value),
            None => unsupported("a mapping value without a key"),
        }
    }
    fn end(self) -> Result<Self::Ok, Error> {
        Ok(Some(Yaml::Map(self.pairs)))
    }
}

impl ser::SerializeStruct for MapBuilder {
    type Ok = Option<Yaml>;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.insert(Key::Borrowed(key), value)
    }
    fn end(self) -> Result<Self::Ok, Error> {
        Ok(Some(Yaml::Map(self.pairs)))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Serialize;

    use super::*;

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Sample {
        api_version: &'static str,
        absent: Option<String>,
        count: i32,
        flag: bool,
        labels: BTreeMap<String, String>,
        items: Vec<Policy>,
    }

    #[derive(Serialize)]
    enum Policy {
        LowerPriority,
    }

    #[test]
    fn keeps_field_order_and_leaves_out_absent_values() {
        let sample = Sample {
            api_version: "v1",
            absent: None,
            count: 3,
            flag: false,
            labels: BTreeMap::from([("b".to_string(), "2".to_string()), ("a".into(), "1".into())]),
            items: vec![Policy::LowerPriority],
        };
        assert_eq!(
            to_yaml(&sample),
            Ok(Yaml::map([
                ("apiVersion", Yaml::str("v1")),
                ("count", Yaml::Int(3)),
                ("flag", Yaml::Bool(false)),
                (
                    "labels",
                    Yaml::map([("a", Yaml::str("1")), ("b", Yaml::str("2"))])
                ),
                ("items", Yaml::Seq(vec![Yaml::str("LowerPriority")])),
            ]))
        );
    }

    #[test]
    fn refuses_shapes_no_manifest_holds() {
        assert!(to_yaml(&1.5_f64).is_err());
        assert!(to_yaml(&vec![None::<String>]).is_err());
        assert!(to_yaml(&BTreeMap::from([(1, 2)])).is_err());
        assert!(to_yaml(&u64::MAX).is_err());
        assert!(to_yaml(&()).is_err());
    }

    #[test]
    fn serializes_typed_core_objects() {
        use k8s_openapi::api::core::v1::Namespace;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some("team-a".to_string()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        assert_eq!(
            to_yaml(&namespace),
            Ok(Yaml::map([
                ("apiVersion", Yaml::str("v1")),
                ("kind", Yaml::str("Namespace")),
                ("metadata", Yaml::map([("name", Yaml::str("team-a"))])),
            ]))
        );
    }
}
