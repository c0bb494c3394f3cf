//! The Hub dialect's values that take more than one JSON form, read by hand so that a wrong
//! form says what the dialect expects (and, for the spec 2.0 draft's bare values, what to
//! write instead) and an error inside an object keeps its JSON path: objects are handed on
//! through the path-tracking map, never through an intermediate `Value`.

use std::fmt;
use std::marker::PhantomData;

use indexmap::IndexMap;
use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::draft;
use super::{
    Arg, Attribute, BindingRef, Buffer, DeriveValue, Dispatch, FieldType, IntOrExpr, Narrowing,
    Tunable,
};

/// Reads an object as `T`; any other value is `bare`, the draft's spelling.
struct ObjectOnly<T> {
    bare: &'static str,
    expecting: &'static str,
    marker: PhantomData<T>,
}

impl<T> ObjectOnly<T> {
    fn new(bare: &'static str, expecting: &'static str) -> Self {
        ObjectOnly {
            bare,
            expecting,
            marker: PhantomData,
        }
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectOnly<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expecting)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<T, E> {
        Err(E::custom(self.bare))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<T, E> {
        Err(E::custom(self.bare))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<T, E> {
        Err(E::custom(self.bare))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<T, E> {
        Err(E::custom(self.bare))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<T, E> {
        Err(E::custom(self.bare))
    }
    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Err(E::custom(self.bare))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<T, A::Error> {
        Err(de::Error::custom(self.bare))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AttributeFields {
    default: Value,
    #[serde(default)]
    description: Option<String>,
}

impl<'de> Deserialize<'de> for Attribute {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let visitor =
            ObjectOnly::<AttributeFields>::new(draft::BARE_VALUE, "{default, description?}");
        let fields = deserializer.deserialize_any(visitor)?;
        Ok(Attribute {
            default: fields.default,
            description: fields.description,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TunableFields {
    default: i64,
    #[serde(default)]
    description: Option<String>,
}

impl<'de> Deserialize<'de> for Tunable {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let visitor =
            ObjectOnly::<TunableFields>::new(draft::BARE_VALUE, "{default, description?}");
        let fields = deserializer.deserialize_any(visitor)?;
        Ok(Tunable {
            default: fields.default,
            description: fields.description,
        })
    }
}

/// Reads an argument's object, refusing `kind: "tensor"` at the `kind` key.
struct ArgVisitor;

impl<'de> Visitor<'de> for ArgVisitor {
    type Value = Arg;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an argument object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Arg, A::Error> {
        let mut entries = IndexMap::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = if key == "kind" {
                map.next_value_seed(Kind)?
            } else {
                map.next_value::<Value>()?
            };
            entries.insert(key, value);
        }
        Ok(Arg(entries))
    }
}

/// An argument's `kind`: anything but `"tensor"`.
struct Kind;

impl<'de> DeserializeSeed<'de> for Kind {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        let kind = Value::deserialize(deserializer)?;
        if kind == "tensor" {
            return Err(de::Error::custom(draft::TENSOR_ARG));
        }
        Ok(kind)
    }
}

impl<'de> Deserialize<'de> for Arg {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ArgVisitor)
    }
}

struct DeriveVisitor;

impl<'de> Visitor<'de> for DeriveVisitor {
    type Value = DeriveValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an expression string, a number, a boolean or a list of expression strings")
    }
    fn visit_str<E: de::Error>(self, text: &str) -> Result<DeriveValue, E> {
        Ok(DeriveValue::Expr(text.to_owned()))
    }
    fn visit_bool<E: de::Error>(self, value: bool) -> Result<DeriveValue, E> {
        Ok(DeriveValue::Bool(value))
    }
    fn visit_i64<E: de::Error>(self, value: i64) -> Result<DeriveValue, E> {
        Ok(DeriveValue::Int(value))
    }
    fn visit_u64<E: de::Error>(self, value: u64) -> Result<DeriveValue, E> {
        i64::try_from(value)
            .map(DeriveValue::Int)
            .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(value), &"an integer of i64"))
    }
    fn visit_f64<E: de::Error>(self, value: f64) -> Result<DeriveValue, E> {
        Ok(DeriveValue::Float(value))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<DeriveValue, A::Error> {
        let mut list = Vec::new();
        while let Some(element) = seq.next_element::<String>()? {
            list.push(element);
        }
        Ok(DeriveValue::List(list))
    }
}

impl<'de> Deserialize<'de> for DeriveValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DeriveVisitor)
    }
}

struct IntOrExprVisitor;

