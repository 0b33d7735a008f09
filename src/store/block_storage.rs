//! Where a table's sealed text blocks can live outside memory: the host's
//! storage (the edge worker's SQLite), under keys the core chooses. A block
//! handed over is read back only for the rows logs.all returns, and is
//! checked against the length and XXH3 the arena keeps for it, so a stale or
//! damaged stored block reads as damaged, never as another block's text.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// A host's storage for sealed text blocks.
pub trait BlockStorage {
    /// Keeps `bytes` under `key` (replacing what was there); `false` when it
    /// could not, and the block then stays in memory.
    fn put(&self, key: u64, bytes: &[u8]) -> bool;
    /// The bytes kept under `key`; `None` when there are none or they cannot
    /// be read.
    fn get(&self, key: u64) -> Option<Vec<u8>>;
}

/// A shared handle to a host's block storage (`Send`, as a service is).
#[derive(Clone)]
pub struct BlockStorageRef(pub Arc<dyn BlockStorage + Send + Sync>);

impl std::fmt::Debug for BlockStorageRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BlockStorageRef")
    }
}

/// The tables whose text can be stored, each a tag of its blocks' keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextTable {
    Edge = 0,
    Other = 1,
}

/// The key of `block` of `table`'s text: below 2^34, so exact as a JS number.
pub fn block_key(table: TextTable, block: u32) -> u64 {
    u64::from(block) << 2 | table as u64
}

/// Block storage in a map: for Rust hosts and tests.
#[derive(Default)]
pub struct MemoryBlocks {
    blocks: Mutex<HashMap<u64, Vec<u8>>>,
}

impl MemoryBlocks {
    fn blocks(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Vec<u8>>> {
        self.blocks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn len(&self) -> usize {
        self.blocks().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Changes the block under `key` with `change` (a test's damage).
    pub fn change(&self, key: u64, change: impl FnOnce(&mut Vec<u8>)) {
        if let Some(bytes) = self.blocks().get_mut(&key) {
            change(bytes);
        }
    }

    pub fn keys(&self) -> Vec<u64> {
        self.blocks().keys().copied().collect()
    }
}

impl BlockStorage for MemoryBlocks {
    fn put(&self, key: u64, bytes: &[u8]) -> bool {
        self.blocks().insert(key, bytes.to_vec());
        true
    }

    fn get(&self, key: u64) -> Option<Vec<u8>> {
        self.blocks().get(&key).cloned()
    }
}
