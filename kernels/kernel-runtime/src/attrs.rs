//! Attributes by name, as tools pass them (`run-op`'s `--attr`, the registry's untyped entry):
//! the values, and the reader generated `Attrs::from_raw` uses, which rejects unknown names,
//! wrong kinds, out-of-range integers and values the manifest does not allow.

use crate::error::OpError;
pub use kernel_abi::AttrValue;

/// Reads typed attributes out of name/value pairs, rejecting unknown names.
pub struct RawAttrs<'a> {
    op: &'static str,
    values: &'a [(String, AttrValue)],
}

impl<'a> RawAttrs<'a> {
    /// Checks every name is one of `known` (the op's attributes).
    pub fn new(
        op: &'static str,
        values: &'a [(String, AttrValue)],
        known: &[&str],
    ) -> Result<Self, OpError> {
        for (name, _) in values {
            if !known.contains(&name.as_str()) {
                return Err(OpError::Attribute {
                    op,
                    attribute: name.clone(),
                    rule: format!("unknown attribute (known: {})", known.join(", ")),
                });
            }
        }
        Ok(RawAttrs { op, values })
    }

    fn get(&self, name: &str) -> Option<&'a AttrValue> {
        self.values
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    fn wrong(&self, name: &str, want: &str, got: &AttrValue) -> OpError {
        OpError::Attribute {
            op: self.op,
            attribute: name.to_owned(),
            rule: format!("expected {want}, got {} ({got})", got.kind()),
        }
    }

    /// A required attribute that was not given.
    pub fn missing(&self, name: &str) -> OpError {
        OpError::Attribute {
            op: self.op,
            attribute: name.to_owned(),
            rule: "required, but not given".to_owned(),
        }
    }

    /// An integer attribute, if given.
    pub fn int(&self, name: &str) -> Result<Option<i64>, OpError> {
        match self.get(name) {
            None => Ok(None),
            Some(AttrValue::Int(v)) => Ok(Some(*v)),
            Some(other) => Err(self.wrong(name, "an integer", other)),
        }
    }

    /// A `u32` scalar argument, if given: an integer in `0..=u32::MAX`.
    pub fn uint32(&self, name: &str) -> Result<Option<u32>, OpError> {
        self.int_in(name, "an integer in 0..=4294967295")
    }

    /// An `i32` scalar argument, if given: an integer in `i32`'s range.
    pub fn int32(&self, name: &str) -> Result<Option<i32>, OpError> {
        self.int_in(name, "an integer in -2147483648..=2147483647")
    }

    fn int_in<T: TryFrom<i64>>(&self, name: &str, want: &str) -> Result<Option<T>, OpError> {
        match self.get(name) {
            None => Ok(None),
            Some(value @ AttrValue::Int(v)) => T::try_from(*v)
                .map(Some)
                .map_err(|_| self.wrong(name, want, value)),
            Some(other) => Err(self.wrong(name, want, other)),
        }
    }

    /// A boolean scalar argument, if given: `true`/`false`, or a 0/1 integer.
    pub fn boolean(&self, name: &str) -> Result<Option<bool>, OpError> {
        match self.get(name) {
            None => Ok(None),
            Some(AttrValue::Int(v @ (0 | 1))) => Ok(Some(*v == 1)),
            Some(AttrValue::Str(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
            Some(other) => Err(self.wrong(name, "a boolean (true, false, 0 or 1)", other)),
        }
    }

    /// A 0/1 flag; any non-zero integer reads as `true`, as ONNX kernels test `!= 0`.
    pub fn flag(&self, name: &str) -> Result<Option<bool>, OpError> {
        Ok(self.int(name)?.map(|v| v != 0))
    }

    /// A 0/1 flag, if given, whose integer must be one of `allowed` (so that `2` is rejected
    /// instead of reading as `true`).
    pub fn flag_in(&self, name: &str, allowed: &[i64]) -> Result<Option<bool>, OpError> {
        let Some(value) = self.int(name)? else {
            return Ok(None);
        };
        check_allowed(self.op, name, value, allowed)?;
        Ok(Some(value != 0))
    }

    /// A float attribute (integers convert), if given: finite and within `f32`'s range, so
    /// that `1e39` is an error rather than an infinity.
    pub fn float(&self, name: &str) -> Result<Option<f32>, OpError> {
        let value = match self.get(name) {
            None => return Ok(None),
            Some(AttrValue::Float(v)) => *v,
            Some(AttrValue::Int(v)) => *v as f64,
            Some(other) => return Err(self.wrong(name, "a float", other)),
        };
        let narrowed = value as f32;
        if !narrowed.is_finite() {
            return Err(self.wrong(
                name,
                "a finite float within f32's range",
                &AttrValue::Float(value),
            ));
        }
        Ok(Some(narrowed))
    }

    /// An integer-list attribute (a single integer is a list of one), if given.
    pub fn ints(&self, name: &str) -> Result<Option<Vec<i64>>, OpError> {
        match self.get(name) {
            None => Ok(None),
            Some(AttrValue::Ints(v)) => Ok(Some(v.clone())),
            Some(AttrValue::Int(v)) => Ok(Some(vec![*v])),
            Some(other) => Err(self.wrong(name, "an integer list", other)),
        }
    }

    /// A string attribute, if given.
    pub fn string(&self, name: &str) -> Result<Option<String>, OpError> {
        match self.get(name) {
            None => Ok(None),
            Some(AttrValue::Str(v)) => Ok(Some(v.clone())),
            Some(other) => Err(self.wrong(name, "a string", other)),
        }
    }
}

/// Checks an attribute against the manifest's `attributeConstraints.values`.
pub fn check_allowed(
    op: &'static str,
    name: &str,
    value: i64,
    allowed: &[i64],
) -> Result<(), OpError> {
    if allowed.contains(&value) {
        return Ok(());
    }
    let list: Vec<String> = allowed.iter().map(i64::to_string).collect();
    Err(OpError::Attribute {
        op,
        attribute: name.to_owned(),
        rule: format!(
            "value {value} is not allowed (allowed: {})",
            list.join(", ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::AttrValue;

    #[test]
    fn lists_are_parsed_strictly() {
        assert_eq!(
            AttrValue::parse("16,24,24"),
            AttrValue::Ints(vec![16, 24, 24])
        );
        assert_eq!(
            AttrValue::parse("[16, 24,24]"),
            AttrValue::Ints(vec![16, 24, 24])
        );
        assert_eq!(AttrValue::parse("[]"), AttrValue::Ints(Vec::new()));
        assert_eq!(AttrValue::parse("[7]"), AttrValue::Ints(vec![7]));
        for malformed in ["[[2,3,3", "[1,2", "1,2]", "1,,2", "1,2,", "[[1]]", "[1;2]"] {
            assert_eq!(
                AttrValue::parse(malformed),
                AttrValue::Str(malformed.to_owned()),
                "{malformed}"
            );
        }
        assert_eq!(AttrValue::parse(" 3 "), AttrValue::Int(3));
        assert_eq!(AttrValue::parse("0.5"), AttrValue::Float(0.5));
    }
}
