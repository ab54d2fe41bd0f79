//! Kubernetes resource quantities (`500m`, `2Gi`, `1e3`).
//!
//! Consumes: quantity strings from declarations. Produces: [`Quantity`] values that print in the
//! canonical form the API server stores, so `out/` never differs from what a cluster shows
//! (`2048Mi` is written `2Gi`, `0.5` is written `500m`).
//!
//! Invariant: values are exact at milli precision; anything finer, or too large for the API's
//! int64 range, is rejected rather than rounded.

use std::fmt;

/// How a quantity was written, which decides its canonical suffix family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Format {
    /// Powers of 1024: `Ki`, `Mi`, `Gi`, `Ti`, `Pi`, `Ei`.
    BinarySi,
    /// Powers of 1000: `m`, ``, `k`, `M`, `G`, `T`, `P`, `E`.
    DecimalSi,
    /// Scientific: `1e3`.
    DecimalExponent,
}

/// An exact quantity at milli precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Quantity {
    milli: i128,
    format: Format,
}

/// Why a string is not a quantity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuantityError {
    /// The text does not follow the quantity grammar.
    Syntax,
    /// The value has precision finer than `1m`.
    TooPrecise,
    /// The value does not fit the API's range.
    TooLarge,
}

impl fmt::Display for QuantityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QuantityError::Syntax => {
                "not a quantity: write a number with an optional suffix such as `500m`, `4`, `16Gi` or `1e3`"
            }
            QuantityError::TooPrecise => "quantities are exact to 1m; this one is finer",
            QuantityError::TooLarge => "quantity is too large",
        })
    }
}

const BINARY: [(&str, u32); 6] = [
    ("Ki", 1),
    ("Mi", 2),
    ("Gi", 3),
    ("Ti", 4),
    ("Pi", 5),
    ("Ei", 6),
];
const DECIMAL: [(&str, i32); 9] = [
    ("n", -9),
    ("u", -6),
    ("m", -3),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];
/// The largest value the API stores without loss, in milli units (int64 max).
const MAX_MILLI: i128 = (i64::MAX as i128) * 1000;

impl Quantity {
    /// A whole number, such as a device count.
    pub fn from_int(value: i64) -> Self {
        Self {
            milli: i128::from(value) * 1000,
            format: Format::DecimalSi,
        }
    }

    /// Parses a quantity string.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let (negative, rest) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text.strip_prefix('+').unwrap_or(text)),
        };
        let number_len = rest
            .find(|ch: char| !(ch.is_ascii_digit() || ch == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_len);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(QuantityError::Syntax);
        }
        let digits = format!("{whole}{fraction}");
        let mantissa: i128 = digits.parse().map_err(|_| QuantityError::TooLarge)?;
        let fraction_digits = i32::try_from(fraction.len()).map_err(|_| QuantityError::Syntax)?;

        // value = mantissa * 10^(exp10 - fraction_digits) * 1024^exp2
        let (format, exp10, exp2) = if suffix.is_empty() {
            (Format::DecimalSi, 0, 0)
        } else if let Some((_, power)) = BINARY.iter().find(|(name, _)| *name == suffix) {
            (Format::BinarySi, 0, *power)
        } else if let Some((_, power)) = DECIMAL.iter().find(|(name, _)| *name == suffix) {
            (Format::DecimalSi, *power, 0)
        } else if let Some(exponent) = suffix.strip_prefix(['e', 'E']) {
            let exponent: i32 = exponent.parse().map_err(|_| QuantityError::Syntax)?;
            if !(-30..=30).contains(&exponent) {
                return Err(QuantityError::TooLarge);
            }
            (Format::DecimalExponent, exponent, 0)
        } else {
            return Err(QuantityError::Syntax);
        };
        let mut numerator = mantissa
            .checked_mul(1024_i128.checked_pow(exp2).ok_or(QuantityError::TooLarge)?)
            .ok_or(QuantityError::TooLarge)?;
        // Milli units add three decimal places.
        let scale = exp10 + 3 - fraction_digits;
        if scale >= 0 {
            let factor = 10_i128
                .checked_pow(scale.unsigned_abs())
                .ok_or(QuantityError::TooLarge)?;
            numerator = numerator
                .checked_mul(factor)
                .ok_or(QuantityError::TooLarge)?;
        } else {
            let divisor = 10_i128
                .checked_pow(scale.unsigned_abs())
                .ok_or(QuantityError::TooPrecise)?;
            if numerator % divisor != 0 {
                return Err(QuantityError::TooPrecise);
            }
            numerator /= divisor;
        }
        if numerator > MAX_MILLI {
            return Err(QuantityError::TooLarge);
        }
        Ok(Self {
            milli: if negative { -numerator } else { numerator },
            format,
        })
    }

    /// A quantity of `milli` thousandths, printed in the suffix family of `format`; `None`
    /// outside the API's int64 range, which [`Quantity::parse`] also refuses.
    pub fn from_milli(milli: i128, format: Format) -> Option<Self> {
        (-MAX_MILLI..=MAX_MILLI)
            .contains(&milli)
            .then_some(Self { milli, format })
    }

    /// The value in thousandths.
    pub fn milli(&self) -> i128 {
        self.milli
    }

    /// The suffix family the quantity was written in, which its canonical form keeps.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Whether the value is a whole number.
    pub fn is_integer(&self) -> bool {
        self.milli % 1000 == 0
    }

    /// The sum of two quantities; the format of `self` is kept.
    pub fn saturating_add(self, other: Quantity) -> Quantity {
        Quantity {
            milli: self.milli.saturating_add(other.milli).min(MAX_MILLI),
            format: self.format,
        }
    }
}

