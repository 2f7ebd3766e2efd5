//! `resource.Quantity.String()`: the canonical form upstream prints a quantity in after
//! decoding it (`1000` → `1k`, `1.5Gi` → `1536Mi`, `0.5` → `500m`). Stored objects keep the
//! text the client sent, so the printers canonicalise it themselves.

/// The canonical text of a quantity; the input unchanged when it does not parse.
pub fn canonical(s: &str) -> String {
    parse(s)
        .map(|q| q.to_string())
        .unwrap_or_else(|| s.to_string())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    BinarySi,
    DecimalSi,
    DecimalExponent,
}

/// value = mantissa × 10^scale, exactly.
struct Quantity {
    mantissa: i128,
    scale: i32,
    format: Format,
}

fn parse(s: &str) -> Option<Quantity> {
    let s = s.trim();
    let (negative, rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let number_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_end);
    if number.is_empty() || number == "." || number.matches('.').count() > 1 {
        return None;
    }
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    let digits = format!("{int_part}{frac_part}");
    let digits = digits.trim_start_matches('0');
    if digits.len() > 36 {
        return None;
    }
    let mut mantissa: i128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    let mut scale = 0i32.checked_sub(i32::try_from(frac_part.len()).ok()?)?;
    let format = match suffix {
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => {
            let power = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
                .iter()
                .position(|p| *p == suffix)? as u32;
            mantissa = mantissa.checked_mul(1i128.checked_shl(10u32.checked_mul(power)?)?)?;
            Format::BinarySi
        }
        "n" | "u" | "m" | "" | "k" | "M" | "G" | "T" | "P" | "E" => {
            scale = scale.checked_add(match suffix {
                "n" => -9,
                "u" => -6,
                "m" => -3,
                "" => 0,
                "k" => 3,
                "M" => 6,
                "G" => 9,
                "T" => 12,
                "P" => 15,
                _ => 18,
            })?;
            Format::DecimalSi
        }
        _ => {
            let exp = suffix.strip_prefix(['e', 'E'])?;
            scale = scale.checked_add(exp.parse::<i32>().ok()?)?;
            Format::DecimalExponent
        }
    };
    if negative {
        mantissa = mantissa.checked_neg()?;
    }
    // Precision below nano units is rounded up, as upstream does.
    if scale < -9 {
        let shift = 10i128.checked_pow(u32::try_from((-9i32).checked_sub(scale)?).ok()?)?;
        let (q, r) = (mantissa.checked_div(shift)?, mantissa.checked_rem(shift)?);
        mantissa = if r > 0 { q.checked_add(1)? } else { q };
        scale = -9;
    }
    Some(Quantity {
        mantissa,
        scale,
        format,
    })
}

impl std::fmt::Display for Quantity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.mantissa == 0 {
            return f.write_str("0");
        }
        let mut format = self.format;
        if format == Format::BinarySi {
            let integer = if self.scale >= 0 {
                10i128
                    .checked_pow(self.scale as u32)
                    .and_then(|p| self.mantissa.checked_mul(p))
            } else {
                None
            };
            let exact_integer = integer.or_else(|| {
                let p = 10i128.checked_pow(u32::try_from(self.scale.checked_neg()?).ok()?)?;
                (self.mantissa.checked_rem(p)? == 0).then(|| self.mantissa.checked_div(p))?
            });
            match exact_integer {
                // Small and fractional values read better in decimal.
                Some(v) if v.abs() >= 1024 => {
                    let (mut amount, mut power) = (v, 0usize);
                    while amount % 1024 == 0 && power < 6 {
                        amount /= 1024;
                        power = power.saturating_add(1);
                    }
                    let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
                        .get(power)
                        .copied()
                        .unwrap_or_default();
                    return write!(f, "{amount}{suffix}");
                }
                _ => format = Format::DecimalSi,
            }
        }
        let (mut amount, mut exponent) = (self.mantissa, self.scale);
        while amount % 10 == 0 {
            amount /= 10;
            exponent = exponent.saturating_add(1);
        }
        match exponent.rem_euclid(3) {
            1 => {
                amount = amount.saturating_mul(10);
                exponent = exponent.saturating_sub(1);
            }
            2 => {
                amount = amount.saturating_mul(100);
                exponent = exponent.saturating_sub(2);
            }
            _ => {}
        }
        if format == Format::DecimalExponent {
            return if exponent == 0 {
                write!(f, "{amount}")
            } else {
                write!(f, "{amount}e{exponent}")
            };
        }
        while exponent > 18 {
            amount = amount.saturating_mul(1000);
            exponent = exponent.saturating_sub(3);
        }
        let suffix = match exponent {
            -9 => "n",
            -6 => "u",
            -3 => "m",
            0 => "",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            _ => "E",
        };
        write!(f, "{amount}{suffix}")
    }
}

#[cfg(test)]
mod tests {
    use super::canonical;

    #[test]
    fn canonical_forms() {
        for (input, want) in [
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("1.5Gi", "1536Mi"),
            ("0.5Ki", "512"),
            ("100Mi", "100Mi"),
            ("1000", "1k"),
            ("1500m", "1500m"),
            ("0.5", "500m"),
            ("2", "2"),
            ("10G", "10G"),
            ("1e3", "1e3"),
            ("0", "0"),
            ("0Gi", "0"),
            ("-2Gi", "-2Gi"),
            ("0.0000000001", "1n"),
            ("abc", "abc"),
        ] {
            assert_eq!(canonical(input), want, "{input}");
        }
    }
}
