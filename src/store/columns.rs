//! Columns and the tables made of them. A table is declared once with
//! `table!`: each group of columns (the values a group's row gives each
//! column, and for names the part they point into), and its other parts. That
//! one list gives the struct, the append of a row, and each group's list of
//! columns, which reserving, permuting, sizing and the snapshot's writer,
//! reader and checks walk: a new column is one line of a table's declaration.

/// Capacity a column grows to so that `additional` more fit: an eighth again,
/// or exactly what is needed. One rule for
/// growing and for predicting growth, so the memory budget is checked
/// against what the store will really hold. An eighth leaves about 6% of a
/// store spare on average, where half again left 25%, for copying each value
/// about eight times as its column grows: a memcpy, cheap beside parsing it.
pub(crate) fn grown(len: usize, capacity: usize, additional: usize) -> usize {
    let needed = len.saturating_add(additional);
    if needed <= capacity {
        capacity
    } else {
        needed.max(capacity + capacity / 8)
    }
}

/// Capacity a vector (or string) of capacity `capacity` may reach when it
/// grows to `needed` one push at a time by `grown`'s rule: at most an eighth
/// more than it held when it last grew.
pub(crate) fn capacity_bound(capacity: usize, needed: usize) -> usize {
    if needed <= capacity {
        capacity
    } else {
        capacity.max(needed + needed / 8 + 1)
    }
}

pub(crate) fn grow<T>(column: &mut Vec<T>, additional: usize) {
    let target = grown(column.len(), column.capacity(), additional);
    column.reserve_exact(target - column.len());
}

/// Bytes by which `column` grows for `additional` more values.
fn growth<T>(column: &Vec<T>, additional: usize) -> usize {
    (grown(column.len(), column.capacity(), additional) - column.capacity())
        * std::mem::size_of::<T>()
}

/// Reorders `column` from position `from` on, so that `from + k` holds what
/// was at `order[k]` (every `order[k]` is `from` or more), in place: the
/// capacity is kept, so the memory budget's prediction holds.
///
/// `merged_from`: `order` merges the rows before it, in their order, with
/// the rows from it on. Each old row then moves only back, so the column is
/// written from its end with the new rows' values alone copied aside (a
/// batch, not the column: a copy of a large column left a hole as large in
/// memory at each reordering batch). Otherwise the tail is copied.
fn permute<T: Copy>(column: &mut [T], from: usize, order: &[u32], merged_from: Option<usize>) {
    let Some(tail) = column.get_mut(from..) else {
        return;
    };
    let (aside, aside_from) = match merged_from {
        Some(first_new) => (tail.get(first_new.saturating_sub(from)..), first_new),
        None => (Some(&tail[..]), from),
    };
    let aside = aside.unwrap_or_default().to_vec();
    for (k, &i) in order.iter().enumerate().rev() {
        let i = i as usize;
        let value = match i.checked_sub(aside_from) {
            Some(at) => aside.get(at).copied(),
            None => i.checked_sub(from).and_then(|at| tail.get(at)).copied(),
        };
        if let (Some(value), Some(slot)) = (value, tail.get_mut(k)) {
            *slot = value;
        }
    }
}

/// What a table does with every column alike, whatever its element type.
pub(crate) trait Column {
    /// Grows the capacity so that `additional` more fit (by `grown`'s rule).
    fn reserve_for(&mut self, additional: usize);
    /// Bytes by which the column grows for `additional` more values.
    fn growth_for(&self, additional: usize) -> usize;
    fn heap_bytes(&self) -> usize;
    /// Reorders the column from position `from` on, so that `from + k` holds
    /// what was at `order[k]`.
    fn permute(&mut self, from: usize, order: &[u32], merged_from: Option<usize>);
    fn len(&self) -> usize;
}

impl<T: Copy> Column for Vec<T> {
    fn reserve_for(&mut self, additional: usize) {
        grow(self, additional);
    }

    fn growth_for(&self, additional: usize) -> usize {
        growth(self, additional)
    }

    fn heap_bytes(&self) -> usize {
        self.capacity() * std::mem::size_of::<T>()
    }

    fn permute(&mut self, from: usize, order: &[u32], merged_from: Option<usize>) {
        permute(self, from, order, merged_from);
    }

    fn len(&self) -> usize {
        Vec::len(self)
    }
}

/// Sum of `f` over `columns`.
pub(crate) fn sum_columns(columns: Vec<&dyn Column>, f: impl Fn(&dyn Column) -> usize) -> usize {
    columns.into_iter().map(f).sum()
}