impl fmt::Display for Quantity {
    /// The canonical form, as the API server prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.milli == 0 {
            return f.write_str("0");
        }
        let sign = if self.milli < 0 { "-" } else { "" };
        let magnitude = self.milli.abs();
        if self.format == Format::BinarySi && magnitude % 1000 == 0 && magnitude / 1000 >= 1024 {
            let mut units = magnitude / 1000;
            let mut suffix = "";
            for (name, _) in BINARY {
                if units % 1024 != 0 {
                    break;
                }
                units /= 1024;
                suffix = name;
            }
            return write!(f, "{sign}{units}{suffix}");
        }
        // Decimal: the largest exponent (a multiple of 3, from milli up) with an integer mantissa.
        let mut mantissa = magnitude;
        let mut exponent = -3;
        while mantissa % 1000 == 0 && exponent < 18 {
            mantissa /= 1000;
            exponent += 3;
        }
        match self.format {
            Format::DecimalExponent => {
                if exponent == 0 {
                    write!(f, "{sign}{mantissa}")
                } else {
                    write!(f, "{sign}{mantissa}e{exponent}")
                }
            }
            Format::DecimalSi | Format::BinarySi => {
                let suffix = match exponent {
                    -3 => "m",
                    0 => "",
                    3 => "k",
                    6 => "M",
                    9 => "G",
                    12 => "T",
                    15 => "P",
                    _ => "E",
                };
                write!(f, "{sign}{mantissa}{suffix}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(text: &str) -> String {
        Quantity::parse(text).unwrap().to_string()
    }

    #[test]
    fn prints_the_canonical_form_the_api_server_stores() {
        assert_eq!(canonical("2048Mi"), "2Gi");
        assert_eq!(canonical("1536Mi"), "1536Mi");
        assert_eq!(canonical("1024"), "1024");
        assert_eq!(canonical("1Ki"), "1Ki");
        assert_eq!(canonical("512Ki"), "512Ki");
        assert_eq!(canonical("0.5"), "500m");
        assert_eq!(canonical("1.5"), "1500m");
        assert_eq!(canonical("2000m"), "2");
        assert_eq!(canonical("1000"), "1k");
        assert_eq!(canonical("1500"), "1500");
        assert_eq!(canonical("1G"), "1G");
        assert_eq!(canonical("1e3"), "1e3");
        assert_eq!(canonical("0"), "0");
        assert_eq!(canonical("0Gi"), "0");
        assert_eq!(canonical("0.5Gi"), "512Mi");
        assert_eq!(canonical("64"), "64");
    }

    #[test]
    fn binary_values_below_one_kibibyte_print_as_decimal() {
        // The API server does the same: 512 bytes written as "0.5Ki" becomes "512".
        assert_eq!(canonical("0.5Ki"), "512");
    }

    #[test]
    fn rejects_what_the_api_would_not_store_exactly() {
        assert_eq!(Quantity::parse("1.5x"), Err(QuantityError::Syntax));
        assert_eq!(Quantity::parse(""), Err(QuantityError::Syntax));
        assert_eq!(Quantity::parse("."), Err(QuantityError::Syntax));
        assert_eq!(Quantity::parse("1.2.3"), Err(QuantityError::Syntax));
        assert_eq!(Quantity::parse("0.1m"), Err(QuantityError::TooPrecise));
        assert_eq!(Quantity::parse("100Ei"), Err(QuantityError::TooLarge));
        assert_eq!(Quantity::parse("1Gib"), Err(QuantityError::Syntax));
    }

    #[test]
    fn builds_from_milli_units_in_the_written_suffix_family() {
        let memory = Quantity::parse("12Ti").unwrap();
        let half = Quantity::from_milli(memory.milli() / 2, memory.format()).unwrap();
        assert_eq!(half.to_string(), "6Ti");
        let third = Quantity::from_milli(memory.milli() / 3, memory.format()).unwrap();
        assert_eq!(third.to_string(), "4Ti");
        let cpu = Quantity::parse("1536").unwrap();
        let part = Quantity::from_milli(cpu.milli() / 7, cpu.format()).unwrap();
        assert_eq!(part.to_string(), "219428m");
        assert_eq!(
            Quantity::from_milli(1_536_000, Format::BinarySi)
                .unwrap()
                .to_string(),
            "1536"
        );
        assert_eq!(
            Quantity::from_milli(MAX_MILLI, Format::DecimalSi).map(|q| q.milli()),
            Some(MAX_MILLI)
        );
        assert_eq!(Quantity::from_milli(MAX_MILLI + 1, Format::DecimalSi), None);
        assert_eq!(
            Quantity::from_milli(-MAX_MILLI - 1, Format::DecimalSi),
            None
        );
    }

    #[test]
    fn compares_across_suffixes() {
        assert!(Quantity::parse("1Gi").unwrap().milli() > Quantity::parse("1G").unwrap().milli());
        assert_eq!(
            Quantity::parse("1k").unwrap().milli(),
            Quantity::parse("1000").unwrap().milli()
        );
    }
}
