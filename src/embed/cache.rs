//! A small per-backend cache of recent query vectors: an agent often repeats
//! a SEARCH term (paging, re-ranking, retries), and embedding is the most
//! expensive step of a semantic query.

use std::cell::RefCell;
use std::collections::VecDeque;

/// Terms remembered per backend (least recently used first out).
const CAPACITY: usize = 64;

thread_local! {
    static RECENT: RefCell<VecDeque<(String, Vec<f32>)>> = const { RefCell::new(VecDeque::new()) };
}

pub fn get(term: &str) -> Option<Vec<f32>> {
    RECENT.with(|r| {
        let mut r = r.borrow_mut();
        let at = r.iter().position(|(t, _)| t == term)?;
        let hit = r.remove(at)?;
        let v = hit.1.clone();
        r.push_back(hit);
        Some(v)
    })
}

pub fn put(term: &str, vector: Vec<f32>) {
    RECENT.with(|r| {
        let mut r = r.borrow_mut();
        if r.len() >= CAPACITY {
            r.pop_front();
        }
        r.push_back((term.to_string(), vector));
    })
}
