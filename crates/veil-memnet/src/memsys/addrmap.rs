//! Physical address -> (module, vault, layer, bank, row, column) by a named field order such
//! as the ghost routing paper's `RW:VL:CB:LY:CLL` (row, vault, cube, layer, byte offset in
//! the line; most significant field first).
//!
//! Fields are decoded as a mixed-radix number from the right, so module counts that are not
//! powers of two (a 72-router dragonfly) still map every address once. `BK` (bank within a
//! layer) and `CL` (line within a row) may be named; when they are not, they are the low
//! digits of `RW`, which is what a row field that "covers the rest" means.

use crate::error::ConfigError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Row,
    Vault,
    Cube,
    Layer,
    Bank,
    Column,
    Offset,
}

/// Where one line lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Location {
    pub module: u32,
    pub vault: u32,
    /// Bank within the vault (layer * banks_per_layer + bank).
    pub bank: u32,
    pub row: u64,
    pub column: u32,
}

#[derive(Clone, Debug)]
pub struct AddressMap {
    order: Vec<(Field, u64)>,
    pub capacity: u64,
    banks_per_layer: u64,
    lines_per_row: u64,
}

/// Geometry the mapping decodes into.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    pub modules: u64,
    pub vaults: u64,
    pub layers: u64,
    pub banks_per_layer: u64,
    pub rows_per_bank: u64,
    pub lines_per_row: u64,
    pub line_bytes: u64,
}

impl AddressMap {
    pub fn new(spec: &str, g: Geometry) -> Result<Self, ConfigError> {
        let bad = |m: String| Err(ConfigError(format!("module.address_mapping '{spec}': {m}")));
        let mut fields = Vec::new();
        for tok in spec.split(':') {
            let f = match tok.trim().to_ascii_uppercase().as_str() {
                "RW" => Field::Row,
                "VL" => Field::Vault,
                "CB" => Field::Cube,
                "LY" => Field::Layer,
                "BK" => Field::Bank,
                "CL" => Field::Column,
                "CLL" => Field::Offset,
                other => return bad(format!("unknown field '{other}' (RW, VL, CB, LY, BK, CL, CLL)")),
            };
            if fields.contains(&f) {
                return bad(format!("field '{tok}' appears twice"));
            }
            fields.push(f);
        }
        for (f, name) in [(Field::Row, "RW"), (Field::Vault, "VL"), (Field::Cube, "CB"), (Field::Layer, "LY"), (Field::Offset, "CLL")] {
            if !fields.contains(&f) {
                return bad(format!("does not cover the address bits: field {name} is missing"));
            }
        }
        let has_bank = fields.contains(&Field::Bank);
        let has_col = fields.contains(&Field::Column);
        let row_digits = g.rows_per_bank
            * if has_bank { 1 } else { g.banks_per_layer }
            * if has_col { 1 } else { g.lines_per_row };
        let order = fields
            .iter()
            .map(|&f| {
                let n = match f {
                    Field::Row => row_digits,
                    Field::Vault => g.vaults,
                    Field::Cube => g.modules,
                    Field::Layer => g.layers,
                    Field::Bank => g.banks_per_layer,
                    Field::Column => g.lines_per_row,
                    Field::Offset => g.line_bytes,
                };
                (f, n)
            })
            .rev()
            .collect::<Vec<_>>();
        let capacity = order.iter().map(|&(_, n)| n).product();
        Ok(Self { order, capacity, banks_per_layer: g.banks_per_layer, lines_per_row: g.lines_per_row })
    }

    /// Decodes an address below `capacity` (callers check the bound once per trace).
    pub fn decode(&self, addr: u64) -> Location {
        let mut x = addr;
        let (mut layer, mut bank, mut row, mut column) = (0u64, None, 0u64, None);
        let mut loc = Location::default();
        for &(f, n) in &self.order {
            let d = x % n;
            x /= n;
            match f {
                Field::Row => row = d,
                Field::Vault => loc.vault = d as u32,
                Field::Cube => loc.module = d as u32,
                Field::Layer => layer = d,
                Field::Bank => bank = Some(d),
                Field::Column => column = Some(d),
                Field::Offset => {}
            }
        }
        // Row digits not claimed by named BK / CL fields: column lowest, then bank.
        let lines = self.lines_per_row_in_row();
        let col = match column {
            Some(c) => c,
            None => {
                let c = row % lines;
                row /= lines;
                c
            }
        };
        let b = match bank {
            Some(b) => b,
            None => {
                let b = row % self.banks_per_layer;
                row /= self.banks_per_layer;
                b
            }
        };
        loc.bank = (layer * self.banks_per_layer + b) as u32;
        loc.row = row;
        loc.column = col as u32;
        loc
    }

    /// A line address with every field drawn by `digit(n)` (uniform in 0..n) except the
    /// cube, which is `module` when given; byte offset 0. Synthetic workloads use it.
    pub fn compose(&self, module: Option<u64>, digit: &mut dyn FnMut(u64) -> u64) -> u64 {
        let mut addr = 0u64;
        let mut scale = 1u64;
        for &(f, n) in &self.order {
            let d = match (f, module) {
                (Field::Offset, _) => 0,
                (Field::Cube, Some(m)) => m,
                _ => digit(n),
            };
            addr += d * scale;
            scale *= n;
        }
        addr
    }

    fn lines_per_row_in_row(&self) -> u64 {
        if self.order.iter().any(|&(f, _)| f == Field::Column) {
            1
        } else {
            self.lines_per_row
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo() -> Geometry {
        Geometry { modules: 4, vaults: 16, layers: 4, banks_per_layer: 2, rows_per_bank: 1024, lines_per_row: 4, line_bytes: 64 }
    }

    #[test]
    fn every_line_has_one_place() {
        let m = AddressMap::new("RW:VL:CB:LY:CLL", Geometry { rows_per_bank: 2, ..geo() }).unwrap();
        let mut seen = std::collections::HashSet::new();
        for line in 0..m.capacity / 64 {
            let l = m.decode(line * 64);
            assert!(seen.insert((l.module, l.vault, l.bank, l.row, l.column)));
            assert!(l.module < 4 && l.vault < 16 && l.bank < 8 && l.row < 2 && l.column < 4);
        }
    }

    #[test]
    fn consecutive_lines_change_layer_then_cube() {
        let m = AddressMap::new("RW:VL:CB:LY:CLL", geo()).unwrap();
        let a = m.decode(0);
        let b = m.decode(64);
        assert_eq!((a.module, a.bank / 2), (0, 0));
        assert_eq!((b.module, b.bank / 2), (0, 1));
        assert_eq!(m.decode(4 * 64).module, 1);
        assert_eq!(m.capacity, 4 * 16 * 4 * 2 * 1024 * 4 * 64);
    }

    #[test]
    fn missing_field_is_bad_input() {
        let e = AddressMap::new("RW:VL:LY:CLL", geo()).unwrap_err();
        assert!(e.0.contains("does not cover the address bits: field CB"), "{e}");
        assert!(AddressMap::new("RW:VL:CB:LY:XX", geo()).is_err());
    }
}
