//! Blocks that straddle shard boundaries (the reduction's tiles, the scan's groups of tiles):
//! each is handled whole by the rank that holds its first element, which gathers the pieces
//! the next ranks hold. Every rank sends its *head piece* (the part of its shard in a block
//! begun on an earlier rank: less than one block) to all.

use crate::error::{Error, Result, plural};

use super::exchange::{from_words, to_words};
use super::{MultiContext, ShardElement, ShardedBuffer};

/// Rank `r`'s head piece for blocks of `l` elements: global indices `[offset, end)` of its
/// shard, empty when the shard starts a block (or is empty).
pub(super) fn head<T>(b: &ShardedBuffer<T>, r: usize, l: u64) -> (u64, u64) {
    let (s, e) = (b.offsets[r] as u64, (b.offsets[r] + b.lengths[r]) as u64);
    let end = e.min(s.div_ceil(l) * l);
    if s % l != 0 && end > s {
        (s, end)
    } else {
        (s, s)
    }
}

impl MultiContext {
    /// Every rank's head piece for blocks of `l` elements, on every rank, in rank order.
    pub(super) fn gather_heads<T: ShardElement>(
        &self,
        b: &ShardedBuffer<T>,
        l: u64,
    ) -> Result<Vec<Vec<T>>> {
        let mut heads = Vec::with_capacity(self.local.len());
        for ((r, ctx), (buf, pad)) in self.local.iter().zip(&b.shards) {
            let (s, end) = head(b, *r, l);
            heads.push(if end > s {
                to_words(&ctx.dtoh(buf.view(*pad..*pad + (end - s) as usize)?)?)
            } else {
                Vec::new()
            });
        }
        self.exchange
            .all_gather(heads)?
            .iter()
            .map(|w| from_words::<T>(w))
            .collect()
    }
}

/// Block `t` whole (`want` elements; `block` names it in the error) on rank `r`: `tail`
/// (rank `r`'s elements from the block's start on), then the head pieces of the next ranks, or
/// an error when they fall short.
pub(super) fn complete<T: Copy>(
    r: usize,
    (block, t): (&str, u64),
    mut tail: Vec<T>,
    heads: &[Vec<T>],
    want: usize,
) -> Result<Vec<T>> {
    for h in heads.iter().skip(r + 1) {
        if tail.len() >= want {
            break;
        }
        tail.extend_from_slice(&h[..h.len().min(want - tail.len())]);
    }
    if tail.len() != want {
        return Err(Error::Collective(format!(
            "rank {r} gathered {} of {block} {t}'s {}",
            tail.len(),
            plural(want as u64, "element")
        )));
    }
    Ok(tail)
}
