//! Veil memcrypt: encrypted and authenticated memory with frequent-value ciphertext and MAC
//! speculation (Shi, Lee et al., *Accelerating memory decryption and authentication with
//! frequent value prediction*, CF 2007).
//!
//! | part | file |
//! |---|---|
//! | OCB-like direct mode (AES-128/256, TDES chunks), counter mode | [`mode`] |
//! | frequent value table (candidate filter + LRU table) | [`fvt`] |
//! | chunk re-ordering with the 8-bit bitmap | [`layout`] |
//! | bitmap cache, bitmap prefetchers, data TLB | [`bitmap`], [`prefetch`], [`tlb`] |
//! | functional encrypted memory and speculation engine, and its run over a stream | [`secure`], [`tree`], [`check`] |
//! | SDRAM, crypto engine pool | [`dram`], [`engines`] |
//! | interval-model timing over an L2 miss trace | [`sim`] |
//! | sampled simulation: windows warmed functionally, timed in parallel | [`sampled`], its plan [`sampling`] |
//! | configuration | [`config`] |
//! | the memory bus's view of a stream (leakage observer) | [`bus`] |
//! | synthetic miss streams for tests | [`synth`] |

// `usize::is_multiple_of` is newer than the workspace's rust-version (1.75); the chunk loops
// index several arrays by the same position, clearer than zipped iterators.
#![allow(clippy::manual_is_multiple_of, clippy::needless_range_loop)]

pub mod bitmap;
pub mod bus;
pub mod check;
pub mod config;
pub mod deps;
pub mod dram;
pub mod engines;
pub mod error;
pub mod fvt;
pub mod input;
pub mod layout;
pub mod mode;
pub mod prefetch;
pub mod record;
pub mod sampled;
pub mod sampling;
pub mod secure;
pub mod sim;
pub mod synth;
pub mod tlb;
pub mod tree;

pub use config::Config;
pub use error::{Error, Result};
pub use record::{Kind, Record};
pub use sim::{simulate, Results, Sim};