/// Whether every value of a column points into `part` (an id into its
/// interner, a span into its text); checked as a fold without branches,
/// since a snapshot is almost always valid.
pub(crate) trait PointsInto<Part> {
    fn all_point_into(values: &[Self], part: &Part) -> bool
    where
        Self: Sized;
}

/// Declares a table: `group` blocks list columns with the value a row of
/// that group gives each (`$t` is the table, `$row` the staged row) and, with
/// `[part]`, the part its values point into; `parts` lists the table's
/// other fields, declared as they are.
macro_rules! table {
    (
        $(#[$meta:meta])*
        pub struct $table:ident {
            $(
                group $list:ident, $list_mut:ident,
                    fn $push:ident($t:ident, $row:ident: &$staged:ty $(, $arg:ident: $argty:ty)*) {
                    $( $(#[$cmeta:meta])* $col:ident: $ty:ty $([$part:ident])? = $value:expr; )+
                }
            )+
            parts {
                $( $(#[$fmeta:meta])* $field:ident: $fty:ty, )*
            }
        }
    ) => {
        $(#[$meta])*
        #[derive(Default)]
        pub struct $table {
            $( $( $(#[$cmeta])* pub $col: Vec<$ty>, )+ )+
            $( $(#[$fmeta])* pub $field: $fty, )*
        }

        impl $table {
            $(
                fn $list(&self) -> Vec<&dyn $crate::store::columns::Column> {
                    vec![$(&self.$col),+]
                }

                fn $list_mut(&mut self) -> Vec<&mut dyn $crate::store::columns::Column> {
                    vec![$(&mut self.$col),+]
                }

                /// Appends one row of the group.
                fn $push($t: &mut Self, $row: &$staged $(, $arg: $argty)*) {
                    $(
                        let value = $value;
                        $t.$col.push(value);
                    )+
                }
            )+

            /// Writes every column, group by group, in declaration order.
            pub(crate) fn write_columns(&self, w: &mut $crate::store::codec::Writer) {
                $( $( w.column(&self.$col); )+ )+
            }

            /// Reads what `write_columns` wrote; the other parts are left empty.
            pub(crate) fn read_columns(
                r: &mut $crate::store::codec::Reader,
            ) -> $crate::error::Result<Self> {
                Ok($table {
                    $( $(
                        $col: r.column(concat!(stringify!($table), " column ", stringify!($col)))?,
                    )+ )+
                    ..Default::default()
                })
            }

            /// Whether each group's columns have one length and every value
            /// points into its part; what is wrong, if not.
            pub(crate) fn check_columns(&self) -> std::result::Result<(), String> {
                use $crate::store::columns::PointsInto;
                $(
                    let columns = self.$list();
                    let first = columns.first().map_or(0, |c| c.len());
                    if columns.iter().any(|c| c.len() != first) {
                        return Err(format!("{} of different lengths", stringify!($list)));
                    }
                    $( $(
                        if !<$ty as PointsInto<_>>::all_point_into(&self.$col, &self.$part) {
                            return Err(format!(
                                "{} points outside its {}",
                                stringify!($col),
                                stringify!($part)
                            ));
                        }
                    )? )+
                )+
                Ok(())
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permutation_puts_each_value_where_the_order_says_merged_or_not() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for len in [0usize, 1, 2, 3, 63, 64, 65, 1000] {
            for from in [0, len / 3, len] {
                let column: Vec<u64> = (0..len as u64).map(|v| v * 10).collect();
                let mut order: Vec<u32> = (from as u32..len as u32).collect();
                for i in (1..order.len()).rev() {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    order.swap(i, (seed % (i as u64 + 1)) as usize);
                }
                // `order` applied to the column, as `permute` should leave it.
                let check = |order: &[u32], merged_from: Option<usize>| {
                    let expected: Vec<u64> = column[..from]
                        .iter()
                        .copied()
                        .chain(order.iter().map(|&i| column[i as usize]))
                        .collect();
                    let mut permuted = column.clone();
                    permute(&mut permuted, from, order, merged_from);
                    assert_eq!(permuted, expected, "len {len} from {from}, {merged_from:?}");
                };
                check(&order, None);
                // As a merge: the old rows (before `first_new`) in their order.
                let first_new = from + (len - from) / 2;
                let (mut old, mut new): (Vec<u32>, Vec<u32>) =
                    order.iter().partition(|&&i| (i as usize) < first_new);
                old.sort_unstable();
                let merged: Vec<u32> = order
                    .iter()
                    .map(|&i| match (i as usize) < first_new {
                        true => old.remove(0),
                        false => new.remove(0),
                    })
                    .collect();
                check(&merged, Some(first_new));
            }
        }
    }
}