impl<'de> Visitor<'de> for IntOrExprVisitor {
    type Value = IntOrExpr;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a non-negative integer or an expression string")
    }
    fn visit_str<E: de::Error>(self, text: &str) -> Result<IntOrExpr, E> {
        Ok(IntOrExpr::Expr(text.to_owned()))
    }
    fn visit_u64<E: de::Error>(self, value: u64) -> Result<IntOrExpr, E> {
        Ok(IntOrExpr::Int(value))
    }
    fn visit_i64<E: de::Error>(self, value: i64) -> Result<IntOrExpr, E> {
        u64::try_from(value)
            .map(IntOrExpr::Int)
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(value), &self))
    }
}

impl<'de> Deserialize<'de> for IntOrExpr {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IntOrExprVisitor)
    }
}

struct BindingRefVisitor;

impl<'de> Visitor<'de> for BindingRefVisitor {
    type Value = BindingRef;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the name of a binding handle or an inline binding object")
    }
    fn visit_str<E: de::Error>(self, handle: &str) -> Result<BindingRef, E> {
        Ok(BindingRef::Handle(handle.to_owned()))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<BindingRef, A::Error> {
        Deserialize::deserialize(MapAccessDeserializer::new(map)).map(BindingRef::Inline)
    }
}

impl<'de> Deserialize<'de> for BindingRef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(BindingRefVisitor)
    }
}

/// A dispatch's keys as written, before its form is known.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    rename_all = "camelCase",
    expecting = "a dispatch object: {x, y?, z?}, {threads, workgroupSize} or {workgroups}"
)]
struct DispatchFields {
    #[serde(default)]
    x: Option<IntOrExpr>,
    #[serde(default)]
    y: Option<IntOrExpr>,
    #[serde(default)]
    z: Option<IntOrExpr>,
    #[serde(default)]
    threads: Option<IntOrExpr>,
    #[serde(default)]
    workgroup_size: Option<IntOrExpr>,
    #[serde(default)]
    workgroups: Option<IntOrExpr>,
}

impl DispatchFields {
    /// The one form the keys make: pinned axes, or one shorthand alone.
    fn form(self) -> Result<Dispatch, &'static str> {
        let pinned = self.x.is_some() || self.y.is_some() || self.z.is_some();
        let threads = self.threads.is_some() || self.workgroup_size.is_some();
        let workgroups = self.workgroups.is_some();
        if pinned && (threads || workgroups) {
            return Err(
                "pinned axes (x, y, z) cannot be mixed with a shorthand ({threads, workgroupSize} or {workgroups})",
            );
        }
        if threads && workgroups {
            return Err("write one shorthand, {threads, workgroupSize} or {workgroups}, not both");
        }
        match self {
            DispatchFields {
                x: Some(x), y, z, ..
            } => Ok(Dispatch::Grid { x, y, z }),
            _ if pinned => Err("a dispatch with pinned axes needs x (y and z default to 1)"),
            DispatchFields {
                threads: Some(threads),
                workgroup_size: Some(workgroup_size),
                ..
            } => Ok(Dispatch::Threads {
                threads,
                workgroup_size,
            }),
            _ if threads => Err("the threads shorthand needs both threads and workgroupSize"),
            DispatchFields {
                workgroups: Some(workgroups),
                ..
            } => Ok(Dispatch::Workgroups(workgroups)),
            _ => Err(
                "a dispatch needs x (y and z default to 1), {threads, workgroupSize} or {workgroups}",
            ),
        }
    }
}

impl<'de> Deserialize<'de> for Dispatch {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        DispatchFields::deserialize(deserializer)?
            .form()
            .map_err(de::Error::custom)
    }
}

/// The string enums: one of the names, a JSON string (the enum form serde would also take,
/// a one-key object, is not the dialect's).
macro_rules! names {
    ($type:ty, $what:literal, $($name:literal => $value:expr),+ $(,)?) => {
        impl TryFrom<String> for $type {
            type Error = String;

            fn try_from(text: String) -> Result<Self, String> {
                match text.as_str() {
                    $($name => Ok($value),)+
                    _ => Err(format!(
                        concat!("unknown ", $what, " `{}` (known: ", names!(@list $($name),+), ")"),
                        text
                    )),
                }
            }
        }
    };
    (@list $first:literal $(, $rest:literal)*) => { concat!($first $(, ", ", $rest)*) };
}

names!(Buffer, "buffer access", "storage" => Buffer::Storage, "read-only-storage" => Buffer::ReadOnlyStorage);
names!(FieldType, "uniform field type", "u32" => FieldType::U32, "i32" => FieldType::I32, "f32" => FieldType::F32);
names!(Narrowing, "narrowing", "checked" => Narrowing::Checked, "saturating" => Narrowing::Saturating);
