//! Shuffle sharding (`k8s.io/apiserver/pkg/util/shufflesharding`): a flow's hash value picks a
//! hand of distinct queues out of the deck, the same hand every time for the same hash.

use std::fmt;

/// The most hash bits a dealer may need (`MaxHashBits`).
pub const MAX_HASH_BITS: u32 = 60;

/// Deals hands of `hand_size` distinct cards out of `deck_size`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dealer {
    deck_size: u64,
    hand_size: u64,
}

/// Why a deck and hand size cannot be dealt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DealerError(String);

impl fmt::Display for DealerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DealerError {}

/// `RequiredEntropyBits`: `ceil(log2(deckSize) * handSize)`.
pub fn required_entropy_bits(deck_size: i32, hand_size: i32) -> f64 {
    (f64::from(deck_size).log2() * f64::from(hand_size)).ceil()
}

impl Dealer {
    /// `NewDealer`, with upstream's checks and messages.
    pub fn new(deck_size: i32, hand_size: i32) -> Result<Dealer, DealerError> {
        if deck_size <= 0 || hand_size <= 0 {
            return Err(DealerError(format!(
                "deckSize {deck_size} or handSize {hand_size} is not positive"
            )));
        }
        if hand_size > deck_size {
            return Err(DealerError(format!(
                "handSize {hand_size} is greater than deckSize {deck_size}"
            )));
        }
        if deck_size > 1 << 26 {
            return Err(DealerError(format!(
                "deckSize {deck_size} is impractically large"
            )));
        }
        if required_entropy_bits(deck_size, hand_size) > f64::from(MAX_HASH_BITS) {
            return Err(DealerError(format!(
                "required entropy bits of deckSize {deck_size} and handSize {hand_size} is greater than {MAX_HASH_BITS}"
            )));
        }
        Ok(Dealer {
            deck_size: deck_size.unsigned_abs().into(),
            hand_size: hand_size.unsigned_abs().into(),
        })
    }

    /// The hand for `hash_value`, in dealing order (`Deal`/`DealIntoHand`).
    pub fn deal(&self, mut hash_value: u64) -> Vec<usize> {
        let mut remainders: Vec<u64> = Vec::new();
        let mut left = self.deck_size;
        for _ in 0..self.hand_size {
            // `left` counts down from deck_size and stays above zero: hand_size <= deck_size.
            let next = hash_value.checked_div(left).unwrap_or(0);
            remainders.push(hash_value.checked_rem(left).unwrap_or(0));
            hash_value = next;
            left = left.saturating_sub(1);
        }
        let mut hand = Vec::with_capacity(remainders.len());
        for (i, &r) in remainders.iter().enumerate() {
            let mut card = r;
            for j in (1..=i).rev() {
                if remainders
                    .get(j.saturating_sub(1))
                    .is_some_and(|&prev| card >= prev)
                {
                    card = card.saturating_add(1);
                }
            }
            hand.push(usize::try_from(card).unwrap_or(usize::MAX));
        }
        hand
    }
}
