//! Replies that fit in one gRPC message: the records that push an encoded reply past
//! the service's message limit are split off (invariant 9), so the caller can give
//! back what it cannot send instead of failing the whole reply.

use prost::Message;

/// Bytes a repeated message field adds per item beyond the item itself: its tag and
/// a length prefix of up to 5 bytes.
const ITEM_FRAMING: usize = 6;

/// Keeps the longest prefix of `items` that, as a repeated field, fits in `limit`
/// bytes (the first item is always kept: a lone oversized item is the limit's
/// problem, refused at startup), and returns the rest.
pub(super) fn fit<M: Message>(items: &mut Vec<M>, limit: usize) -> Vec<M> {
    fit_beside(items, limit, 0)
}

/// The same, in a reply that also carries `reserved` bytes of other fields: then even
/// the first item goes if it does not fit beside them.
pub(super) fn fit_beside<M: Message>(items: &mut Vec<M>, limit: usize, reserved: usize) -> Vec<M> {
    let mut used = reserved;
    let mut keep = items.len();
    for (i, item) in items.iter().enumerate() {
        used += item.encoded_len() + ITEM_FRAMING;
        if (i > 0 || reserved > 0) && used > limit {
            keep = i;
            break;
        }
    }
    items.split_off(keep)
}

#[cfg(test)]
mod tests {
    use super::{fit, fit_beside};
    use crate::proto;

    fn job(payload: usize) -> proto::ClaimedJob {
        proto::ClaimedJob {
            job_id: "j".into(),
            payload: vec![7; payload],
            ..Default::default()
        }
    }

    #[test]
    fn the_items_that_would_pass_the_limit_are_split_off() {
        let mut items = vec![job(400), job(400), job(400)];
        let rest = fit(&mut items, 1000);
        assert_eq!((items.len(), rest.len()), (2, 1));
        let reply = proto::ClaimJobResponse {
            jobs: items,
            acks: vec![],
        };
        assert!(prost::Message::encoded_len(&reply) <= 1000);
    }

    #[test]
    fn the_first_item_is_always_kept() {
        let mut items = vec![job(2000), job(10)];
        let rest = fit(&mut items, 1000);
        assert_eq!((items.len(), rest.len()), (1, 1));
        let mut all = vec![job(10), job(10)];
        assert!(fit(&mut all, 1000).is_empty());
    }

    #[test]
    fn beside_other_fields_even_the_first_item_may_go() {
        let mut items = vec![job(900)];
        let rest = fit_beside(&mut items, 1000, 200);
        assert_eq!((items.len(), rest.len()), (0, 1));
        let mut items = vec![job(100), job(100)];
        assert!(fit_beside(&mut items, 1000, 200).is_empty());
    }
}
