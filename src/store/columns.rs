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
fn permute<T: Copy>(column: &mut [T], from: usize, order: &[u32]) {
    let Some(tail) = column.get_mut(from..) else {
        return;
    };
    let before = tail.to_vec();
    for (slot, &i) in tail.iter_mut().zip(order) {
        if let Some(&value) = (i as usize).checked_sub(from).and_then(|k| before.get(k)) {
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
    fn permute(&mut self, from: usize, order: &[u32]);
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

    fn permute(&mut self, from: usize, order: &[u32]) {
        permute(self, from, order);
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
