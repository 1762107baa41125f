//! The input generator of kip's fuzz tests: a deterministic SplitMix64
//! generator and character/token mutations of KIP text. Shared by the
//! parser's fuzz test (`src/lang/tests/fuzz.rs`) and the fuzz run through SQL
//! (`tests/bin/reliability_fuzz.rs`), which differ only in their [`Options`].
//! No dependencies, so a run is reproducible from its seed.

/// SplitMix64: small, fast, and the same sequence everywhere.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// How a generator mutates.
pub struct Options<'a> {
    /// Tokens inserted and substituted (keywords, punctuation, literals).
    pub tokens: &'a [&'a str],
    /// Size of the slice of a long seed that gets mutated: capsules are up
    /// to tens of KB, and mutating a window keeps a run fast while still
    /// reaching every part of every seed.
    pub window: usize,
    /// Whether a random character may be NUL. Postgres refuses NUL in
    /// `text` before a call reaches kip, so the SQL-level fuzz excludes it.
    pub allow_nul: bool,
}

/// One to five random mutations of `seed`: deletions, inserted punctuation,
/// swaps, inserted or substituted tokens, duplicated slices, truncation,
/// deep nesting of one bracket kind (or a long `!` run), random characters.
pub fn mutate(rng: &mut Rng, seed: &str, opts: &Options) -> String {
    let mut chars: Vec<char> = seed.chars().collect();
    let window = opts.window.max(1);
    if chars.len() > 1500 || (chars.len() > 2 * window && rng.below(4) != 0) {
        let start = rng.below(chars.len() - window);
        chars = chars[start..start + window].to_vec();
    }
    for _ in 0..=rng.below(4) {
        let len = chars.len();
        let at = rng.below(len + 1);
        match rng.below(9) {
            0 if len > 0 => {
                let end = (at + 1 + rng.below(8)).min(len);
                chars.drain(at.min(len)..end.max(at.min(len)));
            }
            1 => {
                let c = *rng.pick(&['(', ')', '{', '}', '[', ']', ',', ':', '?', '"', '!', '|', '.', '\\', '/', ' ', '\n', 'a', '1', 'é']);
                chars.insert(at, c);
            }
            2 if len > 1 => {
                let b = rng.below(len);
                chars.swap(at.min(len - 1), b);
            }
            3 => {
                let t = rng.pick(opts.tokens);
                chars.splice(at..at, t.chars());
            }
            4 if len > 0 => {
                // Duplicate a slice.
                let end = (at + rng.below(40)).min(len);
                let slice: Vec<char> = chars[at.min(len)..end.max(at.min(len))].to_vec();
                chars.splice(at..at, slice);
            }
            5 => chars.truncate(at),
            6 => {
                let c = *rng.pick(&['(', '[', '{', '!']);
                let n = *rng.pick(&[63, 64, 65, 100, 1000, 10_000]);
                chars.splice(at..at, std::iter::repeat_n(c, n));
            }
            7 => {
                // Replace a word by a random token.
                let t: Vec<char> = rng.pick(opts.tokens).chars().collect();
                let end = (at..len).find(|&i| !chars[i].is_alphanumeric()).unwrap_or(len);
                chars.splice(at..end, t);
            }
            _ => {
                let first = if opts.allow_nul { 0 } else { 1 };
                let c = char::from_u32(first + rng.below(0x3000) as u32).unwrap_or('x');
                chars.insert(at, c);
            }
        }
    }
    chars.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_nul_free_when_asked() {
        let opts = Options { tokens: &["FIND", "?x"], window: 50, allow_nul: false };
        let a: Vec<String> = (0..200).map(|i| mutate(&mut Rng(i), "FIND(?x) WHERE { ?x {type: \"T\"} }", &opts)).collect();
        let b: Vec<String> = (0..200).map(|i| mutate(&mut Rng(i), "FIND(?x) WHERE { ?x {type: \"T\"} }", &opts)).collect();
        assert_eq!(a, b);
        assert!(a.iter().all(|s| !s.contains('\0')));
        let long = "x".repeat(5000);
        assert!(mutate(&mut Rng(7), &long, &opts).chars().count() < 5000);
    }
}
